"""Finding and ending every subprocess an MCP manager started, by pid, whatever happened.

The SDK spawns a stdio server itself and does not hand out the process. So each start puts
a unique token in the server's environment: the server and anything it spawns carry it,
and ``/proc/<pid>/environ`` finds them again, even when the SDK's own shutdown was skipped
(a hung loop, an interpreter exiting without ``close()``). The SDK starts every server in a
new session, so its process group is ended as a whole (helpers included).

Linux only (``/proc``); elsewhere the lookups find nothing and the SDK's own shutdown
(stdin closed, then SIGTERM/SIGKILL of the group) is the only path.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "TOKEN_ENV",
    "OwnedProcesses",
    "find_processes",
    "is_alive",
    "leader_pid",
    "new_token",
    "terminate",
]

TOKEN_ENV = "EMBODIED_HARNESS_MCP_TOKEN"
"""Environment variable that marks a subprocess (and its children) as owned by one start."""

_PROC = Path("/proc")


def new_token(server: str) -> str:
    """A token unique to one start of one server in this process."""
    return f"{os.getpid()}-{server}-{uuid.uuid4().hex[:12]}"


def _environ_has(pid: int, needle: bytes) -> bool:
    try:
        data = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:  # gone, or not ours
        return False
    return needle in data


def find_processes(tokens: Iterable[str]) -> list[int]:
    """Live pids whose environment carries one of ``tokens`` (a few ms: one /proc scan)."""
    needles = [f"{TOKEN_ENV}={token}\0".encode() for token in tokens]
    if not needles or not _PROC.is_dir():
        return []
    uid = os.getuid()
    found = []
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
        except OSError:
            continue
        pid = int(entry.name)
        if pid != os.getpid() and any(_environ_has(pid, n) for n in needles) and is_alive(pid):
            found.append(pid)
    return found


def leader_pid(token: str) -> int | None:
    """The server process itself: the token's process whose parent is this process."""
    me = os.getpid()
    for pid in find_processes([token]):
        if _parent(pid) == me:
            return pid
    return None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ..." where comm may contain spaces and parentheses.
    return raw[raw.rfind(")") + 2 :].split()


def _parent(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as dead)."""
    if _PROC.is_dir():
        fields = _stat_fields(pid)
        return fields is not None and fields[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal the process's group when it leads its own group, else the process alone
    (never our own group: that would signal the harness itself)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        group = os.getpgid(pid)
        if group == pid and group != os.getpgrp():
            os.killpg(group, sig)
        else:
            os.kill(pid, sig)


def terminate(pids: Iterable[int], *, grace_s: float = 1.0) -> list[int]:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL what is left. Returns the pids that
    were alive when it started."""
    targets = [pid for pid in pids if is_alive(pid)]
    for pid in targets:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    remaining = list(targets)
    while remaining and time.monotonic() < deadline:
        time.sleep(0.01)
        remaining = [pid for pid in remaining if is_alive(pid)]
    for pid in remaining:
        _signal(pid, signal.SIGKILL)
    return targets


class OwnedProcesses:
    """The tokens of every start a manager made, and the sweep that ends their processes.

    ``sweep`` is safe to call from any thread and from an ``atexit``/``weakref.finalize``
    callback: it only reads /proc and sends signals.
    """

    def __init__(self) -> None:
        self._tokens: set[str] = set()
        self._lock = threading.Lock()

    def add(self, token: str) -> None:
        with self._lock:
            self._tokens.add(token)

    def tokens(self) -> list[str]:
        with self._lock:
            return sorted(self._tokens)

    def alive(self) -> list[int]:
        return find_processes(self.tokens())

    def sweep(self, *, grace_s: float = 1.0) -> list[int]:
        """End every process still carrying one of the tokens; return their pids."""
        return terminate(self.alive(), grace_s=grace_s)
