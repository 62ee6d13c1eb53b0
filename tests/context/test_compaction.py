"""Checkpoint compaction, unit by unit: rounds, repeated folding, repair, failures,
fallback, shrinking and the named budget error (the compactor over a real Context)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from harness.config import CompactionConfig, HarnessConfig, PruningConfig
from harness.context import Budget
from harness.context.compaction.compactor import CheckpointCompactor, NoCompaction, build_compactor
from harness.errors import ContextBudgetError
from harness.events import CompactionEvent
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    ModelRequest,
    ModelResponse,
    ToolResultItem,
)
from harness.providers import ScriptedModel
from tests.histories import (
    VALID_NOTE,
    History,
    TaskSpec,
    TurnSpec,
    append_task,
    build_history,
    long_task_spec,
    recall_references,
    valid_note_responder,
)

NO_PRUNING = PruningConfig(enabled=False)


def over_threshold(history: History, *, by: int = 1, reserve: int = 4000) -> None:
    """Set the budget so the current request is ``by`` tokens past the threshold."""
    total = history.context.total_tokens()
    threshold = total - by
    history.context.budget = Budget(context_window=threshold + reserve, reserve_tokens=reserve)


def compact(compactor: CheckpointCompactor, history: History, **kw: Any) -> list[CompactionEvent]:
    return list(compactor.compact(history.context, **kw))


def checkpoints(history: History) -> list[CheckpointItem]:
    return [i for i in history.context.accumulated if isinstance(i, CheckpointItem)]


class NoteWriter:
    """A summarizer that numbers its notes and remembers every prompt it was given."""

    def __init__(self, *, bad_first: int = 0) -> None:
        self.prompts: list[str] = []
        self.bad_first = bad_first

    def __call__(self, request: ModelRequest) -> ModelResponse:
        assert request.purpose == "summarize" and not request.tools
        self.prompts.append(request.items[0].text)  # type: ignore[union-attr]
        if len(self.prompts) <= self.bad_first:
            return ModelResponse(text="The robot did a lot of things. Then it did more.")
        return ModelResponse(text=VALID_NOTE.replace("sort the cubes", f"note {len(self.prompts)}"))


# --------------------------------------------------------------------------- rounds


def test_more_chunks_than_rounds_folds_the_oldest_rounds_and_keeps_the_rest_verbatim() -> None:
    history = build_history([long_task_spec(turns=30)])
    over_threshold(history)
    writer = NoteWriter()
    config = CompactionConfig(max_input_chars=6000, max_summary_rounds=3, tool_result_max_chars=800)
    compactor = CheckpointCompactor(
        config, NO_PRUNING, summarizer=ScriptedModel(responder=writer), store=history.store
    )
    before = list(history.context.accumulated)
    events = compact(compactor, history)

    completed = [e for e in events if e.status == "completed" and e.mode == "checkpoint"]
    assert len(completed) == 1 and completed[0].rounds == 3
    assert "kept verbatim for a later compaction" in completed[0].reason
    assert len(writer.prompts) == 3
    # each round's input stays within max_input_chars and carries the previous note forward
    assert all(len(prompt) <= config.max_input_chars for prompt in writer.prompts)
    assert "note 1" in writer.prompts[1] and "note 2" in writer.prompts[2]
    assert "Earlier handoff note" not in writer.prompts[0]
    # rounds are ordered and contiguous: every folded call appears in exactly one round
    [checkpoint] = checkpoints(history)
    states = history.context.states
    folded_calls = [
        call.id
        for item in before
        if isinstance(item, AssistantItem) and states[item.id].status == "summarized"
        for call in item.tool_calls
    ]
    assert folded_calls
    for call_id in folded_calls:
        assert sum(f"(call {call_id}" in prompt for prompt in writer.prompts) == 1
    seen = [int(t) for prompt in writer.prompts for t in re.findall(r"\[task_0 t(\d+)\]", prompt)]
    assert seen == sorted(seen)
    # what did not fit the rounds stays verbatim right after the checkpoint; the
    # instruction is never folded and stays where it was, before it (issue 17)
    after = history.context.accumulated
    index = after.index(checkpoint)
    assert [type(i) for i in after[:index]] == [InstructionItem]
    survivors = [i for i in before if i in after[index + 1 :]]
    assert after[index + 1 :] == survivors
    assert [i for i in before if i in after] == [*after[:index], *survivors]
    assert checkpoint.source.rounds == 3
    assert checkpoint.source.items_folded == completed[0].items_folded
    assert history.context.total_tokens() < history.context.budget.threshold


def test_repeated_compaction_folds_the_previous_checkpoint() -> None:
    history = build_history([long_task_spec(turns=12)])
    writer = NoteWriter()
    compactor = CheckpointCompactor(
        CompactionConfig(keep_recent_turns=2),
        NO_PRUNING,
        summarizer=ScriptedModel(responder=writer),
        store=history.store,
    )
    over_threshold(history)
    compact(compactor, history)
    [first] = checkpoints(history)
    assert first.source.previous_checkpoint is None

    append_task(history, long_task_spec(turns=12))
    over_threshold(history)
    events = compact(compactor, history)
    [second] = checkpoints(history)
    assert second.id != first.id
    assert second.source.previous_checkpoint == first.id
    assert second.source.task_ids[0] == "task_0" and "task_1" in second.source.task_ids
    # the first note reached the summarizer as the note to update, not as history
    last_prompt = writer.prompts[-1]
    assert "Earlier handoff note" in last_prompt and "note 1" in last_prompt
    state = history.context.states[first.id]
    assert state.status == "summarized" and second.id in state.reason
    assert any(e.checkpoint_id == second.id for e in events)
    # one rolling checkpoint; both tasks' instructions are never folded and stay before it
    # (issue 17: this asserted `accumulated[0] is second` while instructions were folded)
    accumulated = history.context.accumulated
    index = accumulated.index(second)
    assert [item.kind for item in accumulated[:index]] == ["instruction", "instruction"]
    # its metadata covers the union, and the replaced text stays in the archive
    assert second.source.items_folded > first.source.items_folded
    assert second.source.first_turn == first.source.first_turn
    assert history.store.archive_get(f"archive://task_0/{first.id}") == first.text


# --------------------------------------------------------------------------- repair, failure


def test_malformed_summary_gets_one_repair_round() -> None:
    history = build_history([long_task_spec()])
    over_threshold(history)
    writer = NoteWriter(bad_first=1)
    compactor = CheckpointCompactor(
        CompactionConfig(),
        NO_PRUNING,
        summarizer=ScriptedModel(responder=writer),
        store=history.store,
    )
    events = compact(compactor, history)
    assert len(writer.prompts) == 2
    repair = writer.prompts[1]
    assert "could not be used" in repair and "missing sections: ## Objective" in repair
    assert "The robot did a lot of things" in repair
    completed = next(e for e in events if e.status == "completed")
    assert "(1 repaired)" in completed.reason
    assert completed.usage is not None and completed.usage.requests == 2  # summarizer cost
    [checkpoint] = checkpoints(history)
    assert "## Open work" in checkpoint.text and "note 2" in checkpoint.text


def test_malformed_twice_fails_leaves_context_unchanged_and_backs_off() -> None:
    history = build_history([long_task_spec()])
    over_threshold(history)
    writer = NoteWriter(bad_first=2)
    compactor = CheckpointCompactor(
        CompactionConfig(failure_backoff_turns=2),
        NO_PRUNING,
        summarizer=ScriptedModel(responder=writer),
        store=history.store,
    )
    before = [item.model_dump_json() for item in history.context.accumulated]
    events = compact(compactor, history)
    assert [e.status for e in events] == ["started", "failed"]
    assert "still malformed after one repair" in events[1].reason
    assert events[1].usage is not None and events[1].usage.requests == 2
    assert "next summarizer attempt at turn 4" in events[1].reason
    assert [item.model_dump_json() for item in history.context.accumulated] == before
    assert len(writer.prompts) == 2
    # two turns of backoff without model calls, then a new attempt that succeeds
    assert [e.status for e in compact(compactor, history)] == ["started", "skipped"]
    assert [e.status for e in compact(compactor, history)] == ["started", "skipped"]
    events = compact(compactor, history)
    assert [e.status for e in events] == ["started", "completed"]
    assert len(writer.prompts) == 3


def test_summarizer_exception_is_a_failed_event_with_the_reason() -> None:
    history = build_history([long_task_spec()])
    over_threshold(history)

    def broken(request: ModelRequest) -> ModelResponse:
        raise RuntimeError("quota exceeded for summaries")

    compactor = CheckpointCompactor(
        CompactionConfig(failure_backoff_turns=0),
        NO_PRUNING,
        summarizer=ScriptedModel(responder=broken, name="cheap-model"),
        store=history.store,
    )
    before = [item.model_dump_json() for item in history.context.accumulated]
    events = compact(compactor, history)
    failed = events[-1]
    assert failed.status == "failed" and failed.mode == "checkpoint"
    assert "cheap-model" in failed.reason and "RuntimeError: quota exceeded" in failed.reason
    assert [item.model_dump_json() for item in history.context.accumulated] == before


def test_keeps_failing_over_budget_falls_back_to_a_deterministic_checkpoint() -> None:
    history = build_history([long_task_spec()])
    over_threshold(history)

    def broken(request: ModelRequest) -> ModelResponse:
        raise TimeoutError("summarizer timed out")

    model = ScriptedModel(responder=broken)
    compactor = CheckpointCompactor(
        CompactionConfig(failure_backoff_turns=0),
        NO_PRUNING,
        summarizer=model,
        store=history.store,
    )
    assert [e.status for e in compact(compactor, history)] == ["started", "failed"]
    events = compact(compactor, history)
    assert [e.status for e in events] == ["started", "failed", "fallback"]
    assert "failed 2 time(s) in a row" in events[-1].reason
    [checkpoint] = checkpoints(history)
    assert checkpoint.source.mode == "deterministic"
    assert history.context.total_tokens() < history.context.budget.threshold
    # the next over-budget episode tries the model again (failures never disable it)
    asked = len(model.requests)
    append_task(history, long_task_spec())
    over_threshold(history)
    compact(compactor, history)
    assert len(model.requests) > asked


def test_a_failure_far_over_budget_falls_back_at_once() -> None:
    history = build_history([long_task_spec()])
    over_threshold(history, by=3000, reserve=4000)  # past the failure tolerance (reserve/2)

    def broken(request: ModelRequest) -> ModelResponse:
        raise ConnectionError("no route to summarizer")

    compactor = CheckpointCompactor(
        CompactionConfig(), NO_PRUNING, summarizer=ScriptedModel(responder=broken), store=None
    )
    events = compact(compactor, history)
    assert [e.status for e in events] == ["started", "failed", "fallback"]


# --------------------------------------------------------------------------- deterministic


class Planner:
    """Stands in for the offline planner: a model that says it cannot summarize."""

    name = "tabletop-planner"
    context_window = 200_000
    image_cost = "generic"
    supports_summaries = False

    def stream(self, request: ModelRequest, **kw: Any) -> Any:
        raise AssertionError("a model that cannot summarize must never be asked to")


def test_a_model_that_cannot_summarize_gets_the_deterministic_checkpoint() -> None:
    history = build_history(
        [
            TaskSpec(
                instruction_chars=100,
                turns=[
                    TurnSpec(notes_chars=300, result_chars=[400]),
                    TurnSpec(notes_chars=300, result_chars=[400], error=True),
                    *[TurnSpec(notes_chars=300, result_chars=[400])] * 10,
                    TurnSpec(notes_chars=0, calls=0, text_chars=200),
                ],
            ),
            long_task_spec(turns=8),
        ],
        resident_chars=200_000,  # a large budget, so the note has room for every line
    )
    over_threshold(history)
    compactor = CheckpointCompactor(
        CompactionConfig(keep_recent_turns=2),
        NO_PRUNING,
        summarizer=Planner(),
        store=history.store,
    )
    events = compact(compactor, history)
    assert [e.status for e in events] == ["started", "fallback"]
    assert "'tabletop-planner' cannot write summaries" in events[-1].reason
    [checkpoint] = checkpoints(history)
    text = checkpoint.text
    assert checkpoint.source.mode == "deterministic" and checkpoint.source.model == "deterministic"
    # Issue 17: instructions and an ended task's final report are never folded any more;
    # they stay verbatim in context, before the checkpoint (this asserted "## Instructions"
    # and "## Last report (task_0)" sections inside the checkpoint).
    accumulated = history.context.accumulated
    before_checkpoint = accumulated[: accumulated.index(checkpoint)]
    assert [item.kind for item in before_checkpoint] == ["instruction", "assistant", "instruction"]
    assert [item.task_id for item in before_checkpoint] == ["task_0", "task_0", "task_1"]
    assert "## Task notes (task_0" in text  # the task's last snapshot
    assert "task_0 t2 inspect({}) -> error E_COLLISION" in text  # a line per exchange
    assert "-> success (in tray)" in text
    addresses = re.findall(r"archive://task_\d/call_[\d_]+", text)
    assert len(addresses) >= 10
    assert all(history.store.archive_get(address) is not None for address in addresses)


def test_deterministic_checkpoint_stays_bounded_for_a_long_history() -> None:
    turns = [TurnSpec(notes_chars=200, text_chars=60, result_chars=[300])] * 400
    turns[10] = TurnSpec(notes_chars=200, result_chars=[300], error=True)
    history = build_history([TaskSpec(turns=turns)])
    over_threshold(history)
    compactor = CheckpointCompactor(
        CompactionConfig(keep_recent_turns=2), NO_PRUNING, summarizer=None, store=history.store
    )
    compact(compactor, history)
    [checkpoint] = checkpoints(history)
    limit = 4 * 4096
    assert len(checkpoint.text) <= limit
    # the oldest lines collapsed into counts
    assert "earlier exchanges (task_0 t1 to task_0 t" in checkpoint.text
    assert "inspect x" in checkpoint.text
    assert "latest failures: task_0 t11 inspect (E_COLLISION) archive://task_0/call_0_11_0" in (
        checkpoint.text
    )
    # the most recent folded exchanges keep their own lines with addresses
    assert re.search(r"t39\d inspect\(\{\}\) -> ", checkpoint.text)


# --------------------------------------------------------------------------- shrink, errors


def test_forced_compaction_shrinks_retained_items_to_head_and_tail() -> None:
    """After a provider overflow with nothing left to fold, oversized retained items are
    cut in place, and their exact originals stay recallable."""
    history = build_history(
        [TaskSpec(turns=[TurnSpec(reasoning_chars=9000, result_chars=[12000])])]
    )
    compactor = CheckpointCompactor(
        CompactionConfig(keep_recent_turns=4),
        NO_PRUNING,
        summarizer=ScriptedModel(responder=valid_note_responder),
        store=history.store,
    )
    before = history.context.total_tokens()
    events = compact(compactor, history, force=True, reason="prompt is too long")
    assert events[0].mode == "overflow" and events[0].reason == "prompt is too long"
    shrink = next(e for e in events if e.mode == "shrink")
    assert shrink.status == "completed" and shrink.tokens_after < before
    result = next(i for i in history.context.accumulated if isinstance(i, ToolResultItem))
    assert history.context.states[result.id].status == "shrunk"
    [address] = recall_references(result.text)
    original_id = next(
        item_id
        for item_id, state in history.context.states.items()
        if state.replaced_by == result.id
    )
    assert history.store.archive_get(address) == history.originals[original_id]
    assistant = next(i for i in history.context.accumulated if isinstance(i, AssistantItem))
    [reasoning_address] = recall_references(assistant.reasoning[0].text)
    assert reasoning_address.endswith("/reasoning0")
    assert len(history.store.archive_get(reasoning_address) or "") == 9000


def test_forced_compaction_with_nothing_left_is_a_named_error() -> None:
    history = build_history([TaskSpec(turns=[TurnSpec(result_chars=[50])])])
    compactor = CheckpointCompactor(
        CompactionConfig(), NO_PRUNING, summarizer=None, store=history.store
    )
    with pytest.raises(ContextBudgetError, match="provider reported an overflow"):
        compact(compactor, history, force=True, reason="maximum context length exceeded")


def test_fixed_part_larger_than_the_budget_is_a_named_error() -> None:
    history = build_history([long_task_spec()], resident_chars=60_000)
    history.context.budget = Budget(context_window=12_000, reserve_tokens=2000)
    compactor = CheckpointCompactor(
        CompactionConfig(), NO_PRUNING, summarizer=None, store=history.store
    )
    events: list[CompactionEvent] = []
    with pytest.raises(ContextBudgetError) as info:
        for event in compactor.compact(history.context):
            events.append(event)
    message = str(info.value)
    assert "input budget is 10000 tokens (window 12000 - reserve 2000)" in message
    assert "the fixed part alone exceeds the budget" in message
    assert events[-1].status == "failed" and events[-1].reason == message


def test_signed_reasoning_is_never_edited() -> None:
    from harness.messages import ReasoningBlock

    history = build_history([TaskSpec(turns=[TurnSpec(result_chars=[50])])])
    context = history.context
    signed = AssistantItem(
        text="",
        reasoning=[ReasoningBlock(text="t" * 20_000, signature="sig", provider="anthropic")],
        task_id="task_0",
        turn=9,
    )
    context.append(signed)
    compactor = CheckpointCompactor(
        CompactionConfig(), NO_PRUNING, summarizer=None, store=history.store
    )
    with pytest.raises(ContextBudgetError):
        compact(compactor, history, force=True)
    assert signed in context.accumulated


# --------------------------------------------------------------------------- wiring


def test_build_compactor_follows_the_config() -> None:
    config = HarnessConfig()
    assert isinstance(build_compactor(config, summarizer=None, store=None), CheckpointCompactor)
    config.context.compaction.enabled = False
    disabled = build_compactor(config, summarizer=None, store=None)
    assert isinstance(disabled, NoCompaction) and disabled.pruner is not None
    config.context.pruning.enabled = False
    assert build_compactor(config, summarizer=None, store=None).pruner is None  # type: ignore[attr-defined]


def test_disabled_compaction_refuses_a_request_over_the_window() -> None:
    history = build_history([long_task_spec()])
    history.context.budget = Budget(context_window=1000, reserve_tokens=100)
    with pytest.raises(ContextBudgetError, match=r"compaction is\s+disabled"):
        list(NoCompaction().compact(history.context))
