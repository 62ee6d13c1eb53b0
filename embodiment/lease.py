"""A lease on a piece of physical hardware: one driver connection per robot and host.

One Harness is one session, and a robot must never take commands from two sessions at once
(two scripts, two worker processes of an evaluation, two Ray actors on the robot's host).
A driver of real hardware says which hardware it drives by offering
``hardware_identity() -> str | None`` (an arm's serial number, ``"ur5e@192.168.1.20"``);
before it connects, its holder takes a :class:`HardwareLease` on that identity. The lease
is an operating-system file lock (``filelock``), so it is released when its holder closes
it or dies, whatever way it dies; a second holder waits up to its timeout and then fails
with :class:`~embodiment.errors.HardwareBusyError` naming who holds it. Simulators declare
no identity and take no lease.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from filelock import FileLock, Timeout

from embodiment.errors import HardwareBusyError

__all__ = [
    "LEASE_DIR_ENV",
    "HardwareIdentified",
    "HardwareLease",
    "default_lease_dir",
    "hardware_identity",
]

LEASE_DIR_ENV = "EMBODIED_LEASE_DIR"
"""Environment variable naming the lease folder (every holder on a host must agree)."""


@runtime_checkable
class HardwareIdentified(Protocol):
    """A driver of physical hardware: the identity of what it drives (None: nothing
    physical, e.g. a dry-run mode)."""

    def hardware_identity(self) -> str | None: ...


def hardware_identity(driver: Any) -> str | None:
    """What ``driver`` says it drives, or None for a driver that declares nothing (a
    simulator). An identity that is not a non-empty string is a driver bug (TypeError)."""
    declare = getattr(driver, "hardware_identity", None)
    if not callable(declare):
        return None
    identity = declare()
    if identity is None:
        return None
    if not isinstance(identity, str) or not identity.strip():
        raise TypeError(
            f"{type(driver).__name__}.hardware_identity() returned {identity!r}; expected a "
            "non-empty string naming the hardware, or None"
        )
    return identity.strip()


def default_lease_dir() -> Path:
    """``$EMBODIED_LEASE_DIR``, else ``<system temp>/embodied-harness-leases``."""
    configured = os.environ.get(LEASE_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(tempfile.gettempdir()) / "embodied-harness-leases"


class HardwareLease:
    """The lease on one hardware identity (see the module docstring).

    Args:
        identity: What is leased (``hardware_identity()`` of the driver).
        timeout_s: How long :meth:`acquire` waits for another holder to let go (0: fail
            at once when it is held).
        folder: Where the lease files are (:func:`default_lease_dir` when omitted).
        owner: Who asks, for the other holder's error message (e.g. a session id).
    """

    def __init__(
        self,
        identity: str,
        *,
        timeout_s: float = 0.0,
        folder: str | os.PathLike[str] | None = None,
        owner: str = "",
    ) -> None:
        if timeout_s < 0:
            raise ValueError(f"timeout_s must be >= 0, got {timeout_s}")
        self.identity = identity
        self.timeout_s = timeout_s
        self.owner = owner
        self.folder = Path(folder) if folder is not None else default_lease_dir()
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", identity)[:60]
        digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:12]
        self.path = self.folder / f"{slug}-{digest}.lock"
        self.holder_path = self.path.with_suffix(".holder.json")
        # thread_local=False: the lease belongs to its Harness, which may be closed from
        # another thread than the one that opened it.
        self._lock = FileLock(self.path, timeout=timeout_s, thread_local=False)
        self._guard = threading.Lock()
        self.held = False

    def acquire(self) -> HardwareLease:
        """Take the lease, waiting up to ``timeout_s``; raises HardwareBusyError."""
        with self._guard:
            if self.held:
                return self
            self.folder.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            try:
                self._lock.acquire(timeout=self.timeout_s, poll_interval=0.05)
            except Timeout:
                raise HardwareBusyError(
                    self.identity,
                    holder=self.holder(),
                    waited_s=time.monotonic() - started,
                    lease=str(self.path),
                ) from None
            self.held = True
            self._write_holder()
            return self

    def release(self) -> None:
        """Give the lease back (idempotent)."""
        with self._guard:
            if not self.held:
                return
            try:
                self.holder_path.unlink(missing_ok=True)
            finally:
                self._lock.release(force=True)
                self.held = False

    def holder(self) -> dict[str, Any] | None:
        """Who holds the lease, as its holder wrote it (pid, host, owner, since), or None
        when that is unknown."""
        try:
            data = json.loads(self.holder_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _write_holder(self) -> None:
        info = {
            "identity": self.identity,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "owner": self.owner,
            "since": time.time(),
        }
        scratch = self.holder_path.with_name(f".{self.holder_path.name}.{os.getpid()}")
        scratch.write_text(json.dumps(info), encoding="utf-8")
        os.replace(scratch, self.holder_path)

    def __enter__(self) -> HardwareLease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
