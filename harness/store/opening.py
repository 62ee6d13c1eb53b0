"""Opening a run store to read it: read-only SQLite (WAL readers never block the writer), a
store of an older harness migrated once first, one of a newer harness refused, and with
``redact=True`` everything read redacted again on the way out.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from harness.config import secret_sources
from harness.errors import RunStoreError
from harness.redact import Redactor, check_pattern
from harness.store.schema import SCHEMA_VERSION, needs_migration, schema_version
from harness.store.writer import STORE_FILENAME, connect_store

__all__ = ["StoreFile"]


class StoreFile:
    """The read-only connection to ``<folder>/runs.db`` and the helpers every read uses."""

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self._conn.execute(sql, params).fetchall()
