"""One deterministic summarizer shared by every policy that summarizes.

Comparing context policies with a real LLM summarizer would measure the LLM as much as
the policy, and would not be reproducible. This extractive stand-in writes a handoff note
of bounded size in the project's summary format (the five headed sections the harness
asks its summarizer for), from *records*: the task instruction, tool results and the
previous note (the model's own narration, Task Notes and notices are not summarized):

- Objective: the instruction's first line;
- Progress / Failures: the first line of every tool result (a failure if it says failed,
  error or fault), which is the headline a model would most likely keep;
- Evidence: the ``archive://`` address of every output that is not whole in front of it,
  i.e. cut to head and tail or pruned to a reference (the harness's markers for both say
  ``recall(address=...)``; those are the outputs worth re-reading that the note cannot
  hold), or with ``keep_addresses="all"`` every address seen, or with ``"none"`` no
  address at all, as a hurried model writes (baselines have no addresses to keep either
  way);
- bullets of the previous note are carried over; over budget, the oldest bullets go first.

Facts buried inside a long output are therefore lost by summarizing, as they often are
with a real model, and facts in a headline survive.

It can also fail, deterministically: call number ``n`` fails when a seeded hash of ``n``
falls under ``failure_rate``. Through :meth:`DeterministicSummarizer.as_model` (how the
real Harness reaches it, as its ``compaction_model``) failures alternate between a
transient provider error and an empty, malformed answer.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.context.compaction.summarizer import SUMMARY_SECTIONS
from harness.errors import TransientModelError
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    ModelRequest,
    ModelResponse,
    ToolResultItem,
    Usage,
)
from harness.providers.scripted import ScriptedModel
from harness.tokens import TokenEstimator

__all__ = [
    "ADDRESS_PATTERN",
    "SECTIONS",
    "DeterministicSummarizer",
    "SummaryFailedError",
    "records_from_prompt",
    "render_item",
]

SECTIONS = SUMMARY_SECTIONS
"""The handoff note's headings, in order: the harness's own summary format."""
ADDRESS_PATTERN = re.compile(r"archive://[A-Za-z0-9_./\-]+[A-Za-z0-9_]")
HEADLINE_CHARS = 160
BULLET_CHARS = 240
_FAILURE = re.compile(r"\b(fail\w*|error\w*|fault\w*|blocked|outside)\b", re.IGNORECASE)
_INSTRUCTION = "instruction: "
_RESULT = re.compile(r"^(?P<tool>[\w.\-]+) result: ")
_RECALL = re.compile(r"recall\(address='(archive://[^']+)'\)")
"""How the harness points at an output that is not whole in the text: the marker of
:func:`harness.context.bounded_text` (cut to head+tail) and a pruned output's reference."""
_HEADING = re.compile(r"^#{1,6}\s*(?P<name>[A-Za-z ]+?)\s*$")


class SummaryFailedError(Exception):
    """The summarizer failed on purpose (an injected failure)."""


def render_item(item: Item) -> str:
    """One conversation item as a record (the first line after the label is the headline)."""
    if isinstance(item, ToolResultItem):
        return f"{item.name} result: {item.text}"
    if isinstance(item, InstructionItem):
        return f"{_INSTRUCTION}{item.text}"
    if isinstance(item, CheckpointItem):
        return item.text
    if isinstance(item, AssistantItem):
        calls = "; ".join(f"{c.name} {c.arguments}" for c in item.tool_calls)
        return f"assistant: {item.text} -> {calls}"
    return f"{item.kind}: {item.text}"


# The harness's summarizer input (harness/summary_input.py, harness/summarizer.py): blocks
# that start with "[<task> t<turn>] LABEL", inside "<<<" ... ">>>" fences, the earlier note
# in the first fence.
_BLOCK = re.compile(r"^\[[^\]\n]+ t\d+\] (?P<label>[A-Z][A-Z ]+?)(?: of (?P<tool>[\w.\-]+))?\b")
_FENCED = re.compile(r"<<<\n(?P<body>.*?)\n>>>", re.DOTALL)


def records_from_prompt(text: str) -> list[str]:
    """Records from the Harness's summarization request, in :func:`render_item` form."""
    records: list[str] = []
    fences = [match.group("body") for match in _FENCED.finditer(text)]
    if "handoff note" in text.split("<<<", 1)[0] and fences:
        records.append(fences.pop(0))
    for body in fences:
        blocks: list[tuple[re.Match[str], list[str]]] = []
        for line in body.split("\n"):
            match = _BLOCK.match(line)
            if match:
                blocks.append((match, [line]))
            elif blocks:
                blocks[-1][1].append(line)
        for match, lines in blocks:
            label, head = match.group("label"), lines[0][match.end() :]
            if label == "RESULT" and match.group("tool"):
                body_text = "\n".join(lines[1:])
                where = "".join(f"\n(exact output: {a})" for a in ADDRESS_PATTERN.findall(head))
                records.append(f"{match.group('tool')} result: {body_text}{where}")
            elif label == "USER INSTRUCTION":
                records.append(_INSTRUCTION + head.removeprefix(":").strip())
            elif label == "EARLIER CHECKPOINT":
                records.append("\n".join(lines[1:]))
    return records


@dataclass
class DeterministicSummarizer:
    """Extractive, bounded, seeded-failing summarizer (see the module docstring)."""

    estimator: TokenEstimator
    max_tokens: int = 1500
    failure_rate: float = 0.0
    seed: int = 0
    keep_addresses: Literal["cut", "all", "none"] = "cut"
    """Which archive addresses go to Evidence: those of outputs that are not whole (cut or
    pruned; the default), every one seen, or none."""
    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    """Tokens of every input it was given (what a summarizer model would bill)."""
    failure_calls: list[int] = field(default_factory=list)

    # ------------------------------------------------------------------ the function

    def summarize(self, records: Sequence[str]) -> str:
        """Summarize ``records`` (oldest first); raises :class:`SummaryFailedError` when
        this call is one of the injected failures."""
        self.calls += 1
        self.input_tokens += sum(self.estimator.text(record) for record in records)
        if self._fails(self.calls):
            self.failures += 1
            self.failure_calls.append(self.calls)
            raise SummaryFailedError(f"injected summarizer failure on call {self.calls}")
        return self._extract(records)

    def _fails(self, call: int) -> bool:
        if self.failure_rate <= 0:
            return False
        digest = hashlib.sha256(f"{self.seed}:{call}".encode()).digest()
        return int.from_bytes(digest[:4], "big") / 2**32 < self.failure_rate

    def _extract(self, records: Sequence[str]) -> str:
        bullets: list[tuple[str, str]] = []
        seen: set[str] = set()

        def keep(section: str, line: str, limit: int) -> None:
            if self.keep_addresses == "none":  # not even the ones a previous note carried
                line = ADDRESS_PATTERN.sub("(address omitted)", line)
            line = " ".join(line.split())
            if len(line) > limit:
                line = line[: limit - 3] + "..."
            if line and line not in seen:
                seen.add(line)
                bullets.append((section, line))

        for record in records:
            if _is_note(record):
                for section, line in _note_bullets(record):
                    keep(section, line, BULLET_CHARS)
                continue
            if record.startswith(_INSTRUCTION):
                keep("Objective", record.split("\n", 1)[0], HEADLINE_CHARS)
                continue
            match = _RESULT.match(record)
            if match is None:
                continue
            headline = record.split("\n", 1)[0]
            keep("Failures" if _FAILURE.search(headline) else "Progress", headline, HEADLINE_CHARS)
            if self.keep_addresses == "none":
                addresses = []
            elif self.keep_addresses == "all":
                addresses = ADDRESS_PATTERN.findall(record)
            else:
                addresses = _RECALL.findall(record)
            for address in addresses:
                keep("Evidence", f"exact output of {match.group('tool')}: {address}", BULLET_CHARS)
        while bullets and self._tokens(bullets) > self.max_tokens:
            oldest = next((i for i, (name, _) in enumerate(bullets) if name != SECTIONS[0]), 0)
            bullets.pop(oldest)
        return _render(bullets)

    def _tokens(self, bullets: list[tuple[str, str]]) -> int:
        return self.estimator.text(_render(bullets))

    # ------------------------------------------------------------------ as a model

    def as_model(self, *, count: Callable[[ModelRequest], int]) -> ScriptedModel:
        """This summarizer as the Harness's ``compaction_model``.

        ``count`` measures each summarization request with the benchmark's token meter
        (reported as the call's usage).
        """

        def respond(request: ModelRequest) -> ModelResponse:
            prompt = "\n".join(item.text for item in request.items if hasattr(item, "text"))
            try:
                text = self.summarize(records_from_prompt(prompt))
            except SummaryFailedError as exc:
                if self.failures % 2:
                    raise TransientModelError(str(exc)) from None
                text = ""
            usage = Usage(
                input_tokens=count(request),
                output_tokens=self.estimator.text(text),
                requests=1,
            )
            return ModelResponse(text=text, usage=usage)

        return ScriptedModel(
            responder=respond,
            name="deterministic-summarizer",
            image_cost=self.estimator.image_cost,
        )


def _is_note(record: str) -> bool:
    """A handoff note (ours, or the harness's deterministic checkpoint): it has headings."""
    return any(_HEADING.match(line.strip()) for line in record.split("\n"))


def _note_bullets(note: str) -> list[tuple[str, str]]:
    """A note's bullets under the matching section (an "Instructions" heading counts as the
    objective; headings the format does not know count as progress)."""
    section = ""
    bullets = []
    for line in note.split("\n"):
        heading = _HEADING.match(line.strip())
        if heading:
            name = heading.group("name").strip()
            if name in SECTIONS:
                section = name
            elif name.lower().startswith("instruction"):
                section = SECTIONS[0]
            else:
                section = SECTIONS[1]
        elif section and line.lstrip().startswith("- "):
            bullets.append((section, line.lstrip()[2:]))
    return bullets


def _render(bullets: list[tuple[str, str]]) -> str:
    parts = []
    for section in SECTIONS:
        lines = [f"- {line}" for name, line in bullets if name == section]
        parts.append(f"## {section}\n" + ("\n".join(lines) if lines else "none"))
    return "\n".join(parts)
