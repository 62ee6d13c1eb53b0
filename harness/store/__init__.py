"""The run store: every event, item, exact tool output and image, as it happens.

- :mod:`~harness.store.writer`: the SQLite store;
- :mod:`~harness.store.memory`: the in-memory store (tests, throwaway runs);
- :mod:`~harness.store.schema`: the versioned SQLite schema and its migrations;
- :mod:`~harness.store.reader`: reading sessions, tasks, events and past context back;
- :mod:`~harness.store.task_page`: one self-contained HTML page per task.
"""

from harness.store.memory import MemoryRunStore
from harness.store.writer import STORE_FILENAME, SQLiteRunStore, connect_store

__all__ = ["STORE_FILENAME", "MemoryRunStore", "SQLiteRunStore", "connect_store"]
