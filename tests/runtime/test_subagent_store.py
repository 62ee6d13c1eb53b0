"""A sub-agent lane in the run store: recorded as it happens under its own lane id, linked
to the parent's turn, kept apart from the main lane's history, and shown by ``harness
show``, ``harness context --lane`` and the HTML report (issue 19, item 4)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import Harness
from harness.cli import EXIT_CONFIG, EXIT_OK, main
from harness.events import CompactionEvent, EventBase, LaneStartedEvent
from harness.messages import ToolResultItem
from harness.providers import ScriptedModel, call, reply
from harness.store import SQLiteRunStore
from harness.store.reader import RunLog
from harness.store.schema import SCHEMA_VERSION, migrate, schema_version
from harness.store.task_page import render_report
from harness.store.writer import STORE_FILENAME
from harness.tools import tool
from tests.runtime.test_subagents import FOUND, answer, config, delegate, look


@tool
def scan(area: str) -> str:
    """Scan an area closely (a long report).

    Args:
        area: Which area.
    """
    return f"scan of {area}: " + " ".join(f"cell{i}={i % 7}" for i in range(2500))


class NoSummaries(ScriptedModel):
    supports_summaries = False


@dataclass
class Recorded:
    store: Path
    session: str
    task: str
    lane: str
    events: list[EventBase]
    main_ids: list[str]


def _record(tmp_path: Path, child_script: list[Any], **subagents: Any) -> Recorded:
    store = tmp_path / "store"
    cfg = config(**subagents)
    cfg.run.store = str(store)
    child = ScriptedModel(child_script, context_window=24_000)
    parent = ScriptedModel([delegate(tools=["look", "scan"]), reply("the mug is mug_7")])
    with Harness(
        cfg,
        model=parent,
        subagent_model=child,
        compaction_model=NoSummaries([]),
        tools=[look, scan],
        store=SQLiteRunStore(store),
    ) as h:
        events = list(h.run_stream("fetch the blue mug"))
        main_ids = [item.id for item in h.context.accumulated]
        session = h.session_id
    lane = next(e for e in events if isinstance(e, LaneStartedEvent))
    return Recorded(store, session, events[0].task_id, lane.task_id, events, main_ids)


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return _record(tmp_path, [call("look", area="bottom"), call("look", area="top"), answer()])


def test_the_lane_is_a_task_linked_to_the_parents_turn(recorded: Recorded) -> None:
    with RunLog(recorded.store) as log:
        assert [t.id for t in log.tasks()] == [recorded.task]  # lanes are not top-level
        assert log.session(recorded.session).tasks == 1
        [lane] = log.lanes(recorded.task)
        assert lane.id == lane.lane == recorded.lane and lane.is_lane
        assert lane.parent_task_id == recorded.task and lane.parent_turn == 1
        call_id = next(e.call_id for e in recorded.events if e.type == "tool_call")
        assert lane.parent_call_id == call_id
        assert lane.status == "completed" and lane.turns == 3
        assert lane.instruction == "find the blue mug; report its ref and pose"
        types = [e.type for e in log.events(task_id=lane.id)]
        assert types[0] == "lane_started" and types[-2:] == ["done", "handoff"]
        # the parent's events never include the lane's
        assert all(e.task_id == recorded.task for e in log.events(task_id=recorded.task))
        assert log.resolve(lane.id).id == lane.id  # a lane reads like a task by its id
        assert log.resolve("last").id == recorded.task


def test_the_lanes_history_is_kept_apart(recorded: Recorded) -> None:
    with RunLog(recorded.store) as log:
        main = log.accumulated(recorded.session)
        assert [s.id for s in main] == recorded.main_ids
        assert all(s.item.task_id == recorded.task for s in main)
        lane = log.accumulated(recorded.session, lane=recorded.lane)
        assert [s.item.kind for s in lane][:2] == ["instruction", "notice"]
        assert all(s.item.task_id == recorded.lane for s in lane)
        results = [s.item for s in lane if isinstance(s.item, ToolResultItem)]
        assert [r.name for r in results] == ["look", "look"]
        assert log.archive(results[1].archive or "") is not None
        handoff = json.loads(log.archive(f"archive://{recorded.lane}/handoff") or "{}")
        assert handoff["findings"] == FOUND["findings"]


def test_compaction_inside_the_lane_never_touches_the_main_lane(tmp_path: Path) -> None:
    script = [call("scan", area=f"a{i}") for i in range(8)] + [answer()]
    recorded = _record(tmp_path, script, max_turns=12)
    compactions = [
        e
        for e in recorded.events
        if isinstance(e, CompactionEvent)
        and e.status in ("completed", "fallback")
        and e.mode not in ("prune", "supersede")  # each lane drops its own old snapshots
    ]
    assert compactions and all(e.task_id == recorded.lane for e in compactions)
    with RunLog(recorded.store) as log:
        assert [s.id for s in log.accumulated(recorded.session)] == recorded.main_ids
        lane_items = log.accumulated(recorded.session, lane=recorded.lane)
        assert any(s.item.kind == "checkpoint" for s in lane_items)
        lane_states = log.item_states(recorded.session, lane=recorded.lane)
        assert lane_states and not set(lane_states) & {
            s.id for s in log.accumulated(recorded.session)
        }
        view = log.context_at(recorded.lane)
        assert all(row.task_id == recorded.lane for row in view.rows if row.in_context)


def test_harness_context_shows_a_lane(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(recorded.store)
    assert main(["context", recorded.task, "--store", store, "--lane"]) == EXIT_OK
    listed = capsys.readouterr().out
    assert recorded.lane in listed and "completed, 3 turns" in listed
    prefix = recorded.lane[:9]
    assert main(["context", recorded.task, "--store", store, "--lane", prefix]) == EXIT_OK
    out = capsys.readouterr().out
    assert recorded.lane in out and "notice" in out and "look" in out
    assert main(["context", recorded.task, "--store", store, "--lane", "--json"]) == EXIT_OK
    capsys.readouterr()
    argv = ["context", recorded.task, "--store", store, "--lane", recorded.lane, "--json"]
    assert main(argv) == EXIT_OK
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and {row["task_id"] for row in rows if row["in_context"]} == {recorded.lane}
    assert main(["context", recorded.task, "--store", store, "--lane", "lane_nope"]) == EXIT_CONFIG
    assert "not a lane of this task" in capsys.readouterr().err


def test_harness_show_summarises_or_expands_the_lane(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(recorded.store)
    assert main(["show", recorded.task, "--store", store]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"sub-agent lane {recorded.lane}: completed, 3 turns" in out
    assert "a blue mug, ref mug_7" not in out.split("sub-agent lane")[0]
    assert main(["show", recorded.task, "--store", store, "--lanes"]) == EXIT_OK
    expanded = capsys.readouterr().out
    lines = expanded.splitlines()
    nested = [line for line in lines if line.lstrip().startswith("|")]
    assert any("look" in line and "mug_7" in line for line in nested)
    assert any("handoff" in line for line in nested)
    started = next(i for i, line in enumerate(lines) if "sub-agent lane_" in line)
    answered = next(i for i, line in enumerate(lines) if "the mug is mug_7" in line)
    assert started < answered
    assert main(["show", recorded.lane, "--store", store]) == EXIT_OK
    assert "lane_started" not in capsys.readouterr().out


def test_the_report_nests_the_lane_under_its_call(recorded: Recorded) -> None:
    with RunLog(recorded.store) as log:
        page = render_report(log, recorded.task)
    assert page.count('<details class="lane"') == 1
    nested = page.split('<details class="lane"', 1)[1].split("</details>", 1)[0]
    assert recorded.lane in nested and "mug_7" in nested and "handoff" in nested
    before = page.split('<details class="lane"', 1)[0]
    assert "delegate" in before.rsplit("Turn 1", 1)[1]


def test_a_version_2_store_stays_readable(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / STORE_FILENAME
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn, target=2)
    conn.execute("INSERT INTO sessions VALUES ('sess_v2', 1.0, 2.0, '{}', 1, 1, 'elsewhere')")
    conn.execute(
        "INSERT INTO tasks(id, session_id, instruction, status, started_at, ended_at) "
        "VALUES ('task_v2', 'sess_v2', 'old task', 'completed', 1.0, 2.0)"
    )
    item = {
        "kind": "instruction",
        "id": "item_1",
        "task_id": "task_v2",
        "turn": 0,
        "created_at": 1.0,
        "text": "old task",
        "images": [],
    }
    conn.execute(
        "INSERT INTO items(id, session_id, task_id, turn, kind, lifetime, tokens, pos, "
        "created_at, data) VALUES ('item_1', 'sess_v2', 'task_v2', 0, 'instruction', "
        "'accumulated', 4, 1, 1.0, ?)",
        (json.dumps(item),),
    )
    conn.execute(
        "INSERT INTO layouts(session_id, pos, item_ids) VALUES ('sess_v2', 2, '[\"item_1\"]')"
    )
    conn.close()
    with RunLog(tmp_path) as log:
        task = log.resolve("last")
        assert task.id == "task_v2" and task.lane == "" and task.parent_task_id is None
        assert log.lanes(task.id) == []
        assert [s.id for s in log.accumulated("sess_v2")] == ["item_1"]
    conn = sqlite3.connect(path)
    assert schema_version(conn) == SCHEMA_VERSION == 5
    conn.close()
