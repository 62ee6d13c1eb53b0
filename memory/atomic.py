"""Crash-safe file writes and a folder lock for the memory files.

A memory file is either its old content or its new content, never half of each: the new
text goes to a temporary file in the same folder, is flushed and fsynced, and then
renamed over the target (``os.replace`` is atomic on POSIX and Windows). The folder entry
is fsynced too where the platform allows, so the rename itself survives a power cut.

A process killed between the write and the rename leaves its temporary file behind; its
name carries the writer's pid, so :func:`remove_stale_temp_files` can tell a dead
writer's leftovers from a live writer's work in progress.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

from filelock import FileLock

__all__ = ["atomic_write_text", "folder_lock", "remove_stale_temp_files", "temp_path_for"]

_TEMP_PATTERN = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp$")
LOCK_FILE = ".lock"


def temp_path_for(target: Path) -> Path:
    """A unique temporary path next to ``target`` that names the writing process."""
    return target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _fsync_folder(folder: Path) -> None:
    if os.name != "posix":  # Windows cannot open a directory for fsync
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(target: Path, text: str) -> None:
    """Replace ``target`` with ``text`` (UTF-8) atomically and durably.

    If anything fails before the rename, the temporary file is removed and ``target`` is
    untouched; the exception propagates.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_path_for(target)
    try:
        with open(temp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    _fsync_folder(target.parent)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_temp_files(folder: Path) -> list[Path]:
    """Delete temporary files left by writers that no longer run; return what was removed.

    Only files named by :func:`temp_path_for` are considered, and only on POSIX, where a
    pid can be probed; a live writer's file is never touched.
    """
    removed: list[Path] = []
    if os.name != "posix" or not folder.is_dir():
        return removed
    for path in folder.iterdir():
        match = _TEMP_PATTERN.match(path.name)
        if match is None or not path.is_file():
            continue
        if _process_alive(int(match["pid"])):
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


def folder_lock(folder: Path, *, timeout_s: float = 30.0) -> FileLock:
    """An exclusive, re-entrant lock over a memory folder (use it as a context manager), so
    two sessions sharing the folder (two robots, parallel simulated episodes) never lose
    each other's read-modify-write updates. Keep one per store: separate lock objects on
    the same file do not nest."""
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(str(folder / LOCK_FILE), timeout=timeout_s)
