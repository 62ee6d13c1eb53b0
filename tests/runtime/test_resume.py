"""A harness killed with SIGKILL mid-task loses nothing, and resume continues the task.

The child process runs a real Harness with a SQLite run store and a scripted model; its
physical tool blocks (a long motion). The test kills the process while the tool runs,
checks the store against what the child had already streamed, then resumes the session in
this process (and through the `harness resume` console script) and checks the interrupted
call is reported as outcome unknown and never run again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import Harness
from harness.errors import RunStoreError
from harness.events import DoneEvent, EventBase, TaskResumedEvent, parse_event
from harness.mcp.processes import start_identity
from harness.messages import AssistantItem, ModelRequest, ModelResponse, ToolResultItem
from harness.providers import ScriptedModel, reply
from harness.store.reader import RunLog
from tests.fixtures.cli import HARNESS_BIN, child_env, kill_when_running, scripted_config
from tests.fixtures.parts import MARKER_ENV, AllowAll, FakeSkills

HANG_GUARD_S = 60


def _write_config(path: Path, store: Path, responses: list[dict[str, Any]]) -> Path:
    return scripted_config(path, store, responses, tools=["tests.fixtures.parts:slow_move"])


CRASH_SCRIPT = [
    {"tool": {"name": "update_task_notes", "arguments": {"add_notes": ["tray is left"]}}},
    {"tool": {"name": "load_skill", "arguments": {"name": "careful_motion"}}},
    {"text": "moving now", "tool": {"name": "slow_move", "arguments": {"x": 0.25}}},
    {"text": "never reached"},
]


def _crash_mid_task(tmp_path: Path) -> tuple[Path, Path, str, list[str]]:
    """Start the child, wait until slow_move is running, SIGKILL it.

    Returns (store, config, session id, event lines the child printed before the kill).
    """
    store = tmp_path / "store"
    markers = tmp_path / "markers"
    config = _write_config(tmp_path / "crash.yaml", store, CRASH_SCRIPT)
    session_id, lines = kill_when_running(
        config, "stack the cubes", "slow_move", markers, cwd=tmp_path, timeout_s=HANG_GUARD_S
    )
    return store, markers, session_id, lines


@pytest.fixture
def crashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    store, markers, session_id, lines = _crash_mid_task(tmp_path)
    monkeypatch.setenv(MARKER_ENV, str(markers))
    return {"store": store, "markers": markers, "session": session_id, "lines": lines}


def test_sigkill_loses_no_event_and_resume_continues_the_task(
    crashed: dict[str, Any], tmp_path: Path
) -> None:
    store: Path = crashed["store"]
    printed = [parse_event(line) for line in crashed["lines"]]

    # ---- every event the child had streamed is in the store, exactly, with no gap
    with RunLog(store) as log:
        task = log.resolve(crashed["session"])
        stored = log.events(task_id=task.id)
        assert task.status == "interrupted" and task.recorded_status == "running"
        by_seq = {e.seq: e for e in stored}
        for event in printed:
            assert by_seq[event.seq] == event
        assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
        assert stored[-1].type == "tool_call" and stored[-1].name == "slow_move"  # type: ignore[union-attr]
        before_seq = stored[-1].seq
    assert len(list(crashed["markers"].glob("slow_move-*"))) == 1

    # ---- resume in this process: a fresh model continues the same task
    seen: list[ModelRequest] = []

    def responder(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return reply("the arm stopped somewhere; I observed and the task is done")

    config = tmp_path / "crash.yaml"
    with Harness.resume(
        crashed["session"],
        config,
        model=ScriptedModel(responder=responder),
        safety=AllowAll(),
        skills=FakeSkills(),
    ) as harness:
        assert harness.session_id == crashed["session"]
        assert harness.interrupted_task == task.id
        notes = harness.task_notes.render()
        assert "tray is left" in notes
        events: list[EventBase] = list(harness.resume_stream())

    resumed = events[0]
    assert isinstance(resumed, TaskResumedEvent)
    assert resumed.task_id == task.id and resumed.from_turn == 4
    assert resumed.interrupted_calls == [
        {"call_id": resumed.interrupted_calls[0]["call_id"], "name": "slow_move", "started": True}
    ]
    assert events[0].seq == before_seq + 1  # the session's sequence continues
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "completed" and done.turns == 4
    assert done.usage.requests == 4  # three before the crash, one after

    request = seen[0]
    kinds = [item.kind for item in request.items]
    assert kinds[0] == "instruction"
    decisions = [i for i in request.items if isinstance(i, AssistantItem)]
    results = [i for i in request.items if isinstance(i, ToolResultItem)]
    assert [d.tool_calls[0].name for d in decisions] == [
        "update_task_notes",
        "load_skill",
        "slow_move",
    ]
    interrupted = results[-1]
    assert interrupted.call_id == decisions[-1].tool_calls[0].id
    assert interrupted.is_error and interrupted.error_kind == "outcome_unknown"
    assert "interrupted, outcome unknown" in interrupted.text
    assert any(block.name == "skill:careful_motion" for block in request.system)
    notes_items = [i for i in request.items if i.kind == "task_notes"]
    assert "slow_move: error outcome_unknown" in notes_items[-1].text
    assert "tray is left" in notes_items[-1].text
    # never silently re-executed
    assert len(list(crashed["markers"].glob("slow_move-*"))) == 1

    with RunLog(store) as log:
        task = log.task(task.id)
        assert task.status == "completed" and task.resumes == 1 and task.turns == 4
        assert log.archive(interrupted.archive or "") == interrupted.text


def test_resume_through_the_console_script(crashed: dict[str, Any], tmp_path: Path) -> None:
    config = _write_config(
        tmp_path / "resume.yaml", crashed["store"], [{"text": "checked the arm; done"}]
    )
    result = subprocess.run(
        [str(HARNESS_BIN), "resume", crashed["session"], "--config", str(config), "--json"],
        cwd=tmp_path,
        env=child_env(crashed["markers"]),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert result.returncode == 0, result.stderr
    events = [parse_event(line) for line in result.stdout.splitlines()]
    assert events[0].type == "task_resumed"
    outcome = next(e for e in events if e.type == "tool_result")
    assert outcome.name == "slow_move" and outcome.error_kind == "outcome_unknown"  # type: ignore[union-attr]
    assert events[-1].type == "done" and events[-1].status == "completed"  # type: ignore[union-attr]
    assert len(list(crashed["markers"].glob("slow_move-*"))) == 1

    # nothing left to resume: says so, exit code of the last task (completed)
    again = subprocess.run(
        [str(HARNESS_BIN), "resume", crashed["session"], "--store", str(crashed["store"])],
        cwd=tmp_path,
        env=child_env(crashed["markers"]),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert again.returncode == 0, again.stderr
    assert "no interrupted task" in again.stdout


def test_a_call_decided_but_never_started_is_reported_not_executed(tmp_path: Path) -> None:
    """Crash between the model's decision and the tool's start (here: the stream is
    abandoned right after the decision, like a process that died there)."""
    store = tmp_path / "store"
    config = _write_config(
        tmp_path / "c.yaml", store, [{"tool": {"name": "slow_move", "arguments": {"x": 0.1}}}]
    )
    harness = Harness.from_config(config, safety=AllowAll())
    stream = harness.run_stream("move")
    for event in stream:
        if event.type == "model_response":
            break
    # simulate the crash: mark the process as gone by taking the task slot away unfinished
    session_id = harness.session_id
    harness.store.close()
    seen: list[ModelRequest] = []

    def responder(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return reply("done")

    with Harness.resume(
        session_id, config, model=ScriptedModel(responder=responder), safety=AllowAll()
    ) as resumed:
        events = list(resumed.resume_stream())
    first = events[0]
    assert isinstance(first, TaskResumedEvent)
    assert first.interrupted_calls[0]["started"] is False
    result = next(i for i in seen[0].items if isinstance(i, ToolResultItem))
    assert result.error_kind == "not_executed"
    assert not (tmp_path / "markers").exists()


def test_resume_refuses_a_session_whose_process_is_alive(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = _write_config(tmp_path / "c.yaml", store, [{"text": "hi"}])
    with Harness.from_config(config) as harness:
        harness.run("hello")
        session_id = harness.session_id
    with RunLog(store) as log:
        assert log.session(session_id).pid == os.getpid()
    # pretend another live process (this test's parent) owns the session
    import sqlite3

    conn = sqlite3.connect(store / "runs.db")
    conn.execute(
        "UPDATE sessions SET pid = ?, pid_started = ? WHERE id = ?",
        (os.getppid(), start_identity(os.getppid()), session_id),
    )
    conn.commit()
    conn.close()
    with pytest.raises(RunStoreError, match="still running in process"):
        Harness.resume(session_id, config)
    with pytest.raises(RunStoreError, match="no session"):
        Harness.resume("sess_missing", config)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="process identity needs /proc")
def test_a_crashed_writers_number_taken_by_another_process_does_not_block_resume(
    tmp_path: Path,
) -> None:
    """The kernel hands a crashed writer's pid to the next process that needs one. Judged
    by the number alone, the session read as running, its task never as interrupted, and
    resume was refused "still running" for as long as the stranger lived. The oracle is
    the operating system's own: a live process that is not the one that wrote the row."""
    import sqlite3

    store = tmp_path / "store"
    config = _write_config(tmp_path / "c.yaml", store, [{"text": "hi"}])
    with Harness.from_config(config) as harness:
        harness.run("hello")
        session_id = harness.session_id
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert start_identity(stranger.pid) != start_identity(os.getpid())
        conn = sqlite3.connect(store / "runs.db")
        # The row as a crashed writer leaves it: its task running, its number now the
        # stranger's, its identity its own (this process's stands in for the dead one's).
        conn.execute("UPDATE sessions SET pid = ? WHERE id = ?", (stranger.pid, session_id))
        conn.execute("UPDATE tasks SET status = 'running' WHERE session_id = ?", (session_id,))
        conn.commit()
        conn.close()
        with RunLog(store) as log:
            assert [t.status for t in log.tasks(session_id=session_id)] == ["interrupted"]
        with Harness.resume(session_id, config) as resumed:  # not refused
            assert resumed.session_id == session_id
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait(5)


def test_a_resumed_session_has_the_context_it_had(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Accumulated items, their states and the items compaction folded away come back;
    with no interrupted task, new tasks simply continue the session."""
    from tests.recorded import record_session

    recorded = record_session(tmp_path, monkeypatch)
    last_request = recorded.model.requests[-1]
    seen: list[ModelRequest] = []

    def responder(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return reply("still here")

    with Harness.resume(
        recorded.session_id, recorded.config, model=ScriptedModel(responder=responder)
    ) as harness:
        assert harness.interrupted_task is None
        restored = harness.context.accumulated
        assert [i.id for i in restored[:-1]] == [i.id for i in last_request.items]
        assert isinstance(restored[-1], AssistantItem) and restored[-1].text == "hello again"
        rows = {row["id"]: row for row in harness.context_report()}
        folded = [r for r in rows.values() if r["state"] == "summarized"]
        assert folded and all(not r["in_context"] and r["kind"] for r in folded)
        assert any(r["state"] == "truncated" and r["in_context"] for r in rows.values())
        with pytest.raises(RunStoreError, match="no interrupted task"):
            harness.resume_stream()
        result = harness.run("anything new?")
    assert result.status == "completed"
    # Issue 17: a new task carries the ended tasks' prose verbatim (same items, same
    # order) and their tool traffic only through the checkpoint's index (this asserted
    # the new task's request began with every item of the last one).
    carried = [i.id for i in seen[0].items]
    prose = [i.id for i in last_request.items if i.kind == "instruction"]
    prose += [
        i.id
        for i in last_request.items
        if isinstance(i, AssistantItem) and i.text and not i.tool_calls
    ]
    assert prose and all(item_id in carried for item_id in prose)
    assert [i for i in carried if i in prose] == [i.id for i in last_request.items if i.id in prose]
    assert not [i for i in seen[0].items if i.kind == "tool_result"]
    [checkpoint] = [i for i in seen[0].items if i.kind == "checkpoint"]
    with RunLog(recorded.store) as log:
        pages = "\n".join(log.archive(page.address) or "" for page in checkpoint.source.index)
    for item in last_request.items:
        if item.kind == "tool_result":
            assert item.archive in checkpoint.text or item.archive in pages


def test_a_turn_that_died_before_its_decision_runs_again(tmp_path: Path) -> None:
    """Crash during the model call of turn 2: the resumed task redoes turn 2."""
    store = tmp_path / "store"
    config = _write_config(
        tmp_path / "c.yaml",
        store,
        [{"tool": {"name": "update_task_notes", "arguments": {"phase": "one"}}}, {"text": "x"}],
    )
    harness = Harness.from_config(config)
    stream = harness.run_stream("two turns")
    for event in stream:
        if event.type == "prompt_snapshot" and event.turn == 2:
            break  # the process "dies" while the model thinks about turn 2
    session_id = harness.session_id
    harness.store.close()
    with Harness.resume(
        session_id, config, model=ScriptedModel([reply("done on the second try")])
    ) as resumed:
        events = list(resumed.resume_stream())
    first = events[0]
    assert isinstance(first, TaskResumedEvent)
    assert first.from_turn == 2 and first.interrupted_calls == []
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.turns == 2 and done.status == "completed"
    with RunLog(store) as log:
        snapshots = log.events(task_id=done.task_id, types=["prompt_snapshot"])
    assert [e.turn for e in snapshots] == [1, 2, 2]  # the lost attempt stays on record
