"""Issue 17's guarantees hold in a sub-agent's lane (issue 19) too.

A child lane works in its own child view of the context, with its own compactor and,
here, its own model and window. What the merge of the two issues must keep:

- the child's goal is the instruction of its lane: never folded, and bounded as an
  authoritative reference when it is too long for the child's window;
- every exchange the child's compaction folds stays reachable through the checkpoint's
  harness-written index;
- a provider overflow in the child climbs the recovery ladder on the child's own context
  and model, and the parent's context and budget are not touched;
- the next task's folding of an ended task's traffic works on the main lane only: a
  child lane's recorded items keep their states.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from harness import Harness, HarnessConfig
from harness.errors import ContextOverflowError
from harness.events import CompactionEvent, DoneEvent, EventBase, HandoffEvent, ModelErrorEvent
from harness.messages import (
    CheckpointItem,
    InstructionItem,
    ModelRequest,
    ModelResponse,
    ToolResultItem,
)
from harness.providers import ScriptedModel, call, reply
from harness.store import MemoryRunStore
from harness.tools import Tool, ToolContext
from tests.histories import filler, valid_note_responder

FOUND = {"summary": "log 3 holds the fault", "findings": [], "verification": ["read it"]}
CHILD_WINDOW = 8_000


def config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": 60, "failure_budget": 60},
            "memory": {"enabled": False},
            "context": {"compaction": {"reserve_tokens": 2000}},
            "subagents": {"enabled": True, "max_turns": 40},
        }
    )


def log_tool(outputs: dict[int, tuple[str, str]]) -> Tool:
    def read_log(index: int, ctx: ToolContext) -> str:
        text = f"log {index}: " + filler(2500, index) + f" marker M{index:04d}"
        outputs[index] = (ctx.call_id, text)
        return text

    return Tool(
        "read_log",
        "Read one log.",
        read_log,
        parameters={
            "type": "object",
            "properties": {"index": {"type": "integer"}},
            "required": ["index"],
        },
    )


def summarizer() -> ScriptedModel:
    """Writes valid checkpoint notes (with no address in them) for either lane."""
    return ScriptedModel(responder=valid_note_responder)


def harness(
    parent: ScriptedModel, child: ScriptedModel, store: MemoryRunStore, tools: Sequence[Tool] = ()
) -> Harness:
    """The parent on ``parent``, its sub-agents on ``child``, notes by :func:`summarizer`."""
    return Harness(
        config(),
        model=parent,
        subagent_model=child,
        compaction_model=summarizer(),
        tools=list(tools),
        store=store,
    )


def answer() -> ModelResponse:
    return reply(json.dumps(FOUND))


def lane_events(events: list[EventBase]) -> tuple[str, list[EventBase]]:
    [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
    return handoff.task_id, [e for e in events if e.task_id == handoff.task_id]


def lane_states(store: MemoryRunStore, lane: str) -> dict[str, tuple[str, str]]:
    """Each recorded item of ``lane`` with its state and reason."""
    return {
        item_id: (row["state"], row["reason"])
        for item_id, row in store.items.items()
        if row["lane"] == lane
    }


def test_a_childs_goal_stays_first_and_its_folded_exchanges_stay_reachable() -> None:
    outputs: dict[int, tuple[str, str]] = {}
    reads = 14
    child = ScriptedModel(
        [*(call("read_log", index=i) for i in range(1, reads + 1)), answer()],
        context_window=CHILD_WINDOW,
    )
    goal = "read logs 1 to 14 and say which holds the fault"
    parent = ScriptedModel([call("delegate", goal=goal, tools=["read_log"]), reply("done")])
    store = MemoryRunStore()
    with harness(parent, child, store, tools=[log_tool(outputs)]) as h:
        events = list(h.run_stream("find the fault"))
    lane, mine = lane_events(events)
    [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
    assert handoff.status == "completed"
    assert any(isinstance(e, CompactionEvent) and e.status == "completed" for e in mine)
    # the goal is the first item of every request the child made, verbatim
    for request in child.requests:
        first = request.items[0]
        assert isinstance(first, InstructionItem) and first.text == goal
    last = child.requests[-1]
    [checkpoint] = [i for i in last.items if isinstance(i, CheckpointItem)]
    in_view = {i.archive for i in last.items if isinstance(i, ToolResultItem)}
    pages = "\n".join(store.archive_get(p.address) or "" for p in checkpoint.source.index)
    for index in range(1, reads + 1):
        call_id, exact = outputs[index]
        address = f"archive://{lane}/{call_id}"
        assert address in in_view or address in checkpoint.text or address in pages, index
        assert store.archive_get(address) == exact
    # the parent saw only the handoff
    assert all(i.task_id != lane for r in parent.requests for i in r.items)


def test_an_oversized_goal_reaches_the_child_as_an_authoritative_reference() -> None:
    goal = "check every part: " + " ".join(f"part_{i:04d}" for i in range(380))
    assert 3000 < len(goal) <= 4000
    child = ScriptedModel([answer()], context_window=CHILD_WINDOW)
    parent = ScriptedModel([call("delegate", goal=goal), reply("done")])
    store = MemoryRunStore()
    with harness(parent, child, store) as h:
        events = list(h.run_stream("check the parts"))
    lane, _ = lane_events(events)
    first = child.requests[0].items[0]
    assert isinstance(first, InstructionItem)
    assert first.archive and "authoritative" in first.text and len(first.text) < len(goal)
    assert first.text.split("\n", 1)[1].startswith(goal[:300])
    assert store.archive_get(first.archive) == goal
    assert store.tasks[lane]["instruction"] == goal


def test_an_overflow_in_a_child_climbs_the_ladder_on_the_childs_own_context() -> None:
    outputs: dict[int, tuple[str, str]] = {}
    rejected = {"n": 0}
    seen: list[ModelRequest] = []

    def decide(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        if len(seen) <= 4:
            return call("read_log", index=len(seen))
        if rejected["n"] < 2:
            rejected["n"] += 1
            raise ContextOverflowError("maximum context length is 6000 tokens")
        return answer()

    child = ScriptedModel(responder=decide, context_window=CHILD_WINDOW)
    parent = ScriptedModel([call("delegate", goal="read four logs", tools=["*"]), reply("ok")])
    store = MemoryRunStore()
    with harness(parent, child, store, tools=[log_tool(outputs)]) as h:
        parent_budget = h.context.budget
        events = list(h.run_stream("read the logs"))
        assert h.context.budget == parent_budget
    [done] = [e for e in events if isinstance(e, DoneEvent)]
    assert done.status == "completed"
    lane, mine = lane_events(events)
    [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
    assert handoff.status == "completed"
    errors = [i for i, e in enumerate(mine) if isinstance(e, ModelErrorEvent)]
    assert len(errors) == 2
    steps = [next(e for e in mine[at:] if isinstance(e, CompactionEvent)).mode for at in errors]
    assert steps == ["overflow", "reference"]
    # the reference step rewrote the child's own tool results, never the parent's items
    last = child.requests[-1]
    results = [i for i in last.items if isinstance(i, ToolResultItem)]
    assert results and all("recall(address=" in r.text for r in results[:-1])
    assert all(i.task_id == lane for i in last.items)
    assert not [e for e in events if isinstance(e, ModelErrorEvent) and e.task_id != lane]


def test_the_next_tasks_folding_leaves_a_child_lanes_items_alone() -> None:
    outputs: dict[int, tuple[str, str]] = {}
    child = ScriptedModel(
        [call("read_log", index=1), call("read_log", index=2), answer()],
        context_window=CHILD_WINDOW,
    )
    parent = ScriptedModel(
        [
            call("delegate", goal="read logs 1 and 2", tools=["read_log"]),
            reply("First task done."),
            reply("Second task done."),
        ]
    )
    store = MemoryRunStore()
    with harness(parent, child, store, tools=[log_tool(outputs)]) as h:
        first = list(h.run_stream("read the first logs"))
        lane, _ = lane_events(first)
        states = lane_states(store, lane)
        assert states
        second = list(h.run_stream("and now?"))
    folds = [e for e in second if isinstance(e, CompactionEvent) and e.mode == "task_end"]
    assert len(folds) == 1 and folds[0].status == "completed"
    assert lane_states(store, lane) == states
    opening = parent.requests[-1]
    assert not [i for i in opening.items if isinstance(i, ToolResultItem)]
    assert all(i.task_id != lane for i in opening.items)
