"""A crash inside a sub-agent: the child wakes as itself, then the parent continues; lanes
left inconsistent are repaired or abandoned with a ``recovery`` event (issue 19, item 5).

A real harness runs in a subprocess with a SQLite store and scripted models (the parent
delegates; the child calls a long ``slow_wait``); the test kills it with SIGKILL while the
child's call runs, once per module. Each test resumes a copy of that store in this
process, some after editing it into the inconsistent states a crash at another moment
would leave.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import Harness
from harness.events import (
    DoneEvent,
    EventBase,
    HandoffEvent,
    RecoveryEvent,
    TaskResumedEvent,
    ToolResultEvent,
)
from harness.messages import ModelRequest, ModelResponse, NoticeItem, ToolResultItem
from harness.providers import ScriptedModel, reply
from harness.store.reader import RunLog
from harness.store.writer import STORE_FILENAME
from tests.fixtures.cli import kill_when_running, scripted_config
from tests.fixtures.parts import MARKER_ENV, AllowAll, FakeSkills
from tests.runtime.test_subagents import FOUND, answer

HANG_GUARD_S = 60
GOAL = "find the blue mug; report its ref and pose"


@dataclass
class Crashed:
    folder: Path
    config: Path
    session: str
    markers: Path


@pytest.fixture(scope="module")
def crashed_once(tmp_path_factory: pytest.TempPathFactory) -> Crashed:
    base = tmp_path_factory.mktemp("crash")
    store, markers = base / "store", base / "markers"
    child_model = {
        "provider": "scripted",
        "name": "child",
        "context_window": 100_000,
        "options": {
            "responses": [
                {"tool": {"name": "update_task_notes", "arguments": {"add_notes": ["top first"]}}},
                {"tool": {"name": "slow_wait", "arguments": {}}},
                {"text": "never reached"},
            ]
        },
    }
    config = scripted_config(
        base / "crash.yaml",
        store,
        [
            {"tool": {"name": "delegate", "arguments": {"goal": GOAL, "tools": ["slow_wait"]}}},
            {"text": "never reached"},
        ],
        tools=["tests.fixtures.parts:slow_wait"],
        subagents={"enabled": True, "model": child_model},
    )
    session, _ = kill_when_running(
        config, "fetch the blue mug", "slow_wait", markers, cwd=base, timeout_s=HANG_GUARD_S
    )
    return Crashed(store, config, session, markers)


@pytest.fixture
def crashed(crashed_once: Crashed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Crashed:
    folder = tmp_path / "store"
    shutil.copytree(crashed_once.folder, folder)
    markers = tmp_path / "markers"
    shutil.copytree(crashed_once.markers, markers)
    monkeypatch.setenv(MARKER_ENV, str(markers))
    return Crashed(folder, crashed_once.config, crashed_once.session, markers)


def _sql(crashed: Crashed, statement: str, params: tuple[Any, ...] = ()) -> None:
    conn = sqlite3.connect(crashed.folder / STORE_FILENAME, isolation_level=None)
    conn.execute(statement, params)
    conn.close()


def _lane(crashed: Crashed) -> Any:
    with RunLog(crashed.folder) as log:
        [lane] = log.lanes(session_id=crashed.session)
        return lane


def _resume(crashed: Crashed, parent: ScriptedModel, child: ScriptedModel) -> Harness:
    from harness.store import SQLiteRunStore

    return Harness.resume(
        crashed.session,
        crashed.config,
        model=parent,
        subagent_model=child,
        store=SQLiteRunStore(crashed.folder),
        safety=AllowAll(),
        skills=FakeSkills(),
        overrides=[f"run.store={crashed.folder}"],
    )


def _recovery(events: list[EventBase]) -> RecoveryEvent:
    [event] = [e for e in events if isinstance(e, RecoveryEvent)]
    return event


def test_the_crash_left_a_running_lane_inside_a_running_task(crashed: Crashed) -> None:
    with RunLog(crashed.folder) as log:
        task = log.resolve(crashed.session)
        assert task.status == "interrupted" and not task.is_lane
        [lane] = log.lanes(task.id)
        assert lane.recorded_status == "running" and lane.status == "interrupted"
        events = log.events(task_id=lane.id)
        assert events[0].type == "lane_started"
        assert events[-1].type == "tool_call" and events[-1].name == "slow_wait"  # type: ignore[union-attr]
        parent_events = log.events(task_id=task.id)
        assert parent_events[-1].type == "tool_call"
        assert parent_events[-1].name == "delegate"  # type: ignore[union-attr]
    assert len(list(crashed.markers.glob("slow_wait-*"))) == 1


def test_resume_wakes_the_child_as_itself_then_the_parent_continues(crashed: Crashed) -> None:
    seen: list[ModelRequest] = []

    def child_answers(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return answer()

    child = ScriptedModel([child_answers])
    parent = ScriptedModel([reply("the mug is mug_7")])
    lane_id = _lane(crashed).id
    with _resume(crashed, parent, child) as h:
        assert h.interrupted_task is not None
        events = list(h.resume_stream())
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "completed"
    assert sum(isinstance(e, DoneEvent) for e in events) == 1
    recovery = _recovery(events)
    assert (recovery.resumed, recovery.repaired, recovery.abandoned) == (1, 0, 0)
    # the child woke with its own history: goal, contract, its notes update, the slow_wait
    # call answered as interrupted (never run again), then the finish-up notice
    [request] = seen
    kinds = [item.kind for item in request.items]
    assert kinds[:2] == ["instruction", "notice"] and request.items[0].text == GOAL
    assert all(item.task_id == lane_id for item in request.items)
    results = [i for i in request.items if isinstance(i, ToolResultItem)]
    assert [(r.name, r.error_kind) for r in results] == [
        ("update_task_notes", None),
        ("slow_wait", "outcome_unknown"),
    ]
    notices = [i.text for i in request.items if isinstance(i, NoticeItem)]
    assert "restarted after a crash" in notices[-1]
    notes = [i.text for i in request.items if i.kind == "task_notes"]
    assert "top first" in notes[-1]  # its own Task Notes, restored
    assert len(list(crashed.markers.glob("slow_wait-*"))) == 1  # never run again
    resumed = [e for e in events if isinstance(e, TaskResumedEvent)]
    assert [e.task_id for e in resumed] == [done.task_id, lane_id]
    # the handoff answered the parent's pending delegate call; the parent saw only it
    [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
    assert handoff.status == "completed" and handoff.handoff["findings"] == FOUND["findings"]
    [result] = [i for i in parent.requests[0].items if isinstance(i, ToolResultItem)]
    assert result.name == "delegate" and json.loads(result.text)["status"] == "completed"
    assert all(item.task_id != lane_id for item in parent.requests[0].items)
    with RunLog(crashed.folder) as log:
        lane = log.task(lane_id)
        assert lane.status == "completed" and lane.resumes == 1
        assert log.task(done.task_id).status == "completed"


def test_a_pending_call_whose_lane_never_started_is_repaired(crashed: Crashed) -> None:
    _sql(crashed, "DELETE FROM tasks WHERE lane != ''")  # as if the crash came before it
    parent = ScriptedModel([reply("I will look myself")])
    with _resume(crashed, parent, ScriptedModel([])) as h:
        events = list(h.resume_stream())
    recovery = _recovery(events)
    assert (recovery.resumed, recovery.repaired, recovery.abandoned) == (0, 1, 0)
    [result] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.name == "delegate" and result.error_kind == "not_executed"
    assert not result.executed and "before the sub-agent started" in result.text
    assert events[-1].status == "completed"  # type: ignore[union-attr]


def test_a_lane_with_no_parent_turn_is_abandoned(crashed: Crashed) -> None:
    lane = _lane(crashed)
    _sql(crashed, "UPDATE tasks SET parent_call_id = 'call_gone' WHERE id = ?", (lane.id,))
    parent = ScriptedModel([reply("done")])
    with _resume(crashed, parent, ScriptedModel([])) as h:
        events = list(h.resume_stream())
    recovery = _recovery(events)
    assert (recovery.resumed, recovery.repaired, recovery.abandoned) == (0, 1, 1)
    assert any("abandoned" in d and "no delegate call call_gone" in d for d in recovery.details)
    with RunLog(crashed.folder) as log:
        closed = log.task(lane.id)
        assert closed.status == "failed" and "abandoned at resume" in closed.reason
        assert log.events(task_id=lane.id)[-1].type == "done"


def test_an_ended_lane_answers_its_call_without_running_again(crashed: Crashed) -> None:
    lane = _lane(crashed)
    done = DoneEvent(
        session_id=crashed.session,
        task_id=lane.id,
        turn=3,
        seq=10_000,
        status="completed",
        termination_reason="the sub-agent answered",
        report=json.dumps(FOUND),
        turns=3,
    )
    conn = sqlite3.connect(crashed.folder / STORE_FILENAME, isolation_level=None)
    pos = conn.execute("SELECT MAX(pos) FROM events").fetchone()[0] + 1
    conn.execute(
        "INSERT INTO events(session_id, seq, pos, task_id, turn, type, time, data) "
        "VALUES (?, ?, ?, ?, ?, 'done', ?, ?)",
        (crashed.session, done.seq, pos, lane.id, 3, done.time, done.model_dump_json()),
    )
    conn.execute("UPDATE tasks SET status = 'completed', turns = 3 WHERE id = ?", (lane.id,))
    conn.close()
    child = ScriptedModel([])
    parent = ScriptedModel([reply("the mug is mug_7")])
    with _resume(crashed, parent, child) as h:
        events = list(h.resume_stream())
    assert child.requests == []
    recovery = _recovery(events)
    assert (recovery.resumed, recovery.repaired, recovery.abandoned) == (0, 1, 0)
    [result] = [i for i in parent.requests[0].items if isinstance(i, ToolResultItem)]
    handoff = json.loads(result.text)
    assert handoff["status"] == "completed" and handoff["findings"] == FOUND["findings"]


def test_a_lane_whose_parent_ended_is_abandoned(crashed: Crashed) -> None:
    lane = _lane(crashed)
    _sql(crashed, "UPDATE tasks SET status = 'failed' WHERE lane = ''")
    with _resume(crashed, ScriptedModel([]), ScriptedModel([])) as h:
        assert h.interrupted_task is None
    with RunLog(crashed.folder) as log:
        assert log.task(lane.id).status == "failed"
        recovery = log.events(session_id=crashed.session, types=["recovery"])
        assert len(recovery) == 1 and recovery[0].abandoned == 1  # type: ignore[union-attr]
        assert "its parent task had ended" in recovery[0].details[0]  # type: ignore[union-attr]
