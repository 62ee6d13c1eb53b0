"""Reading a run store: sessions, tasks, their events, and the context as it was at any turn.

:class:`RunLog` opens the store's SQLite file read-only (WAL readers never block the
harness that is writing it), so the CLI can follow a running session, and
:meth:`harness.Harness.resume` rebuilds a crashed one from the same queries.

A RUN argument (``harness show RUN``) is a task id, a session id (its latest task),
``last`` (the latest task in the store), or a unique prefix of a task or session id.
"Task" there means a top-level task: sub-agent lanes are listed under the task whose turn
they worked for (:meth:`RunLog.lanes`), and are read like tasks by their own id.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from harness.config import secret_sources
from harness.context.introspection import ContextRow as IntrospectionRow
from harness.context.introspection import EpisodeRow
from harness.errors import RunNotFoundError, RunStoreError
from harness.events import (
    EpisodeEvent,
    Event,
    OutcomeEvidence,
    PromptSnapshotEvent,
    TaskOutcome,
    parse_event,
)
from harness.mcp.processes import is_alive
from harness.messages import ImagePart, Item, Usage
from harness.redact import Redactor, check_pattern
from harness.store.schema import SCHEMA_VERSION, needs_migration, schema_version
from harness.store.writer import STORE_FILENAME, connect_store

__all__ = [
    "ContextRow",
    "ContextView",
    "RunLog",
    "StoredItem",
    "StoredSession",
    "StoredTask",
    "process_alive",
]

_item_adapter: TypeAdapter[Item] = TypeAdapter(Item)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class StoredSession(_Record):
    id: str
    created_at: float
    updated_at: float
    pid: int | None = None
    host: str | None = None
    tasks: int = 0
    config: dict[str, Any] = {}


class StoredTask(_Record):
    """One task as recorded; ``status`` is ``interrupted`` for a task left running by a
    process that no longer exists (a crash: ``harness resume`` continues it)."""

    id: str
    session_id: str
    instruction: str
    status: str
    recorded_status: str
    reason: str = ""
    report: str = ""
    turns: int = 0
    usage: Usage = Usage()
    started_at: float
    ended_at: float | None = None
    resumes: int = 0
    pid: int | None = None
    outcome: TaskOutcome = "unverified"
    """Whether the goal was met (``achieved``, ``not_achieved``, ``unverified``)."""
    evidence: OutcomeEvidence = OutcomeEvidence()
    lane: str = ""
    """A sub-agent lane's own id ("" for a main-lane task)."""
    parent_task_id: str | None = None
    parent_call_id: str | None = None
    parent_turn: int | None = None
    """The parent turn a lane worked for (None for a task, or a lane a control script
    started directly)."""

    @property
    def duration_s(self) -> float | None:
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def is_lane(self) -> bool:
        return bool(self.lane)


class StoredItem(_Record):
    item: Item
    pos: int
    lifetime: str
    tokens: int
    state: str
    reason: str

    @property
    def id(self) -> str:
        return self.item.id


class ContextRow(IntrospectionRow):
    """One item's context state at a turn (``harness context RUN --turn N``): the row of
    ``Harness.context_report()`` as recorded, plus a one-line preview of the item."""

    preview: str = ""


class ContextView(_Record):
    task_id: str
    turn: int
    snapshot: PromptSnapshotEvent | None
    skills: list[str]
    rows: list[ContextRow]
    episodes: list[EpisodeRow] = []
    """The task's episodes as they stood at that turn (from its ``episode`` events)."""


def process_alive(pid: int | None, host: str | None) -> bool:
    """Whether the process that wrote a session still runs (a zombie does not)."""
    if pid is None:
        return False
    if host and host != socket.gethostname():
        return True  # cannot tell from here: assume it is alive
    return is_alive(pid)


def _preview(item: Item, limit: int = 80) -> str:
    """One line: a decision's tool call first (then its text), otherwise the item's text."""
    text = getattr(item, "text", "") or ""
    calls = getattr(item, "tool_calls", None)
    if calls:
        called = ", ".join(f"{c.name}({json.dumps(c.arguments)})" for c in calls)
        text = f"{called} - {text}" if text else called
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class RunLog:
    """Read-only access to the run store in ``folder`` (``<folder>/runs.db``).

    A store written by an older harness is migrated once (a short write) before it is
    opened read-only; one written by a newer harness is refused with a clear message.

    With ``redact=True`` (the reading CLI commands and the HTML report) everything read is
    redacted again on the way out, with the built-in shapes plus every recorded session's
    ``run.secret_patterns`` and the current values of the ``api_key_env`` variables they
    name: what a store keeps is already redacted, so this catches only what an older
    harness or another writer let through, and what is printed never depends on it.
    """

    def __init__(self, folder: str | os.PathLike[str], *, redact: bool = False) -> None:
        self.folder = Path(folder).expanduser()
        self.path = self.folder / STORE_FILENAME
        if not self.path.is_file():
            raise RunStoreError(
                f"no run store at {self.folder} (expected {self.path}); run a task first, or "
                "point --store (or run.store in --config) at the folder"
            )
        self._conn = self._open()
        self.redactor: Redactor | None = self._recorded_redactor() if redact else None

    def _recorded_redactor(self) -> Redactor:
        patterns: dict[str, None] = {}
        env_vars: dict[str, None] = {}
        for row in self._rows("SELECT config FROM sessions"):
            try:
                found, names = secret_sources(json.loads(row["config"]))
            except (ValueError, AttributeError):
                continue
            patterns.update((p, None) for p in found if check_pattern(p) is None)
            env_vars.update((name, None) for name in names)
        return Redactor(patterns, env_vars=env_vars)

    def _text(self, text: str) -> str:
        return text if self.redactor is None or not text else self.redactor.text(text)

    def _json(self, data: str) -> Any:
        value = json.loads(data)
        return value if self.redactor is None else self.redactor.value(value)

    def _open(self) -> sqlite3.Connection:
        uri = f"file:{self.path}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        version = schema_version(conn)
        if needs_migration(conn):
            conn.close()
            connect_store(self.path).close()  # migrates (the only write a reader makes)
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 5000")
        elif version > SCHEMA_VERSION:
            conn.close()
            raise RunStoreError(
                f"run store {self.path} has schema version {version}, newer than this harness "
                f"understands ({SCHEMA_VERSION}); upgrade embodied-harness to read it"
            )
        conn.row_factory = sqlite3.Row
        return conn

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self._conn.execute(sql, params).fetchall()

    # ------------------------------------------------------------------ sessions and tasks

    _TASK_COUNT = (
        "(SELECT COUNT(*) FROM tasks t WHERE t.session_id = s.id AND t.parent_task_id IS NULL) AS n"
    )

    def sessions(self, *, limit: int | None = None) -> list[StoredSession]:
        rows = self._rows(
            f"SELECT s.*, {self._TASK_COUNT} FROM sessions s ORDER BY s.created_at DESC"
            + (f" LIMIT {int(limit)}" if limit else "")
        )
        return [self._session(row) for row in rows]

    def session(self, session_id: str) -> StoredSession:
        rows = self._rows(
            f"SELECT s.*, {self._TASK_COUNT} FROM sessions s WHERE s.id = ?",
            (session_id,),
        )
        if not rows:
            raise RunNotFoundError(f"no session {session_id!r} in {self.path}")
        return self._session(rows[0])

    def _session(self, row: sqlite3.Row) -> StoredSession:
        config = json.loads(row["config"])
        return StoredSession(
            id=row["id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            pid=row["pid"],
            host=row["host"],
            tasks=row["n"],
            config=config if self.redactor is None else self.redactor.config(config),
        )

    def tasks(self, *, session_id: str | None = None, limit: int | None = None) -> list[StoredTask]:
        """Top-level tasks (and lanes started directly by a control script), newest first;
        the lanes that worked for a task's turns are :meth:`lanes`."""
        return self._tasks_where(
            "t.parent_task_id IS NULL",
            session_id=session_id,
            order="t.started_at DESC, t.rowid DESC",
            limit=limit,
        )

    def lanes(
        self, task_id: str | None = None, *, session_id: str | None = None
    ) -> list[StoredTask]:
        """The sub-agent lanes that worked for ``task_id``'s turns (or every lane with a
        parent in ``session_id``), oldest first."""
        where, params = "t.parent_task_id IS NOT NULL", []
        if task_id is not None:
            where, params = "t.parent_task_id = ?", [task_id]
        return self._tasks_where(
            where, params, session_id=session_id, order="t.started_at, t.rowid"
        )

    def _tasks_where(
        self,
        where: str,
        params: Sequence[Any] = (),
        *,
        session_id: str | None,
        order: str,
        limit: int | None = None,
    ) -> list[StoredTask]:
        sql = (
            "SELECT t.*, s.pid AS pid, s.host AS host FROM tasks t "
            f"JOIN sessions s ON s.id = t.session_id WHERE {where}"
        )
        values = list(params)
        if session_id is not None:
            sql += " AND t.session_id = ?"
            values.append(session_id)
        sql += f" ORDER BY {order}" + (f" LIMIT {int(limit)}" if limit else "")
        return [self._task(row) for row in self._rows(sql, values)]

    def task(self, task_id: str) -> StoredTask:
        rows = self._rows(
            "SELECT t.*, s.pid AS pid, s.host AS host FROM tasks t "
            "JOIN sessions s ON s.id = t.session_id WHERE t.id = ?",
            (task_id,),
        )
        if not rows:
            raise RunNotFoundError(f"no task {task_id!r} in {self.path}")
        return self._task(rows[0])

    def _task(self, row: sqlite3.Row) -> StoredTask:
        status = row["status"]
        turns, usage = row["turns"], Usage.model_validate(json.loads(row["usage"] or "{}"))
        if status == "running":
            if not process_alive(row["pid"], row["host"]):
                status = "interrupted"
            turns, usage = self._progress(row["id"])
        return StoredTask(
            id=row["id"],
            session_id=row["session_id"],
            instruction=self._text(row["instruction"]),
            status=status,
            recorded_status=row["status"],
            reason=self._text(row["reason"] or ""),
            report=self._text(row["report"] or ""),
            turns=turns,
            usage=usage,
            started_at=row["started_at"],
            ended_at=row["ended_at"],
            resumes=row["resumes"],
            pid=row["pid"],
            outcome=row["outcome"] or "unverified",
            evidence=OutcomeEvidence.model_validate(json.loads(row["evidence"] or "{}")),
            lane=row["lane"] or "",
            parent_task_id=row["parent_task_id"],
            parent_call_id=row["parent_call_id"],
            parent_turn=row["parent_turn"],
        )

    def _progress(self, task_id: str) -> tuple[int, Usage]:
        """Turns and usage so far of a task that has not ended (from its events)."""
        turns = self._rows("SELECT MAX(turn) FROM events WHERE task_id = ?", (task_id,))[0][0]
        usage = Usage()
        for row in self._rows(
            "SELECT json_extract(data, '$.usage') FROM events "
            "WHERE task_id = ? AND type = 'model_response'",
            (task_id,),
        ):
            usage = usage + Usage.model_validate_json(row[0])
        return int(turns or 0), usage

    def resolve(self, ref: str) -> StoredTask:
        """A RUN argument -> the task it names (see the module docstring)."""
        ref = ref.strip()
        if ref in ("last", "latest", ""):
            latest = self.tasks(limit=1)
            if not latest:
                raise RunNotFoundError(f"no tasks recorded in {self.path} yet")
            return latest[0]
        rows = self._rows("SELECT id FROM tasks WHERE id = ?", (ref,))
        if rows:
            return self.task(ref)
        if self._rows("SELECT id FROM sessions WHERE id = ?", (ref,)):
            latest = self.tasks(session_id=ref, limit=1)
            if not latest:
                raise RunNotFoundError(f"session {ref!r} has no tasks")
            return latest[0]
        tasks = self._ids_with_prefix("tasks", ref)
        sessions = self._ids_with_prefix("sessions", ref)
        if len(tasks) + len(sessions) == 1:
            return self.resolve((tasks or sessions)[0])
        if tasks or sessions:
            names = ", ".join([*tasks, *sessions][:8])
            raise RunNotFoundError(f"{ref!r} is ambiguous: {names}")
        recent = ", ".join(t.id for t in self.tasks(limit=5)) or "none"
        raise RunNotFoundError(
            f"no task or session {ref!r} in {self.path}; recent tasks: {recent} (or use 'last')"
        )

    def _ids_with_prefix(self, table: str, prefix: str) -> list[str]:
        like = prefix.replace("\\", "").replace("%", "").replace("_", "\\_") + "%"
        sql = f"SELECT id FROM {table} WHERE id LIKE ? ESCAPE '\\'"
        return [row["id"] for row in self._rows(sql, (like,))]

    # ------------------------------------------------------------------ events

    def events(
        self,
        *,
        task_id: str | None = None,
        session_id: str | None = None,
        types: Sequence[str] = (),
        until_pos: int | None = None,
    ) -> list[Event]:
        return [
            event
            for _, event in self.events_with_pos(
                task_id=task_id, session_id=session_id, types=types, until_pos=until_pos
            )
        ]

    def events_with_pos(
        self,
        *,
        task_id: str | None = None,
        session_id: str | None = None,
        types: Sequence[str] = (),
        since_pos: int | None = None,
        until_pos: int | None = None,
        task_ids: Sequence[str] = (),
    ) -> list[tuple[int, Event]]:
        """Events in store order; ``task_ids`` reads several tasks at once (a task and its
        sub-agent lanes, interleaved as they happened)."""
        sql, params = "SELECT pos, data FROM events WHERE 1", []
        if task_id is not None:
            sql += " AND task_id = ?"
            params.append(task_id)
        if task_ids:
            sql += f" AND task_id IN ({','.join('?' * len(task_ids))})"
            params.extend(task_ids)
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if types:
            sql += f" AND type IN ({','.join('?' * len(types))})"
            params.extend(types)
        if since_pos is not None:
            sql += " AND pos > ?"
            params.append(since_pos)
        if until_pos is not None:
            sql += " AND pos <= ?"
            params.append(until_pos)
        sql += " ORDER BY pos"
        return [(row["pos"], self._event(row["data"])) for row in self._rows(sql, params)]

    def _event(self, data: str) -> Event:
        return parse_event(data if self.redactor is None else self._json(data))

    def raw_events(self, *, task_id: str) -> Iterator[str]:
        """The stored JSON lines of a task's events, in order (for export)."""
        for row in self._conn.execute(
            "SELECT data FROM events WHERE task_id = ? ORDER BY pos", (task_id,)
        ):
            if self.redactor is None:
                yield row[0]
            else:
                yield json.dumps(self._json(row[0]), ensure_ascii=False, separators=(",", ":"))

    def max_seq(self, session_id: str) -> int:
        row = self._rows("SELECT MAX(seq) FROM events WHERE session_id = ?", (session_id,))
        return int(row[0][0] or 0)

    def call_events(self, call_id: str) -> list[Event]:
        """Every event about one tool call (call, safety check, evaluation, result)."""
        rows = self._rows("SELECT data FROM events WHERE call_id = ? ORDER BY pos", (call_id,))
        return [self._event(row["data"]) for row in rows]

    # ------------------------------------------------------------------ items and context

    def items(
        self,
        session_id: str,
        *,
        task_id: str | None = None,
        until_pos: int | None = None,
        lane: str | None = None,
    ) -> list[StoredItem]:
        """Items of a session (of one lane when ``lane`` is given; "" is the main lane)."""
        sql = "SELECT * FROM items WHERE session_id = ?"
        params: list[Any] = [session_id]
        if task_id is not None:
            sql += " AND task_id = ?"
            params.append(task_id)
        if lane is not None:
            sql += " AND lane = ?"
            params.append(lane)
        if until_pos is not None:
            sql += " AND pos <= ?"
            params.append(until_pos)
        rows = self._rows(sql + " ORDER BY pos", params)
        return [self._item(row) for row in rows]

    def _item(self, row: sqlite3.Row) -> StoredItem:
        data = row["data"]
        return StoredItem(
            item=_item_adapter.validate_json(data)
            if self.redactor is None
            else _item_adapter.validate_python(self._json(data)),
            pos=row["pos"],
            lifetime=row["lifetime"],
            tokens=row["tokens"],
            state=row["state"],
            reason=self._text(row["reason"] or ""),
        )

    def accumulated(
        self, session_id: str, *, until_pos: int | None = None, lane: str = ""
    ) -> list[StoredItem]:
        """One lane's Accumulated context (the main lane's by default) exactly as it was at
        ``until_pos`` (now when None): the lane's last recorded layout, then the items
        appended to it after that, in order."""
        limit = until_pos if until_pos is not None else 2**62
        layout = self._rows(
            "SELECT pos, item_ids FROM layouts WHERE session_id = ? AND lane = ? AND pos <= ? "
            "ORDER BY pos DESC LIMIT 1",
            (session_id, lane, limit),
        )
        since, ids = (layout[0]["pos"], json.loads(layout[0]["item_ids"])) if layout else (0, [])
        items = {item.id: item for item in self.items(session_id, until_pos=limit, lane=lane)}
        ordered = [items[item_id] for item_id in ids if item_id in items]
        ordered.extend(item for item in items.values() if item.pos > since)
        states = self.item_states(session_id, until_pos=until_pos, lane=lane)
        return [self._at_state(item, states) for item in ordered]

    @staticmethod
    def _at_state(item: StoredItem, states: dict[str, tuple[str, str]]) -> StoredItem:
        state, reason = states.get(item.id, ("verbatim", ""))
        if (state, reason) == (item.state, item.reason):
            return item
        return item.model_copy(update={"state": state, "reason": reason})

    def item_states(
        self, session_id: str, *, until_pos: int | None = None, lane: str | None = None
    ) -> dict[str, tuple[str, str]]:
        """Each item's latest state (and reason) at ``until_pos`` (of one lane's items when
        ``lane`` is given)."""
        sql = "SELECT item_id, state, reason FROM item_states WHERE session_id = ?"
        params: list[Any] = [session_id]
        if until_pos is not None:
            sql += " AND pos <= ?"
            params.append(until_pos)
        if lane is not None:
            sql += " AND item_id IN (SELECT id FROM items WHERE session_id = ? AND lane = ?)"
            params.extend([session_id, lane])
        states: dict[str, tuple[str, str]] = {}
        for row in self._rows(sql + " ORDER BY pos", params):
            states[row["item_id"]] = (row["state"], self._text(row["reason"] or ""))
        return states

    def task_notes(self, task_id: str) -> tuple[int, dict[str, Any]] | None:
        """The latest structured Task Notes snapshot of a task, with its position."""
        rows = self._rows(
            "SELECT pos, data FROM task_notes WHERE task_id = ? ORDER BY pos DESC LIMIT 1",
            (task_id,),
        )
        return (rows[0]["pos"], self._json(rows[0]["data"])) if rows else None

    def world_state(self, session_id: str) -> tuple[str, int, dict[str, Any]] | None:
        """The latest recorded state of the simulated world in a session: (task id, turn,
        state), or None when its driver records none."""
        rows = self._rows(
            "SELECT task_id, turn, data FROM world_states WHERE session_id = ? "
            "ORDER BY pos DESC LIMIT 1",
            (session_id,),
        )
        if not rows:
            return None
        return str(rows[0]["task_id"]), int(rows[0]["turn"]), json.loads(rows[0]["data"])

    def context_at(self, task_id: str, turn: int | None = None) -> ContextView:
        """The context of the model call at ``turn`` (the task's last call when None)."""
        task = self.task(task_id)
        snapshots = self.events_with_pos(task_id=task_id, types=["prompt_snapshot"])
        if not snapshots:
            raise RunNotFoundError(f"task {task_id} made no model call; there is no context")
        if turn is None:
            pos, snapshot = snapshots[-1]
        else:
            chosen = [(p, e) for p, e in snapshots if e.turn == turn]
            if not chosen:
                turns = sorted({e.turn for _, e in snapshots})
                raise RunNotFoundError(
                    f"task {task_id} has no model call at turn {turn}; turns with one: "
                    f"{turns[0]}..{turns[-1]}"
                )
            pos, snapshot = chosen[-1]
        assert isinstance(snapshot, PromptSnapshotEvent)
        lane = task.lane
        live = self.accumulated(task.session_id, until_pos=pos, lane=lane)
        live_ids = {item.id for item in live}
        rows = [self._row(item, in_context=True) for item in live]
        states = self.item_states(task.session_id, until_pos=pos, lane=lane)
        for item in self.items(task.session_id, until_pos=pos, lane=lane):
            if item.id not in live_ids and states.get(item.id, ("verbatim",))[0] != "verbatim":
                rows.append(self._row(self._at_state(item, states), in_context=False))
        loaded = self.events(task_id=task_id, types=["skill_loaded"], until_pos=pos)
        if task.parent_task_id:  # a lane reads its parent's Resident blocks through
            inherited = self.events(
                task_id=task.parent_task_id, types=["skill_loaded"], until_pos=pos
            )
            loaded = inherited + loaded
        skills = list(dict.fromkeys(e.name for e in loaded))  # type: ignore[union-attr]
        return ContextView(
            task_id=task_id,
            turn=snapshot.turn,
            snapshot=snapshot,
            skills=skills,
            rows=rows,
            episodes=self.episodes(task_id, until_pos=pos),
        )

    def episodes(self, task_id: str, *, until_pos: int | None = None) -> list[EpisodeRow]:
        """The task's episodes from its ``episode`` events, oldest first."""
        found: dict[str, EpisodeRow] = {}
        for event in self.events(task_id=task_id, types=["episode"], until_pos=until_pos):
            assert isinstance(event, EpisodeEvent)
            if event.status == "begun":
                found[event.name] = EpisodeRow(
                    name=event.name,
                    kind=event.kind,
                    state="active",
                    task_id=task_id,
                    depends_on=event.depends_on,
                    begun_turn=event.turn,
                )
            elif event.name in found:
                state = "completed" if event.status == "ended" else "abandoned"
                found[event.name] = found[event.name].model_copy(
                    update={
                        "state": state,
                        "conclusion": event.conclusion,
                        "ended_turn": event.turn,
                    }
                )
        return list(found.values())

    @staticmethod
    def _row(stored: StoredItem, *, in_context: bool) -> ContextRow:
        item = stored.item
        return ContextRow(
            id=item.id,
            kind=item.kind,
            task_id=item.task_id,
            turn=item.turn,
            lifetime=stored.lifetime,  # type: ignore[arg-type]
            state=stored.state,  # type: ignore[arg-type]
            reason=stored.reason,
            tokens=stored.tokens if in_context else 0,
            original_tokens=0 if in_context else stored.tokens,
            in_context=in_context,
            preview=_preview(item),
            episode=item.episode,
        )

    # ------------------------------------------------------------------ archive and media

    def archive(self, address: str) -> str | None:
        rows = self._rows("SELECT text FROM archive WHERE address = ?", (address,))
        return None if not rows else self._text(str(rows[0]["text"]))

    def archive_entries(self, task_id: str) -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT address, call_id, tool, created_at, text FROM archive WHERE task_id = ? "
            "ORDER BY created_at, rowid",
            (task_id,),
        )
        return [{**dict(row), "text": self._text(str(row["text"]))} for row in rows]

    def image(self, sha256: str) -> ImagePart | None:
        rows = self._rows(
            "SELECT media_type, width, height, label, data FROM images WHERE sha256 = ?",
            (sha256,),
        )
        if not rows:
            return None
        row = rows[0]
        return ImagePart(
            data=bytes(row["data"]),
            media_type=row["media_type"],
            width=row["width"],
            height=row["height"],
            label=self._text(row["label"] or ""),
        )

    def image_count(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM images")[0][0])
