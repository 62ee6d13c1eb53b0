"""Writing checkpoints: a model-written handoff note, or a deterministic one.

The model summarizer runs the ordered rounds :func:`~harness.summary_input.pack_rounds`
produced, each round updating the note of the previous one. Every output is validated
(all sections present and non-empty, not cut off, within its size limit, smaller than what
it replaces); a malformed output gets exactly one repair request, and a second failure (or
any exception from the model) raises :class:`SummaryError` so the caller can leave the
context untouched.

A model opts out of summarizing with ``supports_summaries = False`` (the offline planner
does: it plans robot actions and cannot write prose), read by
:func:`harness.providers.base.can_summarize`. The deterministic checkpoint is used then,
and as the fallback when the model keeps failing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.cancel import Cancelled, call_cancellable
from harness.context import bounded_text
from harness.context.summary_input import Round, SummaryInput
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    ModelRequest,
    ModelResponse,
    RevisionItem,
    SystemBlock,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
    Usage,
)
from harness.providers.base import Model, complete
from harness.tokens import TokenEstimator

__all__ = [
    "SUMMARY_SECTIONS",
    "SUMMARY_SYSTEM_PROMPT",
    "ModelSummarizer",
    "SummaryError",
    "SummaryResult",
    "deterministic_checkpoint",
    "validate_summary",
]

SUMMARY_SECTIONS: tuple[str, ...] = ("Objective", "Progress", "Evidence", "Failures", "Open work")

SUMMARY_SYSTEM_PROMPT = """\
You are writing a handoff note for an agent that controls a robot through tools. Its older
conversation is about to be removed from its context. After this, the agent keeps only your
note, its current Task Notes and its last few turns, and must carry on the same work without
asking anyone what happened. Write what it needs in order to act correctly next. Do not
retell the conversation.

Answer with exactly these five markdown headings, in this order. Put content under each one
(write "none" if a section has nothing to say):

## Objective
The operator's goal and every constraint, preference or revision that still applies.
## Progress
What has been completed and verified, and what is under way right now.
## Evidence
Facts established by tools that later steps depend on: object ids, poses and coordinates,
grasp and placement outcomes, measured values, error codes, and archive:// addresses of
outputs worth re-reading. Copy identifiers and numbers character for character.
## Failures
Actions that failed or were blocked, the reason given, and what that rules out.
## Open work
What remains, open questions, and the next sensible action.

Rules: short bullet points; no invented facts; no tool calls; no greetings or commentary.
Drop repeated observations and anything superseded. If an earlier handoff note is given,
produce one updated note: keep what still holds, correct what changed, add what is new.
"""

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(?P<name>[A-Za-z ]+?)\s*:?\s*#*\s*$")
_FENCE = re.compile(r"^```[\w-]*\n(?P<body>.*)\n```\s*$", re.DOTALL)


class SummaryError(Exception):
    """The summarizer could not produce a valid checkpoint (the context stays unchanged)."""

    def __init__(self, reason: str, *, usage: Usage | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage or Usage()


@dataclass
class SummaryResult:
    text: str
    rounds: int
    repairs: int = 0
    usage: Usage = field(default_factory=Usage)


def _strip_fence(text: str) -> str:
    text = text.strip()
    match = _FENCE.match(text)
    return match.group("body").strip() if match else text


def _sections(text: str) -> dict[str, str]:
    """Section name (lower case) -> its content, for the required headings found."""
    wanted = {name.lower() for name in SUMMARY_SECTIONS}
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        match = _HEADING.match(line)
        name = match.group("name").strip().lower() if match else None
        if name in wanted:
            current = name
            found.setdefault(name, [])
        elif current is not None:
            found[current].append(line)
    return {name: "\n".join(lines).strip() for name, lines in found.items()}


def validate_summary(
    response: ModelResponse,
    *,
    estimator: TokenEstimator,
    max_tokens: int,
    replaced_tokens: int,
) -> list[str]:
    """Everything wrong with a summarizer response (empty list: usable)."""
    problems: list[str] = []
    if response.tool_calls:
        problems.append("it called a tool; answer with the note as plain text")
    if response.stop_reason in {"max_tokens", "length"}:
        problems.append("it was cut off at the output limit; write a shorter note")
    text = _strip_fence(response.text)
    if not text:
        return [*problems, "the note is empty"]
    sections = _sections(text)
    missing = [name for name in SUMMARY_SECTIONS if name.lower() not in sections]
    if missing:
        problems.append("missing sections: " + ", ".join(f"## {name}" for name in missing))
    empty = [name for name in SUMMARY_SECTIONS if sections.get(name.lower()) == ""]
    if empty:
        problems.append("empty sections (write 'none' instead): " + ", ".join(empty))
    tokens = estimator.text(text)
    if tokens > max_tokens:
        problems.append(f"it is too long: about {tokens} tokens, the limit is {max_tokens}")
    if tokens >= replaced_tokens:
        problems.append(
            f"it is not smaller than what it replaces (about {tokens} tokens vs {replaced_tokens})"
        )
    return problems


class ModelSummarizer:
    """Folds ordered rounds of history into one handoff note with a model.

    ``cancelled`` is the operator's cancel: each call is watched
    (:func:`harness.cancel.call_cancellable`), so a cancel ends the summary within
    ``POLL_S`` with :class:`~harness.cancel.Cancelled` (carrying the usage so far) instead
    of running the remaining rounds.
    """

    def __init__(
        self,
        model: Model,
        *,
        max_tokens: int,
        estimator: TokenEstimator,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.estimator = estimator
        self.cancelled = cancelled

    @property
    def name(self) -> str:
        return str(getattr(self.model, "name", type(self.model).__name__))

    def summarize(
        self,
        rounds: Sequence[Round],
        *,
        previous: str,
        round_tokens: Sequence[int],
    ) -> SummaryResult:
        """Run every round in order; ``round_tokens[i]`` is what round ``i`` folds away.

        Raises :class:`SummaryError` when a round fails twice or the model raises, and
        :class:`~harness.cancel.Cancelled` when the operator cancels.
        """
        note = previous
        previous_tokens = self.estimator.text(previous)
        result = SummaryResult(text=previous, rounds=len(rounds))
        try:
            for index, round_ in enumerate(rounds):
                prompt = self._round_prompt(round_, previous=note, index=index, total=len(rounds))
                replaced = previous_tokens + round_tokens[index]
                response, problems = self._ask(prompt, replaced, result)
                if problems:
                    result.repairs += 1
                    repair = self._repair_prompt(prompt, response.text, problems)
                    response, problems = self._ask(repair, replaced, result)
                    if problems:
                        raise SummaryError(
                            f"round {index + 1} of {len(rounds)}: the summary was still "
                            f"malformed after one repair ({'; '.join(problems)})"
                        )
                note = _strip_fence(response.text)
                previous_tokens = self.estimator.text(note)
        except (SummaryError, Cancelled) as exc:
            exc.usage = result.usage
            raise
        result.text = note
        return result

    def _ask(
        self, prompt: str, replaced_tokens: int, result: SummaryResult
    ) -> tuple[ModelResponse, list[str]]:
        request = ModelRequest(
            system=[SystemBlock(name="summarizer", text=SUMMARY_SYSTEM_PROMPT)],
            items=[InstructionItem(text=prompt)],
            max_output_tokens=self.max_tokens,
            purpose="summarize",
        )
        try:
            response = call_cancellable(
                lambda cancelled: complete(self.model, request, cancelled=cancelled),
                cancelled=self.cancelled,
                what=f"the summarizer call ({self.name})",
            )
        except Exception as exc:
            raise SummaryError(
                f"summarizer {self.name!r} raised {type(exc).__name__}: {exc}"
            ) from exc
        result.usage = result.usage + response.usage
        problems = validate_summary(
            response,
            estimator=self.estimator,
            max_tokens=self.max_tokens,
            replaced_tokens=replaced_tokens,
        )
        return response, problems

    def _round_prompt(self, round_: Round, *, previous: str, index: int, total: int) -> str:
        parts = []
        if previous:
            parts.append(
                "Earlier handoff note (it covers everything before the history below):\n"
                f"<<<\n{previous}\n>>>"
            )
        label = f"part {index + 1} of {total}" if total > 1 else "the whole span"
        parts.append(
            f"History to fold into the note ({label}, oldest first):\n<<<\n{round_.text}\n>>>"
        )
        parts.append(
            "Write the "
            + ("updated " if previous else "")
            + "handoff note now, with the five headings, in at most about "
            + f"{self.max_tokens * 3 // 4} tokens."
        )
        return "\n\n".join(parts)

    def _repair_prompt(self, prompt: str, bad: str, problems: list[str]) -> str:
        limit = max(400, self.max_tokens * 4)
        shown = bad if len(bad) <= limit else bounded_text(bad, limit, address=None)[0]
        return (
            f"{prompt}\n\nA previous answer to this request could not be used because "
            + "; ".join(problems)
            + f".\nThat answer was:\n<<<\n{shown}\n>>>\n"
            "Write a corrected handoff note that fixes every problem listed."
        )


# --------------------------------------------------------------------------- deterministic

EXCHANGE_LINE_MAX_CHARS = 240
INSTRUCTION_MAX_CHARS = 800
NOTES_MAX_CHARS = 2000
REPORT_MAX_CHARS = 800
COLLAPSED_LINE_MAX_CHARS = 600
COLLAPSED_FAILURES = 3
EARLIER_CHECKPOINT_SHARE = 0.35
"""An earlier checkpoint may take at most this share of a deterministic checkpoint."""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 3)] + "..."


def _exchange_line(call: ToolCall | None, result: ToolResultItem, clean: SummaryInput) -> str:
    if call is not None:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True, default=str)
        head = f"{result.name}({_one_line(clean.clean(arguments), 80)})"
    else:
        head = result.name
    if result.evaluation is not None:
        outcome = result.evaluation.status
        if result.evaluation.evidence:
            outcome += f" ({_one_line(clean.clean(result.evaluation.evidence), 80)})"
    elif result.is_error:
        outcome = f"error {result.error_kind or ''}: {_one_line(clean.clean(result.text), 100)}"
    else:
        outcome = f"ok: {_one_line(clean.clean(result.text), 100)}"
    where = f"; {result.archive}" if result.archive else ""
    line = f"- {result.task_id or 'session'} t{result.turn} {head} -> {outcome}{where}"
    return _one_line(line, EXCHANGE_LINE_MAX_CHARS + len(where))


def _failed(result: ToolResultItem) -> bool:
    return result.is_error or (
        result.evaluation is not None and result.evaluation.status == "failure"
    )


def _collapsed(results: Sequence[ToolResultItem]) -> str:
    """Older exchanges as counts per tool when their lines do not fit; the most recent
    failures keep their address, since what failed and why is what a handoff needs most."""
    per_tool: dict[str, list[int]] = {}
    for result in results:
        counts = per_tool.setdefault(result.name, [0, 0])
        counts[int(_failed(result))] += 1
    detail = ", ".join(
        f"{name} x{ok + bad} ({ok} ok, {bad} failed)" for name, (ok, bad) in per_tool.items()
    )
    first, last = results[0], results[-1]
    line = (
        f"- {len(results)} earlier exchanges ({first.task_id or 'session'} t{first.turn} to "
        f"{last.task_id or 'session'} t{last.turn}), exact outputs in the archive: {detail}"
    )
    failures = [result for result in results if _failed(result)][-COLLAPSED_FAILURES:]
    if failures:
        line += "; latest failures: " + ", ".join(
            f"{r.task_id or 'session'} t{r.turn} {r.name} "
            f"({r.error_kind or (r.evaluation.status if r.evaluation else 'error')}) {r.archive}"
            for r in failures
        )
    return _one_line(line, COLLAPSED_LINE_MAX_CHARS)


def deterministic_checkpoint(
    folded: Sequence[Item],
    *,
    owner: CheckpointItem,
    header: str,
    clean: SummaryInput,
    max_chars: int,
) -> str:
    """A checkpoint built without a model: earlier checkpoints, instructions, the last Task
    Notes of each task, one line per tool exchange (outcome and archive address) and the
    last report.

    The text stays within ``max_chars``: the oldest exchange lines collapse into counts
    first; only as a last resort is the whole note cut to head+tail, after archiving it
    under the address of ``owner`` (the checkpoint item it will become).
    """
    instructions: list[str] = []
    notes: dict[str, TaskNotesItem] = {}
    calls: dict[str, ToolCall] = {}
    results: list[ToolResultItem] = []
    earlier: list[CheckpointItem] = []
    report = report_task = ""
    report_is_progress = True
    for item in folded:
        if isinstance(item, InstructionItem):
            images = "".join(" " + ref.placeholder() for ref in item.images)
            text = clean.bounded(item, clean.clean(item.text), INSTRUCTION_MAX_CHARS)
            instructions.append(f"- {item.task_id or 'session'}: {text}{images}")
        elif isinstance(item, RevisionItem):
            text = clean.bounded(item, clean.clean(item.text), INSTRUCTION_MAX_CHARS)
            instructions.append(f"  - revised at t{item.turn}: {text}")
        elif isinstance(item, TaskNotesItem):
            notes[item.task_id] = item
        elif isinstance(item, AssistantItem):
            for call in item.tool_calls:
                calls[call.id] = call
            # A final answer (no tool call) is a task report; otherwise the latest text.
            if item.text and (not item.tool_calls or report_is_progress):
                report = clean.bounded(item, clean.clean(item.text), REPORT_MAX_CHARS, "text")
                report_task = item.task_id
                report_is_progress = bool(item.tool_calls)
        elif isinstance(item, ToolResultItem):
            results.append(item)
        elif isinstance(item, CheckpointItem):
            earlier.append(item)

    before: list[str] = [header]
    if earlier:
        share = max(200, int(max_chars * EARLIER_CHECKPOINT_SHARE) // len(earlier))
        body = "\n\n".join(clean.bounded(cp, cp.text, share) for cp in earlier)
        before.append("## Earlier checkpoint\n" + body)
    if instructions:
        before.append("## Instructions\n" + "\n".join(instructions))
    for task_id, snapshot in notes.items():
        text = clean.bounded(snapshot, clean.clean(snapshot.text), NOTES_MAX_CHARS)
        before.append(f"## Task notes ({task_id or 'session'}, v{snapshot.version})\n{text}")
    heading = "Last report" if not report_is_progress else "Last model message"
    after = [f"## {heading} ({report_task or 'session'})\n{report}"] if report else []

    lines = [_exchange_line(calls.get(result.call_id), result, clean) for result in results]
    room = max_chars - sum(len(part) + 2 for part in (*before, *after)) - 40
    room -= COLLAPSED_LINE_MAX_CHARS + 1
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > room:
            break
        kept.append(line)
        used += len(line) + 1
    kept.reverse()
    if len(kept) < len(results):
        kept.insert(0, _collapsed(results[: len(results) - len(kept)]))
    exchanges = ["## Tool exchanges\n" + "\n".join(kept)] if kept else []
    text = "\n\n".join([*before, *exchanges, *after])
    return clean.bounded(owner, text, max_chars)
