"""Run stores: every event, item, exact tool output and image, written as it happens.

:class:`MemoryRunStore` keeps a session in memory (tests, throwaway runs).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from harness.events import EventBase
from harness.messages import ImagePart, Item

__all__ = ["MemoryRunStore"]


class MemoryRunStore:
    """A run store in memory: same contract as the SQLite store, nothing on disk."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sessions: dict[str, dict[str, Any]] = {}
        self.tasks: dict[str, dict[str, Any]] = {}
        self.events: list[EventBase] = []
        self.items: dict[str, dict[str, Any]] = {}
        self.archive: dict[str, str] = {}
        self.images: dict[str, ImagePart] = {}
        self.closed = False

    def open_session(self, session_id: str, *, config: Mapping[str, Any]) -> None:
        with self._lock:
            self.sessions.setdefault(session_id, {"config": dict(config)})

    def start_task(self, session_id: str, task_id: str, instruction: str) -> None:
        with self._lock:
            self.tasks[task_id] = {
                "session_id": session_id,
                "instruction": instruction,
                "status": "running",
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
    ) -> None:
        with self._lock:
            self.tasks.setdefault(task_id, {}).update(
                status=status, reason=reason, report=report, turns=turns, usage=dict(usage)
            )

    def append_event(self, event: EventBase) -> None:
        with self._lock:
            self.events.append(event)

    def put_item(self, session_id: str, item: Item, *, lifetime: str, tokens: int) -> None:
        with self._lock:
            self.items[item.id] = {
                "session_id": session_id,
                "item": item,
                "lifetime": lifetime,
                "tokens": tokens,
                "state": "verbatim",
                "reason": "",
            }

    def set_item_state(self, item_id: str, *, state: str, reason: str) -> None:
        with self._lock:
            if item_id in self.items:
                self.items[item_id].update(state=state, reason=reason)

    def archive_put(
        self, address: str, text: str, *, task_id: str, call_id: str, tool: str
    ) -> None:
        with self._lock:
            self.archive[address] = text

    def archive_get(self, address: str) -> str | None:
        with self._lock:
            return self.archive.get(address)

    def put_image(self, image: ImagePart) -> None:
        with self._lock:
            self.images.setdefault(image.sha256, image)

    def close(self) -> None:
        self.closed = True
