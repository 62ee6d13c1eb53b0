"""What is damaged in a run store, said in one line each, and telling damage from trouble.

A store can be damaged from outside the harness: a disk that lost a page, a copy cut
short, a file overwritten, a row edited by hand or by another program. Reading must then
say what is damaged and still read what is intact:

- a file SQLite cannot read at all (an overwritten header, a truncated file whose pages
  are gone) or an empty file is a :class:`~harness.errors.RunStoreDamagedError` naming the
  store;
- a row that does not parse (invalid JSON, a wrong type in a task's usage or evidence, an
  event of the wrong shape) is skipped, or read with a default, and kept as a
  :class:`Damage` in the reader's list (:attr:`~harness.store.opening.StoreFile.damage`);
- an image whose bytes no longer hash to its key (its SHA-256, stored with it) is not
  served, and is a :class:`Damage` too.

``harness runs --check`` (:func:`harness.store.integrity.check_store`) reads every row and
image this way and adds SQLite's own ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunStoreDamagedError, RunStoreError

__all__ = ["Damage", "damaged_file", "describe_problem", "sqlite_failure"]

_TROUBLE = ("locked", "busy", "unable to open", "readonly", "read-only", "disk i/o")
"""SQLite errors that are the machine's state at the moment, not damage to the file."""


@dataclass(frozen=True)
class Damage:
    """One damaged thing in a store: where, which task, what."""

    store: Path
    what: str
    task_id: str | None = None

    def line(self) -> str:
        task = f"task {self.task_id}: " if self.task_id else ""
        return f"run store {self.store} is damaged: {task}{self.what}"


def describe_problem(exc: BaseException) -> str:
    """A parse or validation error in a few words (pydantic's first error, JSON's message)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
        except Exception:
            first = None
        if first is not None:
            where = ".".join(str(part) for part in first.get("loc", ())) or "value"
            return f"{where}: {first.get('msg', '')}"[:200]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:200]


def damaged_file(store: Path, what: str) -> RunStoreDamagedError:
    return RunStoreDamagedError([Damage(store, what).line()])


def sqlite_failure(store: Path, exc: sqlite3.Error, doing: str) -> RunStoreError:
    """An SQLite error while ``doing`` something: damage when the file itself is bad, a
    plain store error when the machine is in the way (a lock, permissions, a full disk)."""
    message = " ".join(str(exc).split())
    if isinstance(exc, sqlite3.OperationalError) and any(t in message.lower() for t in _TROUBLE):
        return RunStoreError(f"run store {store}: {doing} failed: {message}")
    return damaged_file(store, f"{doing} failed: SQLite says {message!r}")
