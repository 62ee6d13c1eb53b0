"""The published context policies the project is compared against, re-implemented.

Each baseline sees the same trace through the same request layout the Harness uses
(Resident system blocks and tool definitions first, then conversation items, then the
current Brief, observation text and camera image), the same window and reserve, the same
token estimator and the same deterministic summarizer. What differs is only what each
policy does to the conversation before a request. Parameters come from the cited source;
where a source leaves a choice open, the choice and why is written next to it.

- ``full``: nothing is removed (requests over the window are counted, as a provider would
  reject them).
- ``truncate``: LangChain ``trim_messages(strategy="last", include_system=True,
  allow_partial=False, end_on=("human", "tool"))`` with ``max_tokens`` = window - reserve
  - (tools, system, observation), applied before every call as a LangGraph pre-model hook
  does. ``start_on`` is ``("human", "ai")``: the documentation's ``start_on="human"``
  would empty a tool-driven history (it has one human message, the instruction) as soon
  as the instruction is trimmed; starting on an AI message is the nearest setting that
  still never leaves a tool result without its call.
- ``masking``: SWE-agent's ``LastNObservations`` with n = 10 as evaluated in "The
  Complexity Trap" (Lindenbauer et al., 2025, arXiv:2508.21433): every tool output but
  the 10 most recent is replaced by ``Old environment output: (N lines omitted)``;
  actions and the instruction are kept; no summarizer.
- ``summarize_half``: the OpenHands SDK ``LLMSummarizingCondenser`` (``max_size=120``
  events, ``keep_first=4``, ``max_tokens`` = window - reserve): when over budget it
  forgets the older half of the view (the condensation-request path, target =
  len(view) // 2; over ``max_size`` events, target = max_size // 2), summarizes the
  forgotten events with the previous summary into one summary event placed after the
  first ``keep_first`` events, and, as its ``View`` does, drops tool calls and results
  left unmatched.
- ``brief_in_system``: the specification's checkpoint compaction (trigger at window -
  reserve; retained tail of at most ``keep_recent_turns=4`` whole turns and
  ``keep_recent_tokens=20000``; tool results bounded to ``tool_result_max_chars=2000``
  head+tail in the summarizer input; rounds of ``max_input_chars=400000``; a failed
  summary leaves the context unchanged) in the layout of the public Thea harness, where
  the scene Brief is part of the system message, so the prompt prefix changes every turn.

On a failed summary every summarizing baseline leaves its context unchanged and tries
again at the next turn (the published implementations raise instead; continuing is the
kinder reading).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from benchmarks.lib.metering import RequestMeter, unmatched_tool_items
from benchmarks.lib.metrics import FAILED_SUMMARY, PolicyRun
from benchmarks.lib.replay import ReferencePrefix, TraceFrames, call_id_for
from benchmarks.lib.session_trace import Trace
from benchmarks.lib.summarizer import DeterministicSummarizer, SummaryFailedError, render_item
from harness.context import Budget, bounded_text
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    CheckpointSource,
    InstructionItem,
    Item,
    ModelRequest,
    RefreshedBlock,
    SystemBlock,
    ToolCall,
    ToolResultItem,
)

__all__ = [
    "BASELINES",
    "Baseline",
    "BriefInSystem",
    "Full",
    "Masking",
    "SummarizeHalf",
    "Truncate",
    "simulate",
]


class Baseline(ABC):
    """A context policy: given the whole history, what to send this turn."""

    name: ClassVar[str]
    source: ClassVar[str]

    def __init__(
        self, *, budget: Budget, meter: RequestMeter, summarizer: DeterministicSummarizer
    ) -> None:
        self.budget = budget
        self.meter = meter
        self.summarizer = summarizer

    def layout(
        self, system: list[SystemBlock], refreshed: RefreshedBlock
    ) -> tuple[list[SystemBlock], RefreshedBlock]:
        """Where the Brief and observation go (the Harness's layout by default)."""
        return system, refreshed

    @abstractmethod
    def view(self, history: list[Item], fixed_tokens: int) -> tuple[list[Item], list[str]]:
        """The conversation items to send, and the actions taken to produce them.

        ``history`` is the complete, append-only log; ``fixed_tokens`` is everything in
        the request that is not a conversation item (tools, system, refreshed).
        """

    def tokens(self, items: list[Item]) -> int:
        return sum(self.meter.item_tokens(item) for item in items)

    def uses_summarizer(self) -> bool:
        return False


class Full(Baseline):
    name = "full"
    source = "no compaction: every item is sent (requests over the window are counted)"

    def view(self, history: list[Item], fixed_tokens: int) -> tuple[list[Item], list[str]]:
        return list(history), []


class Truncate(Baseline):
    name = "truncate"
    source = (
        'LangChain trim_messages(strategy="last", include_system=True, allow_partial=False, '
        'start_on=("human","ai"), end_on=("human","tool")), max_tokens = window - reserve'
    )

    def view(self, history: list[Item], fixed_tokens: int) -> tuple[list[Item], list[str]]:
        end = len(history)
        while end and not isinstance(history[end - 1], (InstructionItem, ToolResultItem)):
            end -= 1  # end_on=("human", "tool"): applied before trimming
        limit = self.budget.threshold - fixed_tokens
        kept: list[Item] = []
        used = 0
        for item in reversed(history[:end]):
            tokens = self.meter.item_tokens(item)
            if used + tokens > limit:
                break
            kept.append(item)
            used += tokens
        kept.reverse()
        while kept and not isinstance(kept[0], (InstructionItem, AssistantItem)):
            kept.pop(0)  # start_on=("human", "ai"): applied after trimming
        actions = ["trim"] if len(kept) < len(history) else []
        return kept, actions


class Masking(Baseline):
    name = "masking"
    source = (
        'SWE-agent LastNObservations, n=10 as in "The Complexity Trap" (Lindenbauer et al., '
        "2025): older tool outputs -> 'Old environment output: (N lines omitted)'"
    )
    keep_last = 10

    def __init__(self, **parts: Any) -> None:
        super().__init__(**parts)
        self._masked: dict[str, ToolResultItem] = {}

    def view(self, history: list[Item], fixed_tokens: int) -> tuple[list[Item], list[str]]:
        results = [i for i, item in enumerate(history) if isinstance(item, ToolResultItem)]
        to_mask = set(results[: max(0, len(results) - self.keep_last)])
        newly = 0
        items: list[Item] = []
        for index, item in enumerate(history):
            if index in to_mask:
                assert isinstance(item, ToolResultItem)
                placeholder = self._masked.get(item.id)
                if placeholder is None:
                    lines = item.text.count("\n") + 1
                    placeholder = ToolResultItem(
                        call_id=item.call_id,
                        name=item.name,
                        text=f"Old environment output: ({lines} lines omitted)",
                        is_error=item.is_error,
                        turn=item.turn,
                    )
                    self._masked[item.id] = placeholder
                    newly += 1
                items.append(placeholder)
            else:
                items.append(item)
        return items, ["mask"] * newly


class SummarizeHalf(Baseline):
    name = "summarize_half"
    source = (
        "OpenHands SDK LLMSummarizingCondenser(max_size=120, keep_first=4, "
        "max_tokens=window - reserve): over budget, the older half of the view is summarized"
    )
    max_size = 120
    keep_first = 4

    def __init__(self, **parts: Any) -> None:
        super().__init__(**parts)
        self._summary: CheckpointItem | None = None
        self._cut = 0
        """History index where the verbatim tail starts (after the head and summary)."""

    def uses_summarizer(self) -> bool:
        return True

    def _view(self, history: list[Item]) -> list[Item]:
        head = history[: self.keep_first]
        tail = history[max(self._cut, self.keep_first) :]
        return [*head, *([self._summary] if self._summary else []), *tail]

    def view(self, history: list[Item], fixed_tokens: int) -> tuple[list[Item], list[str]]:
        actions: list[str] = []
        view = self._view(history)
        over_tokens = fixed_tokens + self.tokens(view) > self.budget.threshold
        if over_tokens or len(view) > self.max_size:
            target = len(view) // 2 if over_tokens else self.max_size // 2
            from_tail = target - self.keep_first - 1
            tail_start = len(history) - from_tail
            start = max(self._cut, self.keep_first)
            forgotten = history[start:tail_start] if from_tail > 0 else []
            if forgotten:
                records = [self._summary.text] if self._summary else []
                records.extend(render_item(item) for item in forgotten)
                try:
                    text = self.summarizer.summarize(records)
                except SummaryFailedError:
                    actions.append(FAILED_SUMMARY)
                else:
                    self._summary = _checkpoint(text, forgotten, self._summary, rounds=1)
                    self._cut = tail_start
                    actions.append("condense")
                view = self._view(history)
        return _drop_unmatched(view), actions


class BriefInSystem(Baseline):
    name = "brief_in_system"
    source = (
        "the specification's checkpoint compaction (window - reserve trigger, tail <= 4 turns "
        "and 20000 tokens, tool results bounded to 2000 chars) with the Brief in the system "
        "message (the public Thea harness layout)"
    )
    keep_recent_turns = 4
    keep_recent_tokens = 20_000
    tool_result_max_chars = 2000
    max_input_chars = 400_000

    def __init__(self, **parts: Any) -> None:
        super().__init__(**parts)
        self._accumulated: list[Item] = []
        self._seen = 0

    def uses_summarizer(self) -> bool:
        return True

    def layout(
        self, system: list[SystemBlock], refreshed: RefreshedBlock
    ) -> tuple[list[SystemBlock], RefreshedBlock]:
        scene = SystemBlock(name="scene", text=refreshed.brief)
        return [*system, scene], RefreshedBlock(
            observation=refreshed.observation, images=refreshed.images
        )

    def view(self, history: list[Item], fixed_tokens: int) -> tuple[list[Item], list[str]]:
        self._accumulated.extend(history[self._seen :])
        self._seen = len(history)
        actions: list[str] = []
        if fixed_tokens + self.tokens(self._accumulated) >= self.budget.threshold:
            actions.append(self._compact())
        return list(self._accumulated), actions

    def _compact(self) -> str:
        items = self._accumulated
        turns = sorted({item.turn for item in items if not isinstance(item, CheckpointItem)})
        tail_turns: list[int] = []
        tail_tokens = 0
        for turn in reversed(turns):
            tokens = self.tokens([item for item in items if item.turn == turn])
            if len(tail_turns) >= self.keep_recent_turns:
                break
            if tail_tokens + tokens > self.keep_recent_tokens:
                break
            tail_turns.append(turn)
            tail_tokens += tokens
        keep = set(tail_turns)
        prefix = [i for i in items if isinstance(i, CheckpointItem) or i.turn not in keep]
        tail = [i for i in items if not isinstance(i, CheckpointItem) and i.turn in keep]
        previous = next((i for i in prefix if isinstance(i, CheckpointItem)), None)
        folded = [i for i in prefix if not isinstance(i, CheckpointItem)]
        if not folded:
            return "nothing_to_fold"  # the tail is every turn since the last checkpoint
        records = [self._bounded(item) for item in folded]
        summary = previous.text if previous else ""
        rounds = 0
        try:
            for chunk in _chunks(records, self.max_input_chars):
                rounds += 1
                summary = self.summarizer.summarize([summary, *chunk] if summary else chunk)
        except SummaryFailedError:
            return FAILED_SUMMARY
        self._accumulated = [_checkpoint(summary, folded, previous, rounds=rounds), *tail]
        return "checkpoint"

    def _bounded(self, item: Item) -> str:
        text = render_item(item)
        if isinstance(item, ToolResultItem):
            text, _ = bounded_text(text, self.tool_result_max_chars, address=None)
        return text


BASELINES: dict[str, type[Baseline]] = {
    policy.name: policy for policy in (Full, Truncate, Masking, SummarizeHalf, BriefInSystem)
}


# --------------------------------------------------------------------------- running


def simulate(
    policy: Baseline, trace: Trace, prefix: ReferencePrefix, frames: TraceFrames
) -> PolicyRun:
    """Run ``policy`` over ``trace``: one request per decision, in the Harness's layout.

    A session of several tasks is one conversation to a baseline: each task's instruction
    is appended when it starts, its final report when it ends."""
    run = PolicyRun(
        name=policy.name,
        source=policy.source,
        planned_requests=len(trace.turns),
        summarizer=policy.summarizer if policy.uses_summarizer() else None,
    )
    history: list[Item] = []
    for turn in trace.turns:
        task = trace.task_starting_at(turn.turn)
        if task is not None:  # a task starts: its instruction joins the conversation
            history.append(InstructionItem(text=task.instruction, turn=turn.turn - 1))
        system, refreshed = policy.layout(prefix.system, frames.refreshed(turn))
        fixed = policy.meter.total(
            ModelRequest(system=system, tools=prefix.tools, refreshed=refreshed)
        )
        items, actions = policy.view(history, fixed)
        run.requests.append(
            ModelRequest(system=system, tools=prefix.tools, items=items, refreshed=refreshed)
        )
        run.actions.append(actions)
        if turn.tool is None:  # the task's final report
            history.append(AssistantItem(text=turn.text, turn=turn.turn))
            continue
        call = ToolCall(id=call_id_for(turn.turn), name=turn.tool, arguments=turn.arguments)
        history.append(AssistantItem(text=turn.text, tool_calls=[call], turn=turn.turn))
        history.append(
            ToolResultItem(
                call_id=call.id,
                name=turn.tool,
                text=turn.output,
                is_error=turn.is_error,
                turn=turn.turn,
            )
        )
    return run


def _checkpoint(
    text: str, folded: list[Item], previous: CheckpointItem | None, *, rounds: int
) -> CheckpointItem:
    first = previous.source.first_turn if previous else min(i.turn for i in folded)
    return CheckpointItem(
        text=text,
        turn=max(i.turn for i in folded),
        source=CheckpointSource(
            first_turn=first,
            last_turn=max(i.turn for i in folded),
            task_ids=[],
            items_folded=len(folded),
            rounds=rounds,
            model="deterministic-summarizer",
            mode="summary",
            previous_checkpoint=previous.id if previous else None,
        ),
    )


def _drop_unmatched(items: list[Item]) -> list[Item]:
    """Remove tool calls without results and results without calls (OpenHands' View)."""
    calls, results = unmatched_tool_items(items)
    if not calls and not results:
        return items
    bad_calls, bad_results = set(calls), set(results)
    kept: list[Item] = []
    for item in items:
        if isinstance(item, AssistantItem) and any(c.id in bad_calls for c in item.tool_calls):
            continue
        if isinstance(item, ToolResultItem) and item.call_id in bad_results:
            continue
        kept.append(item)
    return kept


def _chunks(records: list[str], max_chars: int) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    size = 0
    for record in records:
        if chunks[-1] and size + len(record) > max_chars:
            chunks.append([])
            size = 0
        chunks[-1].append(record)
        size += len(record)
    return chunks
