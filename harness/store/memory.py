"""A run store in memory: the same contract as the SQLite store, nothing on disk.

For tests and throwaway runs (``run.store: null``). It keeps everything it is given for the
life of the process, by design; secrets are redacted before anything is kept, as in
:class:`~harness.store.writer.SQLiteRunStore`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from harness.context.compaction.archive import ArchiveQuery
from harness.events import EventBase, ToolResultEvent
from harness.messages import ImagePart, Item
from harness.protocols import ArchiveHit, LaneLink
from harness.redact import Redactor
from harness.store.redacting import RedactingStore

__all__ = ["MemoryRunStore"]


class MemoryRunStore(RedactingStore):
    """A run store in memory: same contract as the SQLite store, nothing on disk."""

    def __init__(self, *, redactor: Redactor | None = None) -> None:
        self._init_redactor(redactor)
        self._lock = threading.Lock()
        self.sessions: dict[str, dict[str, Any]] = {}
        self.tasks: dict[str, dict[str, Any]] = {}
        self.events: list[EventBase] = []
        self.items: dict[str, dict[str, Any]] = {}
        self.archive: dict[str, str] = {}
        self.archive_meta: dict[str, tuple[str, str, str]] = {}
        """address -> (task id, tool, arguments) of each archived output."""
        self.images: dict[str, ImagePart] = {}
        self.layouts: list[tuple[str, list[str]]] = []
        """(session id, item ids) of the main lane's layouts."""
        self.lane_layouts: list[tuple[str, str, list[str]]] = []
        """(session id, lane, item ids) of sub-agent lanes' layouts."""
        self.task_notes: dict[str, dict[str, Any]] = {}
        self.world_states: dict[str, tuple[int, dict[str, Any]]] = {}
        """task id -> (turn, state) of the latest recorded world state."""
        self.closed = False

    def open_session(self, session_id: str, *, config: Mapping[str, Any]) -> None:
        with self._lock:
            self.sessions.setdefault(session_id, {"config": self.redactor.config(dict(config))})

    def start_task(
        self,
        session_id: str,
        task_id: str,
        instruction: str,
        *,
        lane: str = "",
        parent: LaneLink | None = None,
    ) -> None:
        with self._lock:
            self.tasks[task_id] = {
                "session_id": session_id,
                "instruction": self.redactor.text(instruction),
                "status": "running",
                "lane": lane,
                "parent": parent,
            }

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
        with self._lock:
            self.tasks.setdefault(task_id, {}).update(
                status=status,
                reason=self.redactor.text(reason),
                report=self.redactor.text(report),
                turns=turns,
                usage=dict(usage),
                outcome=outcome,
                evidence=self.redactor.value(dict(evidence or {})),
            )

    def append_event(self, event: EventBase) -> None:
        redacted = type(event).model_validate(self.redactor.value(event.model_dump()))
        with self._lock:
            self.events.append(redacted)

    def tool_results(self, task_id: str) -> list[ToolResultEvent]:
        with self._lock:
            return [
                event
                for event in self.events
                if isinstance(event, ToolResultEvent) and event.task_id == task_id
            ]

    def put_item(
        self, session_id: str, item: Item, *, lifetime: str, tokens: int, lane: str = ""
    ) -> None:
        with self._lock:
            self.items[item.id] = {
                "session_id": session_id,
                "item": type(item).model_validate(self.redactor.value(item.model_dump())),
                "lifetime": lifetime,
                "tokens": tokens,
                "state": "verbatim",
                "reason": "",
                "lane": lane,
            }

    def set_item_state(self, item_id: str, *, state: str, reason: str) -> None:
        with self._lock:
            if item_id in self.items:
                self.items[item_id].update(state=state, reason=self.redactor.text(reason))

    def set_accumulated(self, session_id: str, item_ids: Sequence[str], *, lane: str = "") -> None:
        with self._lock:
            if lane:
                self.lane_layouts.append((session_id, lane, list(item_ids)))
            else:
                self.layouts.append((session_id, list(item_ids)))

    def put_task_notes(self, session_id: str, task_id: str, notes: Mapping[str, Any]) -> None:
        with self._lock:
            self.task_notes[task_id] = self.redactor.value(dict(notes))

    def put_world_state(
        self, session_id: str, task_id: str, *, turn: int, state: Mapping[str, Any]
    ) -> None:
        with self._lock:
            self.world_states[task_id] = (turn, dict(state))

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
        with self._lock:
            self.archive[address] = self.redactor.text(text)
            self.archive_meta[address] = (task_id, tool, self.redactor.text(arguments))

    def archive_get(self, address: str, *, session_id: str | None = None) -> str | None:
        with self._lock:
            if session_id is not None:
                task_id = self.archive_meta.get(address, ("", "", ""))[0]
                if self.tasks.get(task_id, {}).get("session_id") != session_id:
                    return None
            return self.archive.get(address)

    def archive_search(self, session_id: str, query: str, *, limit: int) -> list[ArchiveHit]:
        with self._lock:
            entries = list(self.archive.items())
            meta = dict(self.archive_meta)
            sessions = {task_id: task.get("session_id") for task_id, task in self.tasks.items()}
        hits: list[ArchiveHit] = []
        prepared = ArchiveQuery(query)
        for address, text in reversed(entries):  # newest first
            task_id, tool, arguments = meta.get(address, ("", "", ""))
            if sessions.get(task_id) != session_id:
                continue
            hit = prepared.hit(tool=tool, arguments=arguments, text=text)
            if hit is not None:
                hits.append(ArchiveHit(address, task_id, tool, *hit))
                if len(hits) >= limit:
                    break
        return hits

    def put_image(self, image: ImagePart) -> None:
        label = self.redactor.text(image.label)
        if label != image.label:
            image = image.model_copy(update={"label": label})
        with self._lock:
            self.images.setdefault(image.sha256, image)

    def close(self) -> None:
        self.closed = True
