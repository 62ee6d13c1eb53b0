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

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

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


def _script(sql: str) -> Callable[[sqlite3.Connection], None]:
    def apply(conn: sqlite3.Connection) -> None:
        for statement in sql.split(";\n"):
            if statement.strip():
                conn.execute(statement)

    return apply


def _v4(conn: sqlite3.Connection) -> None:
    """Version 4: the arguments of the call whose output is archived, so ``search_archive``
    finds an exchange by tool name and arguments ("read_sensor_log index 7"). Written to
    apply to a store that already has the column (one rolled back by hand) as well."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(archive)")}
    if "arguments" not in columns:
        conn.execute("ALTER TABLE archive ADD COLUMN arguments TEXT NOT NULL DEFAULT ''")
    conn.execute("CREATE INDEX IF NOT EXISTS archive_by_task ON archive(task_id, created_at)")


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _script(_V1),
    2: _script(_V2),
    3: _script(_V3),
    4: _v4,
}
"""Version -> the step that upgrades a store from the version below it."""

SCHEMA_VERSION = max(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, *, target: int = SCHEMA_VERSION, where: str = "") -> int:
    """Bring the store up to ``target``; returns the version it had before.

    Each step runs in one immediate transaction together with its version bump, so a crash
    mid-migration leaves the previous version intact. ``conn`` must be in autocommit mode.
    """
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise RunStoreError(
            f"run store {where or '(database)'} has schema version {current}, newer than this "
            f"harness understands ({SCHEMA_VERSION}); upgrade embodied-harness to read it"
        )
    for version in range(current + 1, target + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= version:  # another process migrated meanwhile
                conn.execute("COMMIT")
                continue
            MIGRATIONS[version](conn)
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return current
