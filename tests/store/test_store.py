"""The SQLite run store: committed as it happens, readable while written, images once,
the context at every turn exactly as the model saw it, and schema migrations."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.errors import RunStoreError
from harness.events import ObservationEvent, TaskStartedEvent
from harness.messages import InstructionItem
from harness.providers import ScriptedModel, call, reply
from harness.store import STORE_FILENAME, SQLiteRunStore
from harness.store.reader import RunLog
from harness.store.schema import SCHEMA_VERSION, migrate, schema_version
from harness.tools import ToolContext
from tests.recorded import INSTRUCTION_IMAGE, RecordedSession, record_session

HANG_GUARD_S = 60


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordedSession:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return record_session(tmp_path_factory.mktemp("recorded"), monkeypatch)


def test_writes_are_committed_at_once_in_wal_mode(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path)
    try:
        store.open_session("sess_1", config={"run": {"store": str(tmp_path)}})
        store.start_task("sess_1", "task_1", "pick the cube")
        event = TaskStartedEvent(
            session_id="sess_1", task_id="task_1", seq=1, instruction="pick the cube", max_turns=5
        )
        store.append_event(event)
        store.put_item(
            "sess_1",
            InstructionItem(task_id="task_1", text="pick"),
            lifetime="accumulated",
            tokens=3,
        )
        # another connection (as another process would) sees it while the writer is open
        with RunLog(tmp_path) as log:
            assert log.events(task_id="task_1") == [event]
            assert log.task("task_1").status == "running"
            assert [i.item.kind for i in log.items("sess_1")] == ["instruction"]
        conn = sqlite3.connect(tmp_path / STORE_FILENAME)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert schema_version(conn) == SCHEMA_VERSION
        conn.close()
    finally:
        store.close()
    with pytest.raises(RunStoreError, match="closed"):
        store.append_event(event)


def test_images_are_stored_once_and_retention_keeps_every_nth_frame(
    recorded: RecordedSession,
) -> None:
    with RunLog(recorded.store) as log:
        observations = [
            e for e in log.events(session_id=recorded.session_id) if isinstance(e, ObservationEvent)
        ]
        frames = [e.images[0] for e in observations]
        assert len(frames) == len(set(frames)) == 7  # every frame differs
        retained = frames[0::2]  # run.image_retention_every: 2
        for sha in retained:
            image = log.image(sha)
            assert image is not None and image.sha256 == sha and image.width == 64
        assert all(log.image(sha) is None for sha in frames[1::2])
        # the instruction image came with both tasks and is stored once
        assert log.image(INSTRUCTION_IMAGE.sha256) == INSTRUCTION_IMAGE
        assert log.image_count() == len(retained) + 1


def test_context_at_every_turn_is_exactly_what_the_model_saw(recorded: RecordedSession) -> None:
    requests = recorded.model.requests
    with RunLog(recorded.store) as log:
        first = log.task(recorded.first_task)
        for turn in range(1, first.turns + 1):
            view = log.context_at(first.id, turn)
            sent = [item.id for item in requests[turn - 1].items]
            assert [row.id for row in view.rows if row.in_context] == sent, turn
        before = log.context_at(first.id, 4)
        after = log.context_at(first.id, 5)
    # turn 4's result (the long log) is truncated; turn 5 is after the compaction
    truncated = [r for r in log_rows(after) if r.state == "truncated"]
    assert [r.kind for r in truncated] == ["tool_result"]
    folded = [r for r in after.rows if r.state == "summarized"]
    assert folded and not any(r.in_context for r in folded)
    assert all(r.reason.startswith("folded into item_") for r in folded)
    assert {r.id for r in folded} <= {r.id for r in before.rows if r.in_context}
    assert all(r.state == "verbatim" for r in before.rows if r.id in {f.id for f in folded})
    assert any(r.kind == "checkpoint" for r in after.rows if r.in_context)
    # the second task sees the session's Accumulated context (checkpoint included)
    with RunLog(recorded.store) as log:
        second = log.context_at(recorded.second_task)
    assert [r.id for r in second.rows if r.in_context] == [i.id for i in requests[-1].items]


def log_rows(view: Any) -> list[Any]:
    return [row for row in view.rows if row.in_context]


def test_resolving_run_arguments(recorded: RecordedSession) -> None:
    with RunLog(recorded.store) as log:
        assert log.resolve("last").id == recorded.second_task
        assert log.resolve(recorded.session_id).id == recorded.second_task
        assert log.resolve(recorded.first_task).id == recorded.first_task
        assert log.resolve(recorded.first_task[:14]).id == recorded.first_task
        with pytest.raises(RunStoreError, match="ambiguous"):
            log.resolve("task_")
        with pytest.raises(RunStoreError, match="recent tasks"):
            log.resolve("task_nope")


# --------------------------------------------------------------------------- migrations


def _v1_store(folder: Path) -> Path:
    """A store as version 1 of the schema wrote it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / STORE_FILENAME
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn, target=1)
    assert schema_version(conn) == 1
    conn.execute("INSERT INTO sessions VALUES ('sess_old', 1.0, 2.0, '{}', 1, 1, 'elsewhere')")
    usage = {"input_tokens": 100, "cache_read_tokens": 20, "output_tokens": 7, "cost_usd": 0.5}
    conn.execute(
        "INSERT INTO tasks(id, session_id, instruction, status, turns, usage, started_at, "
        "ended_at) VALUES ('task_old', 'sess_old', 'old task', 'completed', 1, ?, 1.0, 2.0)",
        (json.dumps(usage),),
    )
    events = [
        {
            "type": "tool_call",
            "call_id": "call_a",
            "name": "pick",
            "arguments": {},
            "session_id": "sess_old",
            "task_id": "task_old",
            "turn": 1,
            "seq": 1,
            "time": 1.0,
        },
        {
            "type": "tool_result",
            "call_id": "call_a",
            "name": "pick",
            "text": "ok",
            "session_id": "sess_old",
            "task_id": "task_old",
            "turn": 1,
            "seq": 2,
            "time": 1.1,
        },
    ]
    for pos, event in enumerate(events, start=1):
        conn.execute(
            "INSERT INTO events VALUES ('sess_old', ?, ?, 'task_old', 1, ?, ?, ?)",
            (event["seq"], pos, event["type"], event["time"], json.dumps(event)),
        )
    conn.close()
    return path


def test_opening_a_version_1_store_migrates_it_in_place(tmp_path: Path) -> None:
    path = _v1_store(tmp_path)
    store = SQLiteRunStore(tmp_path)
    store.close()
    conn = sqlite3.connect(path)
    assert schema_version(conn) == SCHEMA_VERSION
    row = conn.execute("SELECT input_tokens, output_tokens, cost_usd FROM tasks").fetchone()
    assert row == (120, 7, 0.5)
    assert [r[0] for r in conn.execute("SELECT call_id FROM events ORDER BY seq")] == [
        "call_a",
        "call_a",
    ]
    conn.close()
    with RunLog(tmp_path) as log:
        assert [e.type for e in log.call_events("call_a")] == ["tool_call", "tool_result"]
        assert log.task("task_old").usage.prompt_tokens == 120


def test_a_reader_migrates_an_old_store_before_reading(tmp_path: Path) -> None:
    _v1_store(tmp_path)
    with RunLog(tmp_path) as log:
        assert log.resolve("last").id == "task_old"
        assert [e.type for e in log.call_events("call_a")] == ["tool_call", "tool_result"]


def test_a_store_from_a_newer_harness_is_refused(tmp_path: Path) -> None:
    SQLiteRunStore(tmp_path).close()
    conn = sqlite3.connect(tmp_path / STORE_FILENAME)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(RunStoreError, match="newer than this harness"):
        SQLiteRunStore(tmp_path)
    with pytest.raises(RunStoreError, match="newer than this harness"):
        RunLog(tmp_path)


def test_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunStoreError, match="no run store"):
        RunLog(tmp_path / "nothing")


# --------------------------------------------------------------------------- readers


READER = r"""
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, isolation_level=None)
conn.execute("BEGIN")
count = lambda: conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
print(count(), flush=True)           # a read transaction is now open
sys.stdin.readline()                 # ... and stays open while the harness writes
print(count(), flush=True)           # same snapshot inside the transaction
conn.execute("COMMIT")
print(count(), flush=True)           # everything committed since
"""


def test_a_reader_holding_a_transaction_never_blocks_the_running_harness(
    tmp_path: Path,
) -> None:
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "memory": {"enabled": False},
            "run": {"store": str(tmp_path)},
        }
    )
    reader_ready = threading.Event()

    @tool
    def wait_for_reader(ctx: ToolContext) -> str:
        """Wait until the reader holds its transaction."""
        reader_ready.wait(HANG_GUARD_S)
        return "reader is reading"

    model = ScriptedModel(
        [
            call("wait_for_reader"),
            *[call("update_task_notes", add_notes=[f"n{i}"]) for i in range(5)],
            reply("done"),
        ]
    )
    with Harness.from_config(config, model=model, tools=[wait_for_reader]) as harness:
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(tmp_path / STORE_FILENAME)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert reader.stdout is not None and reader.stdin is not None
            result: dict[str, Any] = {}

            def run() -> None:
                result["run"] = harness.run("write while being read")

            worker = threading.Thread(target=run)
            worker.start()
            first = int(reader.stdout.readline())
            reader_ready.set()
            worker.join(HANG_GUARD_S)
            assert not worker.is_alive()
            assert result["run"].status == "completed"
            reader.stdin.write("continue\n")
            reader.stdin.flush()
            inside, after = int(reader.stdout.readline()), int(reader.stdout.readline())
        finally:
            reader.wait(HANG_GUARD_S)
    assert inside == first  # the reader's snapshot did not move under it
    with RunLog(tmp_path) as log:
        total = len(log.events(session_id=harness.session_id))
    assert after == total > first


def test_a_failed_write_is_a_named_error(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path)
    try:
        conn = sqlite3.connect(tmp_path / STORE_FILENAME)
        conn.execute("DROP TABLE archive")  # what a damaged file looks like to the writer
        conn.commit()
        conn.close()
        with pytest.raises(RunStoreError, match="write failed"):
            store.archive_put("archive://t/c", "x", task_id="t", call_id="c", tool="t")
    finally:
        store.close()
