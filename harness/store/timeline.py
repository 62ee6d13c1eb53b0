"""Reading a run store's sessions, tasks and lanes, resolving a RUN argument, and reading a
task's events back (all of them, from a position, or a call's).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from harness.errors import RunNotFoundError, RunStoreDamagedError
from harness.events import (
    Event,
    OutcomeEvidence,
    parse_event,
)
from harness.messages import Usage
from harness.store.damage import damaged_file, describe_problem
from harness.store.opening import StoreFile
from harness.store.records import StoredSession, StoredTask, process_alive

__all__ = ["TimelineReads"]


_WRITER = "s.pid AS pid, s.host AS host, s.pid_started AS pid_started"
"""The columns of a task's session that say which process wrote it (is it still running?)."""


class TimelineReads(StoreFile):
    """Sessions, tasks, lanes and events of an open store."""

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
        config = self._parsed(
            row["config"], what=f"session {row['id']}: config", task_id=None, default={}
        )
        if not isinstance(config, dict):
            self.note_damage(f"session {row['id']}: config is not a mapping")
            config = {}
        return StoredSession(
            id=row["id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            pid=row["pid"],
            host=row["host"],
            pid_started=row["pid_started"],
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
            f"SELECT t.*, {_WRITER} FROM tasks t "
            f"JOIN sessions s ON s.id = t.session_id WHERE {where}"
        )
        values = list(params)
        if session_id is not None:
            sql += " AND t.session_id = ?"
            values.append(session_id)
        sql += f" ORDER BY {order}" + (f" LIMIT {int(limit)}" if limit else "")
        return self._intact_tasks(self._rows(sql, values))

    def every_task(self) -> list[StoredTask]:
        """Every task and lane row that can be read (the others noted as damage)."""
        return self._intact_tasks(
            self._rows(
                f"SELECT t.*, {_WRITER} FROM tasks t "
                "LEFT JOIN sessions s ON s.id = t.session_id ORDER BY t.rowid"
            )
        )

    def _intact_tasks(self, rows: list[sqlite3.Row]) -> list[StoredTask]:
        """The tasks of ``rows`` that can be read; the others are noted as damage."""
        tasks = []
        for row in rows:
            try:
                tasks.append(self._task(row))
            except RunStoreDamagedError as exc:
                for line in exc.lines:
                    self.note_damage(line.split(" is damaged: ", 1)[-1])
        return tasks

    def task(self, task_id: str) -> StoredTask:
        rows = self._rows(
            f"SELECT t.*, {_WRITER} FROM tasks t "
            "JOIN sessions s ON s.id = t.session_id WHERE t.id = ?",
            (task_id,),
        )
        if not rows:
            raise RunNotFoundError(f"no task {task_id!r} in {self.path}")
        return self._task(rows[0])

    def _task(self, row: sqlite3.Row) -> StoredTask:
        """A task row; a damaged usage or evidence reads as empty (the damage noted), a row
        that cannot be a task at all raises naming it."""
        task_id = str(row["id"])
        status = row["status"]
        turns = row["turns"]
        usage = self._model_of(Usage, row["usage"], what="usage", task_id=task_id)
        if status == "running":
            if not process_alive(row["pid"], row["host"], row["pid_started"]):
                status = "interrupted"
            turns, usage = self._progress(task_id)
        evidence = self._model_of(
            OutcomeEvidence, row["evidence"], what="evidence", task_id=task_id
        )
        try:
            return StoredTask(
                id=task_id,
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
                evidence=evidence,
                lane=row["lane"] or "",
                parent_task_id=row["parent_task_id"],
                parent_call_id=row["parent_call_id"],
                parent_turn=row["parent_turn"],
            )
        except (ValidationError, TypeError, ValueError) as exc:
            raise damaged_file(
                self.path, f"task {task_id}: its row: {describe_problem(exc)}"
            ) from None

    def _model_of(self, model: Any, data: Any, *, what: str, task_id: str) -> Any:
        """A task's JSON column as ``model``; empty (the damage noted) when it is not one."""
        value = self._parsed(data, what=what, task_id=task_id, default={})
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            self.note_damage(f"{what}: {describe_problem(exc)}", task_id)
            return model()

    def _progress(self, task_id: str) -> tuple[int, Usage]:
        """Turns and usage so far of a task that has not ended (from its events)."""
        turns = self._rows("SELECT MAX(turn) FROM events WHERE task_id = ?", (task_id,))[0][0]
        usage = Usage()
        for row in self._rows(
            "SELECT seq, data FROM events WHERE task_id = ? AND type = 'model_response'",
            (task_id,),
        ):
            data = self._parsed(row[1], what=f"event {row[0]}", task_id=task_id, default={})
            part = data.get("usage") if isinstance(data, dict) else None
            try:
                usage = usage + Usage.model_validate(part or {})
            except ValidationError as exc:
                self.note_damage(
                    f"event {row[0]} (model_response): usage: {describe_problem(exc)}", task_id
                )
        return int(turns or 0) if isinstance(turns, int) else 0, usage

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
        sql, params = "SELECT pos, seq, task_id, type, data FROM events WHERE 1", []
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
        read = ((row["pos"], self._event_of(row)) for row in self._rows(sql, params))
        return [(pos, event) for pos, event in read if event is not None]

    def _event_of(self, row: sqlite3.Row) -> Event | None:
        """The event of a row, or None (the damage noted) when it does not parse."""
        try:
            return self._event(row["data"])
        except (ValidationError, ValueError, TypeError) as exc:
            self.note_damage(
                f"event {row['seq']} ({row['type']}): {describe_problem(exc)}; skipped",
                str(row["task_id"]),
            )
            return None

    def _event(self, data: str) -> Event:
        return parse_event(data if self.redactor is None else self._json(data))

    def raw_events(self, *, task_id: str) -> Iterator[str]:
        """The stored JSON lines of a task's events, in order (for export)."""
        for row in self._rows(
            "SELECT seq, type, data FROM events WHERE task_id = ? ORDER BY pos", (task_id,)
        ):
            try:
                value = json.loads(row["data"])
            except (ValueError, TypeError) as exc:
                what = f"event {row['seq']} ({row['type']}): {describe_problem(exc)}; skipped"
                self.note_damage(what, task_id)
                continue
            if self.redactor is None:
                yield row["data"]
            else:
                value = self.redactor.value(value)
                yield json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def max_seq(self, session_id: str) -> int:
        row = self._rows("SELECT MAX(seq) FROM events WHERE session_id = ?", (session_id,))
        return int(row[0][0] or 0)

    def call_events(self, call_id: str) -> list[Event]:
        """Every event about one tool call (call, safety check, evaluation, result)."""
        rows = self._rows(
            "SELECT pos, seq, task_id, type, data FROM events WHERE call_id = ? ORDER BY pos",
            (call_id,),
        )
        return [event for event in map(self._event_of, rows) if event is not None]
