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

import hashlib
import sqlite3
from typing import Any

from pydantic import ValidationError

from harness.context.introspection import EpisodeRow
from harness.errors import RunNotFoundError
from harness.events import (
    EpisodeEvent,
    PromptSnapshotEvent,
)
from harness.messages import ImagePart
from harness.store.damage import describe_problem
from harness.store.records import (
    ContextRow,
    ContextView,
    StoredItem,
    StoredSession,
    StoredTask,
    item_adapter,
    item_preview,
    process_alive,
)
from harness.store.timeline import TimelineReads

__all__ = [
    "ContextRow",
    "ContextView",
    "RunLog",
    "StoredItem",
    "StoredSession",
    "StoredTask",
    "process_alive",
]


class RunLog(TimelineReads):
    """Read-only access to the run store in ``folder`` (``<folder>/runs.db``).

    A store written by an older harness is migrated once (a short write) before it is
    opened read-only; one written by a newer harness is refused with a clear message.

    With ``redact=True`` (the reading CLI commands and the HTML report) everything read is
    redacted again on the way out, with the built-in shapes plus every recorded session's
    ``run.secret_patterns`` and the current values of the ``api_key_env`` variables they
    name: what a store keeps is already redacted, so this catches only what an older
    harness or another writer let through, and what is printed never depends on it.

    Opening, sessions, tasks and events: :class:`~harness.store.opening.StoreFile` and
    :class:`~harness.store.timeline.TimelineReads`; here: the Accumulated items, the context
    at any turn, Task Notes, the world state, the archive and images.
    """

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
        return [item for item in map(self._intact_item, rows) if item is not None]

    def _intact_item(self, row: sqlite3.Row) -> StoredItem | None:
        """The item of a row, or None (the damage noted) when it does not parse."""
        try:
            return self._item(row)
        except (ValidationError, ValueError, TypeError) as exc:
            what = f"item {row['id']} ({row['kind']}): {describe_problem(exc)}; skipped"
            self.note_damage(what, str(row["task_id"]))
            return None

    def _item(self, row: sqlite3.Row) -> StoredItem:
        data = row["data"]
        return StoredItem(
            item=item_adapter.validate_json(data)
            if self.redactor is None
            else item_adapter.validate_python(self._json(data)),
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
        since, ids = (layout[0]["pos"], self._layout_ids(layout[0])) if layout else (0, [])
        items = {item.id: item for item in self.items(session_id, until_pos=limit, lane=lane)}
        ordered = [items[item_id] for item_id in ids if item_id in items]
        ordered.extend(item for item in items.values() if item.pos > since)
        states = self.item_states(session_id, until_pos=until_pos, lane=lane)
        return [self._at_state(item, states) for item in ordered]

    def _layout_ids(self, row: sqlite3.Row) -> list[str]:
        ids = self._parsed(
            row["item_ids"], what=f"layout at {row['pos']}", task_id=None, default=[]
        )
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            self.note_damage(f"layout at {row['pos']}: not a list of item ids")
            return []
        return ids

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
        if not rows:
            return None
        notes = self._parsed(rows[0]["data"], what="task notes", task_id=task_id, default=None)
        if not isinstance(notes, dict):
            return None
        return rows[0]["pos"], notes if self.redactor is None else self.redactor.value(notes)

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
        task_id = str(rows[0]["task_id"])
        state = self._parsed(rows[0]["data"], what="world state", task_id=task_id, default=None)
        if not isinstance(state, dict) or not isinstance(rows[0]["turn"], int):
            if state is not None:
                self.note_damage("world state: not a mapping with a turn", task_id)
            return None
        return task_id, int(rows[0]["turn"]), state

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
            preview=item_preview(item),
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
        data = row["data"]
        if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != sha256:
            self.note_damage(
                f"image {sha256[:16]}: its bytes no longer match the SHA-256 stored with them "
                "(flipped or cut); not shown"
            )
            return None
        return ImagePart(
            data=bytes(row["data"]),
            media_type=row["media_type"],
            width=row["width"],
            height=row["height"],
            label=self._text(row["label"] or ""),
        )

    def verify_images(self) -> int:
        """Hash every stored image against the SHA-256 it is stored under (damage noted);
        returns how many were checked."""
        count = 0
        for row in self._rows("SELECT sha256, data FROM images"):
            count += 1
            sha, data = str(row["sha256"]), row["data"]
            if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != sha:
                self.note_damage(
                    f"image {sha[:16]}: its bytes no longer match the SHA-256 stored with "
                    "them (flipped or cut)"
                )
        return count

    def image_count(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM images")[0][0])
