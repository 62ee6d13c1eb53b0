"""The run store's SQLite schema, versioned, with the migrations between versions.

The version lives in ``PRAGMA user_version``. Opening a store applies every migration
above the file's version, in order, each in its own transaction, so a store written by an
older harness is upgraded in place and one written by a newer harness is refused with a
clear message instead of being misread.

Positions: every row that belongs to the ordered history of a session (events, items,
item-state changes, Accumulated layouts, Task Notes snapshots, world states) carries ``pos``, a
store-wide increasing counter. Rebuilding the context as it was at any event is a matter
of reading rows with ``pos`` at or below that event's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from harness.errors import RunStoreError

STORE_FILENAME = "runs.db"
"""The SQLite file inside the ``run.store`` folder (here, not in the writer, so a reader
finds it without importing the writer and what the writer imports)."""

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STORE_FILENAME",
    "migrate",
    "needs_migration",
    "schema_version",
]

_V1 = """
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    config      TEXT NOT NULL,
    format      INTEGER NOT NULL,
    pid         INTEGER,
    host        TEXT
);
CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    instruction TEXT NOT NULL,
    status      TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    report      TEXT NOT NULL DEFAULT '',
    turns       INTEGER NOT NULL DEFAULT 0,
    usage       TEXT NOT NULL DEFAULT '{}',
    started_at  REAL NOT NULL,
    ended_at    REAL,
    resumes     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX tasks_by_session ON tasks(session_id, started_at);
CREATE TABLE events (
    session_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    pos         INTEGER NOT NULL,
    task_id     TEXT NOT NULL,
    turn        INTEGER NOT NULL,
    type        TEXT NOT NULL,
    time        REAL NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_by_task ON events(task_id, pos);
CREATE TABLE items (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    turn        INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    lifetime    TEXT NOT NULL,
    tokens      INTEGER NOT NULL,
    state       TEXT NOT NULL DEFAULT 'verbatim',
    reason      TEXT NOT NULL DEFAULT '',
    pos         INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    data        TEXT NOT NULL
);
CREATE INDEX items_by_session ON items(session_id, pos);
CREATE TABLE item_states (
    item_id     TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    pos         INTEGER NOT NULL,
    state       TEXT NOT NULL,
    reason      TEXT NOT NULL
);
CREATE INDEX item_states_by_session ON item_states(session_id, pos);
CREATE TABLE layouts (
    session_id  TEXT NOT NULL,
    pos         INTEGER NOT NULL,
    item_ids    TEXT NOT NULL
);
CREATE INDEX layouts_by_session ON layouts(session_id, pos);
CREATE TABLE task_notes (
    session_id  TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    pos         INTEGER NOT NULL,
    data        TEXT NOT NULL
);
CREATE INDEX task_notes_by_task ON task_notes(task_id, pos);
CREATE TABLE archive (
    address     TEXT PRIMARY KEY,
    task_id     TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    created_at  REAL NOT NULL,
    text        TEXT NOT NULL
);
CREATE TABLE images (
    sha256      TEXT PRIMARY KEY,
    media_type  TEXT NOT NULL,
    width       INTEGER NOT NULL,
    height      INTEGER NOT NULL,
    label       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    data        BLOB NOT NULL
);
"""

_V2 = """
ALTER TABLE events ADD COLUMN call_id TEXT;
UPDATE events SET call_id = json_extract(data, '$.call_id')
    WHERE type IN ('tool_call', 'tool_result', 'evaluation', 'safety_check', 'hook_decision');
CREATE INDEX events_by_call ON events(call_id) WHERE call_id IS NOT NULL;
ALTER TABLE tasks ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN cost_usd REAL;
UPDATE tasks SET
    input_tokens = COALESCE(json_extract(usage, '$.input_tokens'), 0)
        + COALESCE(json_extract(usage, '$.cache_read_tokens'), 0)
        + COALESCE(json_extract(usage, '$.cache_write_tokens'), 0),
    output_tokens = COALESCE(json_extract(usage, '$.output_tokens'), 0),
    cost_usd = json_extract(usage, '$.cost_usd');
"""
"""Version 2: tool-call ids as a column (resume finds calls without a result by index) and
token and cost totals as columns (``harness runs`` sums them without parsing JSON)."""


_V3 = """
ALTER TABLE tasks ADD COLUMN outcome TEXT NOT NULL DEFAULT 'unverified';
ALTER TABLE tasks ADD COLUMN evidence TEXT NOT NULL DEFAULT '{}';
UPDATE tasks SET outcome = COALESCE((
    SELECT json_extract(e.data, '$.outcome') FROM events e
    WHERE e.task_id = tasks.id AND e.type = 'done' ORDER BY e.pos DESC LIMIT 1
), 'unverified');
CREATE TABLE world_states (
    session_id  TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    turn        INTEGER NOT NULL,
    pos         INTEGER NOT NULL,
    data        TEXT NOT NULL
);
CREATE INDEX world_states_by_task ON world_states(task_id, pos)
"""
"""Version 3: each task's outcome (achieved, not_achieved, unverified) and its evidence as
columns (tasks ended by an older harness read their done event, which had none:
unverified), and the simulated world's state after each turn (resume restores it)."""


_V4_COLUMNS = (
    ("tasks", "lane", "TEXT NOT NULL DEFAULT ''"),
    ("tasks", "parent_task_id", "TEXT"),
    ("tasks", "parent_call_id", "TEXT"),
    ("tasks", "parent_turn", "INTEGER"),
    ("items", "lane", "TEXT NOT NULL DEFAULT ''"),
    ("layouts", "lane", "TEXT NOT NULL DEFAULT ''"),
    ("archive", "arguments", "TEXT NOT NULL DEFAULT ''"),
)
_V4_INDEXES = """
CREATE INDEX IF NOT EXISTS tasks_by_parent ON tasks(parent_task_id)
    WHERE parent_task_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_by_lane ON items(session_id, lane, pos);
CREATE INDEX IF NOT EXISTS layouts_by_lane ON layouts(session_id, lane, pos);
CREATE INDEX IF NOT EXISTS archive_by_task ON archive(task_id, created_at)
"""


def _v4(conn: sqlite3.Connection) -> None:
    """Version 4: sub-agent lanes, and the arguments of archived calls.

    A lane is a task whose ``lane`` is its own id, linked to the parent's turn
    (``parent_task_id``, ``parent_call_id``, ``parent_turn``; NULL for a lane a control
    script started directly); its items and layouts carry the lane id, so each lane's
    Accumulated history is rebuilt apart from the main lane's (``lane = ''``, every row an
    older store has). The archive keeps the arguments of the call whose output it holds,
    so ``search_archive`` finds an exchange by tool name and arguments ("read_sensor_log
    index 7"; '' for older rows).

    A column that is already there is left alone: a store whose version number was wound
    back keeps its data, and a store at version 4 with only one half of it (the two halves
    were separate version-4 steps on two branches before they merged) is completed by
    :func:`migrate` on open."""
    for table, column, kind in _V4_COLUMNS:
        if column not in _columns(conn, table):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    _script(_V4_INDEXES)(conn)


def _v4_incomplete(conn: sqlite3.Connection) -> bool:
    return any(column not in _columns(conn, table) for table, column, _ in _V4_COLUMNS)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _v5(conn: sqlite3.Connection) -> None:
    """Version 5: which process wrote a session, beyond its number (``pid_started``: the
    boot's id and the process's start tick). The kernel hands a number out again once its
    process is gone, so a session whose writer crashed could read as still running; sessions
    an older harness wrote (NULL) are judged by the number alone, as before. A column that
    is already there is left alone (a store whose version number was wound back)."""
    if "pid_started" not in _columns(conn, "sessions"):
        conn.execute("ALTER TABLE sessions ADD COLUMN pid_started TEXT")


def _script(sql: str) -> Callable[[sqlite3.Connection], None]:
    def apply(conn: sqlite3.Connection) -> None:
        for statement in sql.split(";\n"):
            if statement.strip():
                conn.execute(statement)

    return apply


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _script(_V1),
    2: _script(_V2),
    3: _script(_V3),
    4: _v4,
    5: _v5,
}
"""Version -> the step that upgrades a store from the version below it."""

SCHEMA_VERSION = max(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, *, target: int = SCHEMA_VERSION, where: str = "") -> int:
    """Bring the store up to ``target``; returns the version it had before.

    Each step runs in one immediate transaction together with its version bump, so a crash
    mid-migration leaves the previous version intact. ``conn`` must be in autocommit mode.
    A store at version 4 or above that lacks part of version 4 (see :func:`_v4`) gets
    what is missing first.
    """
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise RunStoreError(
            f"run store {where or '(database)'} has schema version {current}, newer than this "
            f"harness understands ({SCHEMA_VERSION}); upgrade embodied-harness to read it"
        )
    if current >= 4 and _v4_incomplete(conn):
        _apply(conn, 4, bump=False)
    for version in range(current + 1, target + 1):
        _apply(conn, version, bump=True)
    return current


def needs_migration(conn: sqlite3.Connection) -> bool:
    """Whether :func:`migrate` has anything to do on this store (False for a store newer
    than this harness, which it refuses)."""
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        return False
    return version < SCHEMA_VERSION or (version >= 4 and _v4_incomplete(conn))


def _apply(conn: sqlite3.Connection, version: int, *, bump: bool) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        if bump and schema_version(conn) >= version:  # another process migrated meanwhile
            conn.execute("COMMIT")
            return
        MIGRATIONS[version](conn)
        if bump:
            conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
