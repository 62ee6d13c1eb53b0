"""Opening a run store to read it: read-only SQLite (WAL readers never block the writer), a
store of an older harness migrated once first, one of a newer harness refused, and with
``redact=True`` everything read redacted again on the way out.

A damaged store is reported, not crashed on (:mod:`harness.store.damage`): a file SQLite
cannot read, or an empty one, raises :class:`~harness.errors.RunStoreDamagedError` naming
the store; a row that does not parse is skipped (or read with a default) and listed in
:attr:`StoreFile.damage`, so the rest is still read.
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
from harness.store.damage import Damage, damaged_file, describe_problem, sqlite_failure
from harness.store.schema import SCHEMA_VERSION, STORE_FILENAME, needs_migration, schema_version

__all__ = ["StoreFile"]

RUN_STORE_TABLES = frozenset({"sessions", "tasks", "events", "items", "images"})


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
        if self.path.stat().st_size == 0:
            raise damaged_file(
                self.path,
                "the file is empty (0 bytes): the runs it held are gone, or it was never "
                "written (a copy cut short, a disk that filled up)",
            )
        self.damage: list[Damage] = []
        """Rows that did not parse, noted as they were met (each once)."""
        self._conn = self._open()
        self.redactor: Redactor | None = self._recorded_redactor() if redact else None

    def note_damage(self, what: str, task_id: str | None = None) -> None:
        damage = Damage(self.path, what, task_id)
        if damage not in self.damage:
            self.damage.append(damage)

    def _recorded_redactor(self) -> Redactor:
        patterns: dict[str, None] = {}
        env_vars: dict[str, None] = {}
        for row in self._rows("SELECT id, config FROM sessions"):
            try:
                found, names = secret_sources(json.loads(row["config"]))
            except (ValueError, AttributeError, TypeError) as exc:
                self.note_damage(f"session {row['id']}: config: {describe_problem(exc)}")
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
        try:
            return self._open_checked()
        except sqlite3.Error as exc:
            raise sqlite_failure(self.path, exc, "opening it") from None

    def _open_checked(self) -> sqlite3.Connection:
        uri = f"file:{self.path}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        version = schema_version(conn)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if not tables >= RUN_STORE_TABLES:
            conn.close()
            missing = ", ".join(sorted(RUN_STORE_TABLES - tables))
            raise damaged_file(
                self.path,
                "it holds no runs: SQLite reads it, but it is empty of a run store's tables "
                f"(missing {missing})",
            )
        if needs_migration(conn):
            conn.close()
            from harness.store.writer import connect_store  # the writer: only to migrate

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
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            table = sql.split(" FROM ", 1)[1].split()[0] if " FROM " in sql else sql[:40]
            raise sqlite_failure(self.path, exc, f"reading {table}") from None

    def integrity_problems(self, limit: int = 20) -> list[str]:
        """SQLite's ``PRAGMA integrity_check`` (at most ``limit`` findings; [] when ok)."""
        found = [str(row[0]) for row in self._rows(f"PRAGMA integrity_check({int(limit)})")]
        return [message for message in found if message != "ok"]

    def _parsed(self, data: Any, *, what: str, task_id: str | None, default: Any) -> Any:
        """``data`` (stored JSON) parsed, or ``default`` with the damage noted."""
        try:
            return json.loads(data) if data not in (None, "") else default
        except (ValueError, TypeError) as exc:
            self.note_damage(f"{what}: {describe_problem(exc)}", task_id)
            return default
