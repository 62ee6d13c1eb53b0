"""Schema version 4 was written by two branches before they merged: sub-agent lanes
(issue 19, on main) and the archived calls' arguments (issue 17). A store at version 4
with either half alone is completed on open, by the writer and by a reader, and keeps
every row it had."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.protocols import LaneLink
from harness.store import STORE_FILENAME, SQLiteRunStore
from harness.store.reader import RunLog
from harness.store.schema import SCHEMA_VERSION, migrate, needs_migration, schema_version

LANE_HALF = [
    "ALTER TABLE tasks ADD COLUMN lane TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE tasks ADD COLUMN parent_task_id TEXT",
    "ALTER TABLE tasks ADD COLUMN parent_call_id TEXT",
    "ALTER TABLE tasks ADD COLUMN parent_turn INTEGER",
    "ALTER TABLE items ADD COLUMN lane TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE layouts ADD COLUMN lane TEXT NOT NULL DEFAULT ''",
]
ARGUMENTS_HALF = ["ALTER TABLE archive ADD COLUMN arguments TEXT NOT NULL DEFAULT ''"]


def half_v4_store(folder: Path, statements: list[str]) -> Path:
    """A store as one branch wrote it at version 4, with one task and one archived output."""
    path = folder / STORE_FILENAME
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn, target=3)
    for statement in statements:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 4")
    conn.execute("INSERT INTO sessions VALUES ('sess_old', 1.0, 2.0, '{}', 1, 1, 'elsewhere')")
    conn.execute(
        "INSERT INTO tasks(id, session_id, instruction, status, started_at, ended_at) "
        "VALUES ('task_old', 'sess_old', 'read the log', 'completed', 1.0, 2.0)"
    )
    conn.execute(
        "INSERT INTO archive(address, task_id, call_id, tool, created_at, text) VALUES "
        "('archive://task_old/call_1', 'task_old', 'call_1', 'read_log', 1.5, 'fault E-4411')"
    )
    conn.close()
    return path


def columns(path: Path, table: str) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    finally:
        conn.close()


@pytest.mark.parametrize("half", ["lanes (main)", "arguments (fidelity)"])
@pytest.mark.parametrize("opener", ["writer", "reader"])
def test_a_version_4_store_with_one_half_is_completed_on_open(
    tmp_path: Path, half: str, opener: str
) -> None:
    path = half_v4_store(tmp_path, LANE_HALF if half.startswith("lanes") else ARGUMENTS_HALF)
    conn = sqlite3.connect(path)
    assert schema_version(conn) == 4 and needs_migration(conn)
    conn.close()
    if opener == "reader":
        with RunLog(tmp_path) as log:
            task = log.task("task_old")
            assert task.lane == "" and task.parent_task_id is None
            assert log.archive("archive://task_old/call_1") == "fault E-4411"
    store = SQLiteRunStore(tmp_path)
    try:
        assert "arguments" in columns(path, "archive")
        assert {"lane", "parent_task_id", "parent_call_id", "parent_turn"} <= columns(path, "tasks")
        assert "lane" in columns(path, "items") and "lane" in columns(path, "layouts")
        # the old rows are there, and both halves work
        [old] = store.archive_search("sess_old", "E-4411", limit=5)
        assert old.address == "archive://task_old/call_1"
        store.start_task(
            "sess_old", "lane_1", "look", lane="lane_1", parent=LaneLink("task_old", "c", 1)
        )
        store.archive_put(
            "archive://lane_1/call_2",
            "nothing here",
            task_id="lane_1",
            call_id="call_2",
            tool="read_log",
            arguments='{"index": 7}',
        )
        [hit] = store.archive_search("sess_old", "read_log index 7", limit=5)
        assert hit.address == "archive://lane_1/call_2"
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert schema_version(conn) == SCHEMA_VERSION and not needs_migration(conn)
    conn.close()
    with RunLog(tmp_path) as log:
        assert [lane.id for lane in log.lanes("task_old")] == ["lane_1"]


def test_a_complete_store_is_left_as_it_is(tmp_path: Path) -> None:
    SQLiteRunStore(tmp_path).close()
    path = tmp_path / STORE_FILENAME
    conn = sqlite3.connect(path)
    assert not needs_migration(conn)
    before = conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    conn.close()
    SQLiteRunStore(tmp_path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == before
    conn.close()
