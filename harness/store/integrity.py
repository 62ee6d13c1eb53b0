"""``harness runs --check``: SQLite's integrity check plus every stored row and image read
back and validated, and what is damaged, one line each.

SQLite's ``PRAGMA integrity_check`` finds damage to the file's own structure (pages,
indexes); it cannot know that a row's JSON no longer parses or that an image's bytes were
flipped. So every row is also read the way the harness reads it (sessions, tasks with
their usage and evidence, events, items, Accumulated layouts, Task Notes, world states),
and every image's bytes are hashed against the SHA-256 stored with them as its key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import RunStoreDamagedError
from harness.store.damage import Damage
from harness.store.reader import RunLog

__all__ = ["StoreCheck", "check_store"]

INTEGRITY_MESSAGES = 20
"""SQLite's integrity check stops after this many problems (the first ones say enough)."""


@dataclass
class StoreCheck:
    """What ``check_store`` found: rows and images read, and every damage."""

    store: Path
    integrity: list[str] = field(default_factory=list)
    """SQLite's own findings (empty: ``ok``)."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows read back per table."""
    damage: list[Damage] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.integrity and not self.damage

    def lines(self) -> list[str]:
        found = [Damage(self.store, f"SQLite integrity check: {m}").line() for m in self.integrity]
        return found + [damage.line() for damage in self.damage]


def check_store(folder: str | os.PathLike[str]) -> StoreCheck:
    """Check the run store in ``folder``; raises :class:`RunStoreDamagedError` when SQLite
    cannot read the file at all (then there is nothing more to check)."""
    with RunLog(folder) as log:
        check = StoreCheck(store=log.path, integrity=log.integrity_problems(INTEGRITY_MESSAGES))
        try:
            _read_every_row(log, check)
        except RunStoreDamagedError as exc:  # a table SQLite could not read any further
            check.damage.extend(
                Damage(log.path, line.split(" is damaged: ", 1)[-1]) for line in exc.lines
            )
        check.damage = [*log.damage, *check.damage]
    return check


def _read_every_row(log: RunLog, check: StoreCheck) -> None:
    sessions = log.sessions()
    check.rows["sessions"] = len(sessions)
    tasks = log.every_task()
    check.rows["tasks"] = len(tasks)
    check.rows["events"] = len(log.events_with_pos())
    for session in sessions:
        check.rows["items"] = check.rows.get("items", 0) + len(log.items(session.id))
        for lane in {""} | {task.lane for task in tasks if task.session_id == session.id}:
            log.accumulated(session.id, lane=lane)
        log.world_state(session.id)
    for task in tasks:
        log.task_notes(task.id)
    check.rows["images"] = log.verify_images()
