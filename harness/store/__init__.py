"""The run store: every event, item, exact tool output and image, as it happens.

- :mod:`~harness.store.writer`: the SQLite store;
- :mod:`~harness.store.memory`: the in-memory store (tests, throwaway runs);
- :mod:`~harness.store.schema`: the versioned SQLite schema and its migrations;
- :mod:`~harness.store.reader`: reading sessions, tasks, events and past context back;
- :mod:`~harness.store.task_page`: one self-contained HTML page per task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodiment.lazy_names import lazy_names

if TYPE_CHECKING:
    from harness.store.memory import MemoryRunStore
    from harness.store.schema import STORE_FILENAME
    from harness.store.writer import SQLiteRunStore, connect_store

_HOMES = {
    "MemoryRunStore": "harness.store.memory",
    "STORE_FILENAME": "harness.store.schema",
    "SQLiteRunStore": "harness.store.writer",
    "connect_store": "harness.store.writer",
}
"""Where each name lives: imported on first use, so a command that only reads a store
(``harness runs``, ``show``) loads neither writer (nor what it imports: the context
archive, the MCP process identity) when it imports :mod:`harness.store.reader`."""

__all__ = ["STORE_FILENAME", "MemoryRunStore", "SQLiteRunStore", "connect_store"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
