"""Invariants of compaction and pruning over random histories (hypothesis).

Histories mix text, tool results, reasoning, images and Task Notes snapshots of random
sizes across several tasks; budgets and compaction settings are random too. Whatever the
summarizer does (writes a note, is absent, fails), these must hold:

- a tool call is never separated from its result;
- Resident, Refreshed, transient images and the current Task Notes snapshot are untouched;
- the retained tail is whole turns within both keep_recent_turns and keep_recent_tokens;
- the request ends under budget, or a named ContextBudgetError explains why;
- a failed summary leaves Accumulated byte-identical;
- a second call with nothing new changes nothing;
- the surviving items keep their order;
- every truncated, pruned or shrunk original is recallable exactly from the archive.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.config import CompactionConfig, PruningConfig
from harness.context import Budget, Context
from harness.context.compaction.compactor import FAILURE_TOLERANCE_SHARE, CheckpointCompactor
from harness.context.compaction.turns import group_turns
from harness.errors import ContextBudgetError, TransientModelError
from harness.events import CompactionEvent
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    Item,
    ModelResponse,
    TaskNotesItem,
    ToolResultItem,
)
from harness.providers import ScriptedModel
from tests.histories import (
    History,
    TaskSpec,
    TurnSpec,
    build_history,
    recall_references,
    valid_note_responder,
)
from tests.tiers import examples

DEEP_SEARCH = int(os.environ.get("HARNESS_PROPERTY_EXAMPLES", "0"))
"""Set e.g. HARNESS_PROPERTY_EXAMPLES=600 for a longer, randomised search; by default the
examples are derived deterministically so the suite gives the same answer every run."""

PROPERTY_SETTINGS = settings(
    max_examples=DEEP_SEARCH or examples(40),
    derandomize=not DEEP_SEARCH,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

turns = st.builds(
    TurnSpec,
    notes_chars=st.sampled_from([0, 120, 600, 1500]),
    text_chars=st.integers(0, 400),
    reasoning_chars=st.sampled_from([0, 0, 300, 3000, 9000]),
    calls=st.sampled_from([0, 1, 1, 1, 2]),
    result_chars=st.lists(st.sampled_from([20, 300, 2500, 9000, 30000]), min_size=1, max_size=2),
    images=st.integers(0, 2),
    revision=st.booleans(),
    error=st.booleans(),
)
tasks = st.lists(
    st.builds(
        TaskSpec,
        instruction_chars=st.sampled_from([20, 200, 3000]),
        turns=st.lists(turns, min_size=1, max_size=14),
        instruction_images=st.integers(0, 1),
    ),
    min_size=1,
    max_size=3,
)
compaction_settings = st.fixed_dictionaries(
    {
        "keep_recent_turns": st.integers(0, 5),
        "keep_recent_tokens": st.sampled_from([0, 800, 3000, 20000]),
        "tool_result_max_chars": st.sampled_from([200, 800, 2000]),
        "reasoning_max_chars": st.sampled_from([200, 2000]),
        "max_input_chars": st.sampled_from([2000, 6000, 400000]),
        "max_summary_rounds": st.integers(1, 4),
        "failure_backoff_turns": st.integers(0, 3),
    }
)
pruning_settings = st.fixed_dictionaries(
    {
        "enabled": st.booleans(),
        "trigger_tokens": st.sampled_from([None, 0, 2000]),
        "min_result_chars": st.sampled_from([0, 500, 8000]),
        "min_reclaim_tokens": st.sampled_from([0, 500, 4096]),
        "protect_recent_items": st.sampled_from([0, 5, 20]),
    }
)


def snapshot(context: Context) -> list[str]:
    return [item.model_dump_json() for item in context.accumulated]


def fixed_parts(context: Context) -> tuple[Any, ...]:
    notes = context.latest_task_notes()
    return (
        context.resident_hash(),
        context.refreshed.model_dump_json(),
        [image.sha256 for image in context.transient_images],
        notes.model_dump_json() if notes is not None else None,
    )


def run(compactor: CheckpointCompactor, context: Context, **kw: Any) -> list[CompactionEvent]:
    return list(compactor.compact(context, **kw))


def summarizer(kind: str) -> ScriptedModel | None:
    if kind == "model":
        return ScriptedModel(responder=valid_note_responder, name="note-writer")
    if kind == "failing":
        return ScriptedModel(
            responder=lambda request: TransientModelError("summarizer unavailable"),  # type: ignore[arg-type,return-value]
            name="broken",
        )
    return None


def assert_calls_paired(items: list[Item]) -> None:
    """Every result follows the call that requested it, and every call has its result."""
    seen_calls: set[str] = set()
    results: set[str] = set()
    for item in items:
        if isinstance(item, AssistantItem):
            seen_calls.update(call.id for call in item.tool_calls)
        elif isinstance(item, ToolResultItem):
            assert item.call_id in seen_calls, f"result {item.call_id} without its call"
            results.add(item.call_id)
    assert seen_calls == results, f"calls without results: {seen_calls - results}"


def assert_order_preserved(before: list[Item], after: list[Item]) -> None:
    position = {item.id: index for index, item in enumerate(before)}
    survivors = [position[item.id] for item in after if item.id in position]
    assert survivors == sorted(survivors)


def assert_recallable(history: History) -> None:
    """Every marker resolves, and every changed original is in the archive exactly."""
    context, store = history.context, history.store
    for item in context.accumulated:
        texts = [getattr(item, "text", "")]
        if isinstance(item, AssistantItem):
            texts += [block.text for block in item.reasoning]
        for text in texts:
            for address in recall_references(text):
                assert store.archive_get(address) is not None, address
    for item_id, state in context.states.items():
        if state.status not in {"truncated", "pruned", "shrunk"}:
            continue
        original = history.originals.get(item_id)
        if original is None:  # a rewritten copy; its original is checked under its own id
            continue
        archived = [text for text in store.archive.values() if text == original]
        assert archived, f"{item_id} ({state.status}) is not recallable exactly"


def assert_tail_whole_and_bounded(
    compactor: CheckpointCompactor, context: Context, before: list[Item], cfg: CompactionConfig
) -> None:
    plan = compactor.last_plan
    assert plan is not None
    after_ids = {item.id for item in context.accumulated}

    def kept_id(item_id: str) -> bool:
        """Still in context, itself or as the (pruned or shrunk) copy standing in for it."""
        while item_id not in after_ids:
            state = context.states.get(item_id)
            if state is None or state.replaced_by is None:
                return False
            item_id = state.replaced_by
        return True

    turns_kept = 0
    for group in plan.tail:
        turns_kept += any(item.id not in plan.pinned for item in group.items)
        assert all(kept_id(item.id) for item in group.items), "a retained turn lost an item"
    assert turns_kept <= cfg.keep_recent_turns
    tail_tokens = context.estimator.calibrated(context.accumulated_tokens(plan.tail_items()))
    assert tail_tokens <= cfg.keep_recent_tokens
    # every original turn is retained whole or folded whole (the current notes stay)
    neutral = set(plan.pinned) | {  # superseded snapshots pruned away on their own
        item.id
        for item in before
        if isinstance(item, TaskNotesItem) and context.states[item.id].status == "pruned"
    }
    for group in group_turns(before):
        present = [kept_id(item.id) for item in group.items if item.id not in neutral]
        assert all(present) or not any(present), "a turn was split"


@PROPERTY_SETTINGS
@given(
    tasks=tasks,
    cfg=compaction_settings,
    prune=pruning_settings,
    window=st.sampled_from([6000, 12000, 30000, 80000]),
    reserve_share=st.sampled_from([0.05, 0.2]),
    images=st.integers(0, 2),
    kind=st.sampled_from(["model", "model", "deterministic"]),
    resident_chars=st.sampled_from([1000, 1000, 12000, 40000]),
    force=st.booleans(),
)
def test_compaction_invariants(
    tasks: list[TaskSpec],
    cfg: dict[str, Any],
    prune: dict[str, Any],
    window: int,
    reserve_share: float,
    images: int,
    kind: str,
    resident_chars: int,
    force: bool,
) -> None:
    history = build_history(
        tasks,
        window=window,
        reserve=int(window * reserve_share),
        refreshed_images=images,
        transient_images=images,
        resident_chars=resident_chars,
    )
    context = history.context
    config = CompactionConfig(**cfg)
    compactor = CheckpointCompactor(
        config,
        PruningConfig(**prune),
        summarizer=summarizer(kind),
        store=history.store,
    )
    before = list(context.accumulated)
    fixed = fixed_parts(context)
    assert_calls_paired(before)

    events: list[CompactionEvent] = []
    try:
        for compaction_event in compactor.compact(context, force=force, reason="overflow"):
            events.append(compaction_event)
    except ContextBudgetError as exc:
        assert "input budget" in str(exc)
        assert events[-1].status == "failed" and events[-1].reason == str(exc)
    else:
        budget = context.budget
        waiting = any(e.status == "failed" for e in events) and not any(
            e.status in {"completed", "fallback"} and e.mode not in {"prune", "supersede"}
            for e in events
        )
        if waiting:  # the summarizer failed; it backs off while the request still fits
            tolerance = budget.threshold + int(budget.reserve_tokens * FAILURE_TOLERANCE_SHARE)
            assert context.total_tokens() < tolerance
        else:
            assert context.total_tokens() < budget.threshold
            if force:
                assert context.total_tokens() < events[0].tokens_before
            again = snapshot(context)
            run(compactor, context)
            assert snapshot(context) == again, "a second pass over a compacted context changed it"
    after = list(context.accumulated)
    for outcome in sorted({f"{e.status}:{e.mode}" for e in events}):
        event(outcome)
    if any("kept verbatim" in e.reason for e in events):
        event("partial fold (max_summary_rounds)")
    if any(e.rounds > 1 for e in events):
        event("several rounds")

    assert fixed_parts(context) == fixed
    assert_calls_paired(after)
    assert_order_preserved(before, after)
    assert_recallable(history)
    assert sum(isinstance(item, CheckpointItem) for item in after) <= 1
    folded = any(e.status in {"completed", "fallback"} and e.checkpoint_id for e in events)
    if folded:
        assert_tail_whole_and_bounded(compactor, context, before, config)


@PROPERTY_SETTINGS
@given(
    tasks=tasks,
    failure=st.sampled_from(["raises", "malformed", "too_big"]),
    slack=st.floats(0.0, 0.95),
    backoff=st.integers(0, 3),
)
def test_failed_summary_leaves_accumulated_byte_identical(
    tasks: list[TaskSpec], failure: str, slack: float, backoff: int
) -> None:
    history = build_history(tasks)
    context = history.context
    total = context.total_tokens()
    reserve = 4000
    # Put the request between the threshold and the failure tolerance.
    threshold = max(1, total - int(slack * reserve * FAILURE_TOLERANCE_SHARE))
    context.budget = Budget(context_window=threshold + reserve, reserve_tokens=reserve)

    def respond(request: Any) -> Any:
        if failure == "raises":
            return TransientModelError("503 from summarizer")
        if failure == "malformed":
            return ModelResponse(text="Sure! Here is what happened: the robot moved.")
        return ModelResponse(text=VALID_LONG)

    model = ScriptedModel(responder=respond, name="flaky")
    compactor = CheckpointCompactor(
        CompactionConfig(failure_backoff_turns=backoff, keep_recent_turns=1),
        PruningConfig(enabled=False),
        summarizer=model,
        store=history.store,
    )
    before = snapshot(context)
    events = run(compactor, context)
    statuses = [e.status for e in events]
    if compactor.last_plan is None or not compactor.last_plan.foldable():
        return  # nothing to fold: no summary attempt to fail
    assert statuses[0] == "started" and "failed" in statuses and "fallback" not in statuses
    failed = next(e for e in events if e.status == "failed")
    assert failed.reason and "unchanged" in failed.reason
    assert snapshot(context) == before
    asked = len(model.requests)
    # backing off: no model call, still unchanged
    for _ in range(backoff):
        events = run(compactor, context)
        assert [e.status for e in events] == ["started", "skipped"]
        assert snapshot(context) == before
    assert len(model.requests) == asked
    # then the summarizer is tried again (failures never disable it); failing twice in a
    # row while over budget, the deterministic fallback brings the request under budget
    events = []
    try:
        for compaction_event in compactor.compact(context):
            events.append(compaction_event)
    except ContextBudgetError:  # even a deterministic checkpoint could not help
        assert [e.status for e in events][:2] == ["started", "failed"]
        return
    assert len(model.requests) > asked
    statuses = [e.status for e in events]
    # Issue 17: the instruction is never folded, so the foldable prefix can be too small
    # for a deterministic checkpoint to be smaller than it; the fallback then says so and
    # shrinking brings the request under budget (this asserted "fallback" unconditionally).
    assert statuses[:2] == ["started", "failed"] and statuses[2] in ("fallback", "skipped")
    if statuses[2] == "skipped":
        assert "would not be smaller" in events[2].reason
        event("fallback skipped: the foldable prefix is smaller than a checkpoint")
    assert context.total_tokens() < context.budget.threshold


VALID_LONG = (
    "## Objective\n"
    + "- keep going " * 4000
    + "\n## Progress\nx\n## Evidence\nx\n## Failures\nnone\n## Open work\nx"
)


@PROPERTY_SETTINGS
@given(tasks=tasks, prune=pruning_settings)
def test_idempotent_under_budget(tasks: list[TaskSpec], prune: dict[str, Any]) -> None:
    history = build_history(tasks, window=10_000_000, reserve=1000)
    context = history.context
    compactor = CheckpointCompactor(
        CompactionConfig(),
        PruningConfig(**{**prune, "trigger_tokens": None}),
        summarizer=summarizer("model"),
        store=history.store,
    )
    before = snapshot(context)
    assert list(compactor.compact(context)) == []
    assert snapshot(context) == before


@PROPERTY_SETTINGS
@given(tasks=tasks, prune=pruning_settings)
def test_pruning_is_idempotent_and_recallable(tasks: list[TaskSpec], prune: dict[str, Any]) -> None:
    history = build_history(tasks)
    context = history.context
    config = PruningConfig(**{**prune, "enabled": True, "trigger_tokens": 0})
    compactor = CheckpointCompactor(
        CompactionConfig(), config, summarizer=None, store=history.store
    )
    before = list(context.accumulated)
    fixed = fixed_parts(context)
    run(compactor, context)
    once = snapshot(context)
    run(compactor, context)
    assert snapshot(context) == once
    assert fixed_parts(context) == fixed
    assert_calls_paired(list(context.accumulated))
    assert_order_preserved(before, list(context.accumulated))
    assert_recallable(history)
