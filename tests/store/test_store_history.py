"""Property: the store rebuilds Accumulated context, item by item and state by state, as
it was after any step of any history of appends, folds, prunes, truncations and resets
(what `harness context --turn` and `Harness.resume` rely on)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig
from harness.context import ItemState
from harness.events import ProgressEvent
from harness.messages import CheckpointItem, CheckpointSource, NoticeItem, ToolResultItem
from harness.providers import ScriptedModel, reply
from harness.store import SQLiteRunStore
from harness.store.reader import RunLog
from tests.tiers import examples

Step = tuple[str, int]

steps = st.lists(
    st.tuples(
        st.sampled_from(["append", "append", "fold", "prune", "truncate", "reset"]),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=25,
)


def _apply(harness: Harness, step: Step, index: int) -> None:
    kind, n = step
    context = harness.context
    items = context.accumulated
    if kind == "append" or not items:
        harness.session.append_item(
            ToolResultItem(call_id=f"c{index}", name="probe", text=f"out {index}", turn=index)
            if n % 2
            else NoticeItem(text=f"notice {index}", turn=index)
        )
    elif kind == "fold":
        k = 1 + n % len(items)
        folded, kept = items[:k], items[k:]
        checkpoint = CheckpointItem(
            text=f"checkpoint {index}",
            turn=index,
            source=CheckpointSource(
                first_turn=0,
                last_turn=index,
                task_ids=[],
                items_folded=k,
                rounds=1,
                model="t",
                mode="deterministic",
            ),
        )
        context.replace(
            [checkpoint, *kept],
            states={i.id: ItemState("summarized", f"into {checkpoint.id}") for i in folded},
        )
        harness.session.sync_item_states()
    elif kind == "prune":
        i = n % len(items)
        old = items[i]
        stub = NoticeItem(text=f"pruned {old.id}", turn=old.turn)
        context.replace(
            [*items[:i], stub, *items[i + 1 :]],
            states={old.id: ItemState("pruned", "bulky and old")},
        )
        harness.session.sync_item_states()
    elif kind == "truncate":
        harness.session.set_item_state(items[n % len(items)].id, "truncated", f"step {index}")
    else:
        harness.reset_session()


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(history=steps)
def test_any_point_in_history_is_rebuilt_exactly(tmp_path: Path, history: list[Step]) -> None:
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "memory": {"enabled": False},
            "skills": {"builtin": False},
            "run": {"store": None},
        }
    )
    store = SQLiteRunStore(tmp_path, synchronous="NORMAL")
    expected: list[tuple[list[str], dict[str, str]]] = []
    with Harness(config, model=ScriptedModel([reply("x")]), store=store) as harness:
        for index, step in enumerate(history):
            _apply(harness, step, index)
            harness.session.emit(ProgressEvent(text=f"step {index}"), task_id="t", turn=index)
            live = [item.id for item in harness.context.accumulated]
            states = {i: s.status for i, s in harness.context.states.items() if i in live}
            expected.append((live, states))
        session_id = harness.session_id
    store.close()
    with RunLog(tmp_path) as log:
        marks = [pos for pos, _ in log.events_with_pos(session_id=session_id)]
        assert len(marks) == len(history)
        for pos, (live, states) in zip(marks, expected, strict=True):
            rebuilt = log.accumulated(session_id, until_pos=pos)
            assert [s.id for s in rebuilt] == live
            assert {s.id: s.state for s in rebuilt} == states
