"""A long session costs the process the same memory at turn 3,000 as at turn 500.

What used to grow with every call is bounded or kept in the run store instead: the
context's memory of departed items, each task's tool outcomes (read back from the store
for consolidation), and Task Notes snapshots (stored only when their text changed). The
RSS figure itself is measured by ``python -m benchmarks.turn_overhead`` (bounded_memory).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness import Harness, HarnessConfig, tool
from harness.config import CompactionConfig, PruningConfig
from harness.context import RETIRED_KEPT, Budget
from harness.context.compaction.compactor import CheckpointCompactor
from harness.context.compaction.overflow import MINIMAL, REFERENCE, reference_bodies
from harness.context.introspection import context_report
from harness.messages import CheckpointItem, InstructionItem, TaskNotesItem, ToolResultItem
from harness.providers import ScriptedModel, call, reply
from harness.runtime.lane import Lane
from harness.runtime.phases.refresh import snapshot_task_notes
from harness.runtime.task import OUTCOMES_KEPT, TaskState
from memory.task_record import ConsolidationReport, TaskRecord, ToolOutcome
from tests.histories import TaskSpec, TurnSpec, append_turns, build_history, recall_references


def test_what_the_context_remembers_of_departed_items_is_bounded() -> None:
    history = build_history([TaskSpec(turns=[TurnSpec(result_chars=[600])] * 10)])
    context = history.context
    compactor = CheckpointCompactor(
        CompactionConfig(keep_recent_turns=2),
        PruningConfig(enabled=False),
        summarizer=None,
        store=history.store,
    )
    sizes = []
    for _ in range(120):
        append_turns(history, [TurnSpec(result_chars=[600])] * 5)
        threshold = max(4000, context.total_tokens() - 1000)
        context.budget = Budget(context_window=threshold + 2000, reserve_tokens=2000)
        list(compactor.compact(context))
        context.drain_changes()  # what the session does after every compaction
        sizes.append((len(context.states), len(context.retired), context.sizes.cached_items))
    live = len(context.accumulated)
    assert context.retired_forgotten > 0  # the run did outgrow the bound
    states, retired, cached = sizes[-1]
    assert retired <= RETIRED_KEPT and states <= RETIRED_KEPT + live and cached <= live
    assert sizes[-1] == max(sizes[len(sizes) // 2 :])  # flat over the second half
    rows = context_report(context)
    omitted = [row for row in rows if row.kind == "omitted"]
    assert len(omitted) == 1 and str(context.retired_forgotten) in omitted[0].reason


@tool
def probe(index: int) -> str:
    """Probe one spot.

    Args:
        index: Which spot.
    """
    return f"spot {index}: ok"


class RecordingMemory:
    """Durable memory that keeps what consolidation was handed."""

    def __init__(self) -> None:
        self.records: list[TaskRecord] = []
        self.outcomes: list[ToolOutcome] = []

    def resident_text(self, *, budget_tokens: int, estimate: Callable[[str], int]) -> str:
        return ""

    def mirror_task_notes(self, text: str) -> None:
        return None

    def record_tool_outcome(self, outcome: ToolOutcome) -> None:
        self.outcomes.append(outcome)

    def consolidate(self, record: TaskRecord) -> ConsolidationReport:
        self.records.append(record)
        return ConsolidationReport(status="completed")


def test_consolidation_reads_every_outcome_back_from_the_store_not_from_memory() -> None:
    turns = OUTCOMES_KEPT + 44
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": turns + 1, "failure_budget": turns + 1},
            "memory": {"enabled": True},
        }
    )
    memory = RecordingMemory()
    model = ScriptedModel([*(call("probe", index=i) for i in range(turns)), reply("done")])
    with Harness(config, model=model, tools=[probe], memory=memory) as h:
        assert h.run("probe every spot").status == "completed"
    [record] = memory.records
    assert [o.detail for o in record.outcomes] == [f"spot {i}: ok" for i in range(turns)]
    assert [o.turn for o in record.outcomes] == [o.turn for o in memory.outcomes]
    assert TaskState(instruction="x", max_turns=1, notes=h.task_notes).outcomes.maxlen == (
        OUTCOMES_KEPT
    )


def test_task_notes_are_snapshotted_and_stored_only_when_their_text_changed(
    config: HarnessConfig,
) -> None:
    stored: list[Any] = []
    with Harness(config, model=ScriptedModel([reply("ok")])) as h:
        session = h.session
        session.memory_link.store_task_notes = lambda state: stored.append(state.notes.version)  # type: ignore[method-assign]
        state = TaskState(instruction="tidy up", max_turns=3, notes=session.new_task_notes())
        state.notes.reset("tidy up")
        lane = Lane(session, state)
        snapshot_task_notes(lane)
        state.notes.version += 1  # a new version whose text is the same: not a change
        snapshot_task_notes(lane)
        state.notes.update(phase="sweeping")
        snapshot_task_notes(lane)
        snapshots = [i for i in h.context.accumulated if isinstance(i, TaskNotesItem)]
    assert len(snapshots) == 2 and len(stored) == 2
    assert "phase: sweeping" in snapshots[-1].text


# --------------------------------------------------------------------------- overflow steps


def test_the_reference_step_keeps_the_newest_exchange_and_every_original_recallable() -> None:
    history = build_history(
        [TaskSpec(turns=[TurnSpec(result_chars=[3000], reasoning_chars=900)] * 6)]
    )
    context, store = history.context, history.store
    newest = [i for i in context.accumulated if isinstance(i, ToolResultItem)][-1]
    events = list(reference_bodies(context, store, step=REFERENCE, reason="too long"))
    assert [e.mode for e in events] == ["reference"]
    results = [i for i in context.accumulated if isinstance(i, ToolResultItem)]
    assert results[-1] is newest  # the newest exchange is untouched
    for result in results[:-1]:
        [address] = recall_references(result.text)
        state = context.states[result.id]
        assert state.status == "pruned" and "provider overflow" in state.reason
        original = next(i for i, s in context.states.items() if s.replaced_by == result.id)
        assert store.archive_get(address) == history.originals[original]
    assert isinstance(context.accumulated[0], InstructionItem)
    assert context.accumulated[0].text == history.originals[context.accumulated[0].id]
    notes = [i for i in context.accumulated if isinstance(i, TaskNotesItem)]
    assert [n.turn for n in notes] == [newest.turn, newest.turn + 1]  # older ones left


def test_the_minimal_step_reduces_the_checkpoint_to_its_index_and_the_newest_exchange_too() -> None:
    history = build_history(
        [TaskSpec(instruction_chars=9000, turns=[TurnSpec(result_chars=[3000])] * 12)]
    )
    context, store = history.context, history.store
    compactor = CheckpointCompactor(
        CompactionConfig(keep_recent_turns=2),
        PruningConfig(enabled=False),
        summarizer=None,
        store=store,
    )
    total = context.total_tokens()
    context.budget = Budget(context_window=total + 1000, reserve_tokens=4000)
    list(compactor.compact(context))
    [checkpoint] = [i for i in context.accumulated if isinstance(i, CheckpointItem)]
    list(reference_bodies(context, store, step=MINIMAL, reason="still too long"))
    [minimal] = [i for i in context.accumulated if isinstance(i, CheckpointItem)]
    assert len(minimal.text) < len(checkpoint.text)
    assert all(page.address in minimal.text for page in checkpoint.source.index)
    [note_address] = recall_references(minimal.text)
    assert store.archive_get(note_address) == checkpoint.text
    [instruction] = [i for i in context.accumulated if isinstance(i, InstructionItem)]
    assert instruction.archive and "authoritative" in instruction.text
    assert (
        store.archive_get(instruction.archive)
        == history.originals[
            next(i for i, s in context.states.items() if s.replaced_by == instruction.id)
        ]
    )
    results = [i for i in context.accumulated if isinstance(i, ToolResultItem)]
    assert results and all(len(r.text) < 300 for r in results)
