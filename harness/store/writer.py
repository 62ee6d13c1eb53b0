"""The durable run store: every event, item, exact tool output and image, as it happens.

:class:`SQLiteRunStore` is the durable store (``run.store``): one SQLite file in WAL mode,
each write its own committed transaction, so a robot session that dies at any moment has
lost nothing it recorded, and the CLI can read a running session without ever blocking it.
:class:`~harness.store.memory.MemoryRunStore` keeps a session in memory instead (tests,
throwaway runs). Both redact secrets (API keys, bearer tokens, configured patterns) before
anything is kept.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from harness.context.compaction.archive import ArchiveQuery, query_terms
from harness.errors import RunStoreError
from harness.events import EventBase, ToolResultEvent
from harness.mcp.processes import start_identity
from harness.messages import FORMAT_VERSION, ImagePart, Item
from harness.protocols import ArchiveHit, LaneLink
from harness.redact import Redactor
from harness.store.redacting import RedactingStore
from harness.store.schema import STORE_FILENAME, migrate

__all__ = ["STORE_FILENAME", "SQLiteRunStore", "connect_store"]

BUSY_TIMEOUT_MS = 30_000
"""How long a write waits for another process writing another session to the same file."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def connect_store(path: Path, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """Open (creating if needed) a store file read-write, in WAL mode, migrated to the
    current schema."""
    try:
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    except sqlite3.Error as exc:
        raise RunStoreError(f"cannot open the run store {path}: {exc}") from exc
    if str(mode).lower() != "wal":
        conn.close()
        raise RunStoreError(
            f"run store {path}: SQLite refused WAL mode (got {mode!r}); readers would block "
            "the running harness. Put run.store on a local file system."
        )
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    try:
        migrate(conn, where=str(path))
    except BaseException:
        conn.close()
        raise
    return conn


class SQLiteRunStore(RedactingStore):
    """The durable run store: one SQLite file (``<folder>/runs.db``) in WAL mode.

    Every method is one committed transaction (``synchronous=FULL`` by default, so a commit
    also survives a power cut; about 0.25 ms per write on an SSD). Writes are serialised by
    a lock because a tool running on its worker thread may read the archive (``recall``)
    while the loop writes. Readers in other processes (``harness show``, ``harness runs``)
    see every committed row at once and never block this writer.

    Args:
        folder: The ``run.store`` folder (created if missing).
        redactor: Applied to every string before it is written (built-in shapes, or the
            session's once a Harness adopts the store, when omitted).
        synchronous: ``"FULL"`` (durable across power loss) or ``"NORMAL"`` (durable across
            a process crash only; faster on slow disks).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        redactor: Redactor | None = None,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
    ) -> None:
        self.folder = Path(folder).expanduser()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunStoreError(f"cannot create the run store folder {self.folder}: {exc}") from exc
        self.path = self.folder / STORE_FILENAME
        self._init_redactor(redactor)
        self._conn = connect_store(self.path, synchronous=synchronous)
        self._lock = threading.Lock()
        self._pos = self._max_pos()
        self._host = socket.gethostname()
        self.closed = False

    def __repr__(self) -> str:
        return f"<SQLiteRunStore {self.path}>"

    # ------------------------------------------------------------------ plumbing

    def _max_pos(self) -> int:
        row = self._conn.execute(
            "SELECT MAX(p) FROM ("
            " SELECT MAX(pos) AS p FROM events UNION ALL SELECT MAX(pos) FROM items"
            " UNION ALL SELECT MAX(pos) FROM item_states UNION ALL SELECT MAX(pos) FROM layouts"
            " UNION ALL SELECT MAX(pos) FROM task_notes)"
        ).fetchone()
        return int(row[0] or 0)

    def _write(self, sql: str, params: Sequence[Any]) -> None:
        with self._lock:
            self._check_open()
            self._execute(sql, params)

    def _write_at_next_pos(self, sql: str, params: Sequence[Any]) -> None:
        """A write that takes the next history position (``pos`` is the last parameter)."""
        with self._lock:
            self._check_open()
            self._pos += 1
            self._execute(sql, (*params, self._pos))

    def _execute(self, sql: str, params: Sequence[Any]) -> None:
        """One committed statement; a failure (disk full, file removed) is a named error:
        a harness that can no longer record must not carry on as if it could."""
        try:
            self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise RunStoreError(f"run store {self.path}: write failed: {exc}") from exc

    def _check_open(self) -> None:
        if self.closed:
            raise RunStoreError(f"run store {self.path} is closed")

    # ------------------------------------------------------------------ sessions and tasks

    def open_session(self, session_id: str, *, config: Mapping[str, Any]) -> None:
        now = time.time()
        self._write(
            "INSERT INTO sessions(id, created_at, updated_at, config, format, pid, host, "
            "pid_started) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "updated_at = excluded.updated_at, config = excluded.config, "
            "pid = excluded.pid, host = excluded.host, pid_started = excluded.pid_started",
            (
                session_id,
                now,
                now,
                _dumps(self.redactor.config(dict(config))),
                FORMAT_VERSION,
                os.getpid(),
                self._host,
                start_identity(os.getpid()),
            ),
        )

    def start_task(
        self,
        session_id: str,
        task_id: str,
        instruction: str,
        *,
        lane: str = "",
        parent: LaneLink | None = None,
    ) -> None:
        """Record a task (or a sub-agent lane) as running; for a task id already recorded
        (a resumed task) the row, with its lane and parent link, is kept and its resume
        count goes up."""
        self._write(
            "INSERT INTO tasks(id, session_id, instruction, status, started_at, lane, "
            "parent_task_id, parent_call_id, parent_turn) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "status = 'running', ended_at = NULL, resumes = resumes + 1",
            (
                task_id,
                session_id,
                self.redactor.text(instruction),
                time.time(),
                lane,
                parent.task_id if parent else None,
                parent.call_id if parent else None,
                parent.turn if parent else None,
            ),
        )

    def end_task(
        self,
        task_id: str,
        *,
        status: str,
        reason: str,
        report: str,
        turns: int,
        usage: Mapping[str, Any],
        outcome: str = "unverified",
        evidence: Mapping[str, Any] | None = None,
    ) -> None:
        usage = dict(usage)
        prompt = sum(
            int(usage.get(key) or 0)
            for key in ("input_tokens", "cache_read_tokens", "cache_write_tokens")
        )
        self._write(
            "UPDATE tasks SET status = ?, reason = ?, report = ?, turns = ?, usage = ?, "
            "ended_at = ?, input_tokens = ?, output_tokens = ?, cost_usd = ?, outcome = ?, "
            "evidence = ? WHERE id = ?",
            (
                status,
                self.redactor.text(reason),
                self.redactor.text(report),
                turns,
                _dumps(usage),
                time.time(),
                prompt,
                int(usage.get("output_tokens") or 0),
                usage.get("cost_usd"),
                outcome,
                _dumps(self.redactor.value(dict(evidence or {}))),
                task_id,
            ),
        )

    # ------------------------------------------------------------------ history

    def append_event(self, event: EventBase) -> None:
        data = self.redactor.value(event.model_dump(mode="json"))
        self._write_at_next_pos(
            "INSERT INTO events(session_id, seq, task_id, turn, type, time, call_id, data, pos) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.session_id,
                event.seq,
                event.task_id,
                event.turn,
                data.get("type", ""),
                event.time,
                data.get("call_id"),
                _dumps(data),
            ),
        )

    def put_item(
        self, session_id: str, item: Item, *, lifetime: str, tokens: int, lane: str = ""
    ) -> None:
        """Store an item of a lane's Accumulated at the next position; putting an id again
        updates its content but keeps its position, lane and state."""
        data = self.redactor.value(item.model_dump(mode="json"))
        self._write_at_next_pos(
            "INSERT INTO items(id, session_id, task_id, turn, kind, lifetime, tokens, "
            "created_at, data, lane, pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET data = excluded.data, tokens = excluded.tokens, "
            "lifetime = excluded.lifetime",
            (
                item.id,
                session_id,
                item.task_id,
                item.turn,
                item.kind,
                lifetime,
                tokens,
                item.created_at,
                _dumps(data),
                lane,
            ),
        )

    def tool_results(self, task_id: str) -> list[ToolResultEvent]:
        """The task's ``tool_result`` events in order (``ToolResultLog``)."""
        with self._lock:
            self._check_open()
            rows = self._conn.execute(
                "SELECT data FROM events WHERE task_id = ? AND type = 'tool_result' ORDER BY pos",
                (task_id,),
            ).fetchall()
        return [ToolResultEvent.model_validate_json(row[0]) for row in rows]

    def set_item_state(self, item_id: str, *, state: str, reason: str) -> None:
        """Current state on the item, and the change in its history (``context --turn``)."""
        reason = self.redactor.text(reason)
        with self._lock:
            self._check_open()
            self._pos += 1
            self._execute("BEGIN IMMEDIATE", ())
            try:
                self._execute(
                    "UPDATE items SET state = ?, reason = ? WHERE id = ?", (state, reason, item_id)
                )
                self._execute(
                    "INSERT INTO item_states(item_id, session_id, pos, state, reason) "
                    "SELECT id, session_id, ?, ?, ? FROM items WHERE id = ?",
                    (self._pos, state, reason, item_id),
                )
                self._execute("COMMIT", ())
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def set_accumulated(self, session_id: str, item_ids: Sequence[str], *, lane: str = "") -> None:
        self._write_at_next_pos(
            "INSERT INTO layouts(session_id, item_ids, lane, pos) VALUES (?, ?, ?, ?)",
            (session_id, _dumps(list(item_ids)), lane),
        )

    def put_task_notes(self, session_id: str, task_id: str, notes: Mapping[str, Any]) -> None:
        self._write_at_next_pos(
            "INSERT INTO task_notes(session_id, task_id, data, pos) VALUES (?, ?, ?, ?)",
            (session_id, task_id, _dumps(self.redactor.value(dict(notes)))),
        )

    def put_world_state(
        self, session_id: str, task_id: str, *, turn: int, state: Mapping[str, Any]
    ) -> None:
        """The simulated world's state after a turn (not redacted: poses and joints)."""
        self._write_at_next_pos(
            "INSERT INTO world_states(session_id, task_id, turn, data, pos) VALUES (?, ?, ?, ?, ?)",
            (session_id, task_id, turn, _dumps(dict(state))),
        )

    # ------------------------------------------------------------------ archive and media

    def archive_put(
        self,
        address: str,
        text: str,
        *,
        task_id: str,
        call_id: str,
        tool: str,
        arguments: str = "",
    ) -> None:
        self._write(
            "INSERT OR REPLACE INTO archive(address, task_id, call_id, tool, created_at, text, "
            "arguments) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                address,
                task_id,
                call_id,
                tool,
                time.time(),
                self.redactor.text(text),
                self.redactor.text(arguments),
            ),
        )

    def archive_get(self, address: str, *, session_id: str | None = None) -> str | None:
        """The archived text at ``address``; with ``session_id``, only if the task that
        archived it ran in that session (otherwise None, as for an unknown address)."""
        with self._lock:
            self._check_open()
            if session_id is None:
                row = self._conn.execute(
                    "SELECT text FROM archive WHERE address = ?", (address,)
                ).fetchone()
            else:
                row = self._conn.execute(
                    "SELECT a.text FROM archive AS a JOIN tasks AS t ON t.id = a.task_id "
                    "WHERE a.address = ? AND t.session_id = ?",
                    (address, session_id),
                ).fetchone()
        return None if row is None else str(row[0])

    def archive_search(self, session_id: str, query: str, *, limit: int) -> list[ArchiveHit]:
        """Archived outputs of the session matching ``query``, newest first: the phrase in
        the output, or every word of it in the tool name, arguments or output
        (:func:`harness.context.compaction.archive.archive_hit`)."""
        terms = query_terms(query) or [query.lower()]
        # Every word occurring somewhere is necessary for either rule: SQLite narrows the
        # rows, the exact rule is applied below.
        where = " AND ".join(
            "instr(lower(a.tool || ' ' || a.arguments || ' ' || a.text), ?) > 0" for _ in terms
        )
        hits: list[ArchiveHit] = []
        prepared = ArchiveQuery(query)
        with self._lock:
            self._check_open()
            cursor = self._conn.execute(
                "SELECT a.address, a.task_id, a.tool, a.arguments, a.text FROM archive AS a "
                f"JOIN tasks AS t ON t.id = a.task_id WHERE t.session_id = ? AND ({where}) "
                "ORDER BY a.created_at DESC, a.rowid DESC",
                (session_id, *terms),
            )
            for address, task_id, tool, arguments, text in cursor:
                hit = prepared.hit(tool=str(tool), arguments=str(arguments), text=str(text))
                if hit is None:
                    continue
                hits.append(ArchiveHit(str(address), str(task_id), str(tool), *hit))
                if len(hits) >= limit:
                    break
            cursor.close()
        return hits

    def put_image(self, image: ImagePart) -> None:
        """Stored once per content hash, however many turns show the same frame."""
        self._write(
            "INSERT OR IGNORE INTO images(sha256, media_type, width, height, label, created_at, "
            "data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                image.sha256,
                image.media_type,
                image.width,
                image.height,
                self.redactor.text(image.label),
                time.time(),
                sqlite3.Binary(image.data),
            ),
        )

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._conn.close()
