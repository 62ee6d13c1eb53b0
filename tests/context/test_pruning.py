"""Proactive pruning: old bulky tool outputs and superseded Task Notes snapshots."""

from __future__ import annotations

from harness.config import PruningConfig
from harness.context import Budget
from harness.context.eviction.pruning import DEFAULT_TRIGGER_SHARE, Pruner
from harness.messages import TaskNotesItem, ToolResultItem
from tests.histories import History, TaskSpec, TurnSpec, build_history, recall_references


def history_with_big_outputs(turns: int = 30, size: int = 9000) -> History:
    return build_history(
        [TaskSpec(turns=[TurnSpec(notes_chars=400, calls=2, result_chars=[size, 200])] * turns)]
    )


def results(history: History) -> list[ToolResultItem]:
    return [i for i in history.context.accumulated if isinstance(i, ToolResultItem)]


def test_old_bulky_outputs_become_one_line_references_to_their_archive() -> None:
    history = history_with_big_outputs()
    context = history.context
    before = results(history)
    recent = {item.id for item in context.accumulated[-20:]}
    pruner = Pruner(PruningConfig(trigger_tokens=0, protect_recent_items=20), store=history.store)
    events = list(pruner.run(context))
    assert len(events) == 1 and events[0].mode == "prune" and events[0].status == "completed"
    assert events[0].tokens_after < events[0].tokens_before
    live = {item.id: item for item in context.accumulated}
    pruned = 0
    for original in before:
        state = context.states[original.id]
        big = len(original.text) >= 8000
        if original.id in recent or not big:
            assert original.id in live and state.status == "verbatim"
            continue
        pruned += 1
        assert state.status == "pruned" and state.replaced_by in live
        reference = live[state.replaced_by]
        assert isinstance(reference, ToolResultItem) and reference.call_id == original.call_id
        assert "\n" not in reference.text and len(reference.text) < 200
        assert recall_references(reference.text) == [original.archive]
        assert history.store.archive_get(original.archive or "") == history.originals[original.id]
    assert pruned >= 20


def test_a_pass_that_reclaims_too_little_changes_nothing() -> None:
    history = history_with_big_outputs(turns=3)
    before = list(history.context.accumulated)
    pruner = Pruner(
        PruningConfig(trigger_tokens=0, protect_recent_items=2, min_reclaim_tokens=1_000_000),
        store=history.store,
    )
    assert pruner.plan(history.context).reclaim_tokens > 0
    assert list(pruner.run(history.context)) == []
    assert history.context.accumulated == before


def test_nothing_happens_below_the_trigger_and_the_default_trigger_follows_the_budget() -> None:
    history = history_with_big_outputs()
    pruner = Pruner(PruningConfig(), store=history.store)
    history.context.budget = Budget(context_window=10_000_000, reserve_tokens=16384)
    assert pruner.trigger_tokens(history.context.budget) == int(
        (10_000_000 - 16384) * DEFAULT_TRIGGER_SHARE
    )
    before = list(history.context.accumulated)
    assert list(pruner.run(history.context)) == []
    assert history.context.accumulated == before


def test_superseded_notes_leave_but_the_current_and_each_tasks_last_stay() -> None:
    turns = [TurnSpec(notes_chars=1500, result_chars=[100])] * 12
    history = build_history([TaskSpec(turns=turns), TaskSpec(turns=turns)])
    context = history.context
    current = context.latest_task_notes()
    assert current is not None
    notes_before = [i for i in context.accumulated if isinstance(i, TaskNotesItem)]
    last_of_first_task = [n for n in notes_before if n.task_id == "task_0"][-1]
    pruner = Pruner(
        PruningConfig(trigger_tokens=0, protect_recent_items=6, min_reclaim_tokens=100),
        store=history.store,
    )
    list(pruner.run(context))
    notes_after = [i for i in context.accumulated if isinstance(i, TaskNotesItem)]
    assert current in notes_after and last_of_first_task in notes_after
    assert len(notes_after) < len(notes_before)
    recent = {item.id for item in context.accumulated[-6:]}
    for snapshot in notes_before:
        if snapshot in notes_after:
            continue
        state = context.states[snapshot.id]
        assert state.status == "pruned" and "superseded" in state.reason
        address = f"archive://{snapshot.task_id}/{snapshot.id}"
        assert address in state.reason
        assert history.store.archive_get(address) == snapshot.text
        assert snapshot.id not in recent
    # idempotent: nothing left to prune
    again = list(context.accumulated)
    assert list(pruner.run(context)) == []
    assert context.accumulated == again


def test_the_latest_exchange_is_never_pruned_even_without_protection() -> None:
    history = history_with_big_outputs(turns=4)
    pruner = Pruner(
        PruningConfig(trigger_tokens=0, protect_recent_items=0, min_reclaim_tokens=0),
        store=history.store,
    )
    list(pruner.run(history.context))
    last_results = [r for r in results(history) if r.turn == 4]
    assert last_results
    assert all(history.context.states[r.id].status != "pruned" for r in last_results)
    assert any(history.context.states[r.id].status == "pruned" for r in results(history))


def test_without_a_store_superseded_notes_are_kept() -> None:
    """A snapshot is only dropped once its exact text is archived somewhere recallable."""
    turns = [TurnSpec(notes_chars=1500, result_chars=[100])] * 6
    history = build_history([TaskSpec(turns=turns)])
    pruner = Pruner(
        PruningConfig(trigger_tokens=0, protect_recent_items=0, min_reclaim_tokens=0), store=None
    )
    plan = pruner.plan(history.context)
    assert not plan.removals


def test_the_free_removal_of_a_superseded_snapshot_is_not_counted_as_a_prune() -> None:
    """Through the real loop: the snapshot that ended the previous request leaves as the
    next arrives (most turns). That is a ``supersede`` event, emitted only when a snapshot
    actually left; ``prune`` is kept for the batched passes, so a long session's prune
    count is no longer its request count."""
    from harness import Harness, HarnessConfig, tool
    from harness.events import CompactionEvent, DoneEvent
    from harness.providers import ScriptedModel, call, reply

    @tool
    def look(area: str) -> str:
        """Look at an area.

        Args:
            area: Which area.
        """
        return f"{area}: " + "a red block near the tray, " * 8

    turns = 24

    def decide(request: object) -> object:
        decide.calls += 1  # type: ignore[attr-defined]
        if decide.calls > turns:  # type: ignore[attr-defined]
            return reply("looked everywhere")
        return call("look", area=f"area-{decide.calls}")  # type: ignore[attr-defined]

    decide.calls = 0  # type: ignore[attr-defined]
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": 60, "failure_budget": 60},
            "memory": {"enabled": False},
            "context": {"compaction": {"context_window": 200_000}},
        }
    )
    model = ScriptedModel(responder=decide, name="looker")
    with Harness(config, model=model, tools=[look]) as h:
        events = list(h.run_stream("look around the table"))
    assert next(e for e in events if isinstance(e, DoneEvent)).status == "completed"
    changes = [e for e in events if isinstance(e, CompactionEvent) and e.status == "completed"]
    supersedes = [e for e in changes if e.mode == "supersede"]
    assert not [e for e in changes if e.mode == "prune"]  # nothing reached the trigger
    assert len(supersedes) >= turns // 2
    assert all(e.items_folded >= 1 and e.tokens_after < e.tokens_before for e in supersedes)
    # each one really removed a snapshot: a later request never shows more than the
    # current snapshot of the task
    for request in model.requests:
        assert sum(1 for item in request.items if isinstance(item, TaskNotesItem)) <= 1
    # and no event claims a removal on a turn where none happened
    assert len(supersedes) <= len(model.requests) - 1


def test_a_batched_pass_is_still_a_prune() -> None:
    history = history_with_big_outputs()
    pruner = Pruner(
        PruningConfig(trigger_tokens=0, protect_recent_items=4, min_reclaim_tokens=100),
        store=history.store,
    )
    [event] = list(pruner.run(history.context))
    assert event.mode == "prune"
