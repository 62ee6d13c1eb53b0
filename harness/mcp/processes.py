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
import select
import signal
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "TOKEN_ENV",
    "OwnedProcesses",
    "carries",
    "find_processes",
    "is_alive",
    "leader_pid",
    "new_token",
    "start_identity",
    "terminate",
    "terminate_token",
]

TOKEN_ENV = "EMBODIED_HARNESS_MCP_TOKEN"
"""Environment variable that marks a subprocess (and its children) as owned by one start."""

_PROC = Path("/proc")

_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")
"""Whether processes can be held by pidfd (Linux 5.3+); elsewhere a pid is re-checked
for the token just before each signal."""


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
    needles = [_needle(token) for token in tokens]
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


def start_identity(pid: int) -> str | None:
    """What tells this process apart from any later one given the same number: the boot's
    id and the tick the process started at (``/proc``); None where there is no ``/proc`` or
    no such process. A pid alone is handed out again once its process is gone."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    try:
        boot = (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{boot}:{fields[19]}"  # field 22 of stat, counted from the state (field 3)


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


def carries(pid: int, token: str) -> bool:
    """True while ``pid`` runs and its environment carries ``token``: a pid whose process
    ended and whose number was handed to another process does not."""
    return _environ_has(pid, _needle(token)) and is_alive(pid)


def _needle(token: str) -> bytes:
    return f"{TOKEN_ENV}={token}\0".encode()


class _Held:
    """One process to end, held by a pidfd where the kernel has them (Linux 5.3+).

    A pid alone names whatever process has that number now: once the server ended and was
    reaped, the number can be handed to another process (``pid_max`` is often 32768), and a
    signal by number would reach it. The pidfd is opened and *then* the token checked, so
    it refers to the owned process; the kernel sends every later signal to that process or
    to nobody, and says when it has ended."""

    def __init__(self, pid: int, fd: int | None) -> None:
        self.pid = pid
        self.fd = fd

    @classmethod
    def open(cls, pid: int, token: str) -> _Held | None:
        fd: int | None = None
        if _PIDFD:
            try:
                fd = os.pidfd_open(pid)
            except OSError:  # gone already
                return None
        if not carries(pid, token):  # the number is someone else's now, or it ended
            if fd is not None:
                os.close(fd)
            return None
        return cls(pid, fd)

    def ended(self) -> bool:
        if self.fd is None:
            return not is_alive(self.pid)
        readable, _, _ = select.select([self.fd], [], [], 0)
        return bool(readable)  # a pidfd turns readable when its process exits

    def signal(self, sig: signal.Signals) -> None:
        """Signal the process's group when it leads its own group (helpers included), else
        the process alone; never our own group, which would signal the harness itself."""
        if self.ended():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(self.pid)
            if group == self.pid and group != os.getpgrp():
                os.killpg(group, sig)  # alive (checked above), so the group is still its own
            elif self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            else:
                os.kill(self.pid, sig)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def terminate(pids: Iterable[int], *, token: str, grace_s: float = 1.0) -> list[int]:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL what is left, of the ``pids`` that
    carry ``token``; a pid that does not (it ended, and may be another process's number
    now) is left alone. Returns the pids that were alive and owned when it started."""
    held = [h for h in (_Held.open(pid, token) for pid in pids) if h is not None]
    try:
        for process in held:
            process.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        remaining = list(held)
        while remaining and time.monotonic() < deadline:
            time.sleep(0.01)
            remaining = [process for process in remaining if not process.ended()]
        for process in remaining:
            process.signal(signal.SIGKILL)
    finally:
        for process in held:
            process.close()
    return [process.pid for process in held]


def terminate_token(token: str, *, grace_s: float = 1.0) -> list[int]:
    """End every live process carrying ``token`` (see :func:`terminate`)."""
    return terminate(find_processes([token]), token=token, grace_s=grace_s)


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
        ended: list[int] = []
        for token in self.tokens():
            ended.extend(terminate_token(token, grace_s=grace_s))
        return ended
