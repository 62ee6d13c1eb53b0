"""The robot's side of a session: one physical command at a time per robot, and a stop
that is never silent.

A robot may be driven by more than one Harness in a process (two control scripts' threads,
an operator console beside a batch run) through the same driver object, or through two
driver objects for the same hardware (the same ``hardware_identity()``, which is also the
name of its lease), or through MCP servers started from the same command line or URL
(:func:`mcp_robot_name`). Every such Harness shares one :class:`RobotLine` for it: the slot a
command holds from its admission (fresh readings, the envelope) until its driver returns,
the command that was abandoned without returning, and a generation that changes whenever a
command starts or ends on it (a reading taken in an earlier generation is no longer
fresh: the robot may have moved since, or was moving while it was taken). Lines
are kept per driver by weak reference, so a driver nobody uses any more can be collected.

A physical tool that runs out of time is interrupted through ``driver.stop()`` and, after
a grace period, abandoned by the loop; but if its ``execute`` still has not returned, the
driver may still be carrying the command out. Until it returns, every Harness on the robot
refuses further physical calls (the ``driver_busy`` gate), so two commands never overlap.
At the end of each task :class:`RobotGuard` stops the robot (unless another session's
command is running on it: stopping that is that session's to do) and reports, as
``safety`` events, anything that leaves the robot possibly moving: a ``stop()`` that
raised, or a command of this session that never returned. The loop turns those into
``done.robot_stopped = False``, a failed task (for a command that never returned) and a
warning in the report.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from embodiment.lease import hardware_identity
from harness.events import SafetyEvent

if TYPE_CHECKING:
    from collections.abc import Sequence

    from embodiment.types import Driver
    from harness.config import MCPServerConfig

__all__ = [
    "FINAL_WAIT_S",
    "PendingCommand",
    "RobotGuard",
    "RobotLine",
    "Slot",
    "mcp_robot_name",
    "robot_line",
    "robot_line_named",
]

logger = logging.getLogger(__name__)

FINAL_WAIT_S = 1.0
"""How long the end of a task waits, after the final ``stop()``, for a pending command."""


@dataclass(frozen=True)
class PendingCommand:
    """A physical command the loop abandoned whose handler has not returned."""

    tool: str
    worker: threading.Thread
    since: float
    """``time.monotonic()`` when it was abandoned."""
    session: str = ""
    """The session that sent it."""

    def age_s(self) -> float:
        return time.monotonic() - self.since


@dataclass(frozen=True)
class Slot:
    """The right to send one command to a robot, held from its admission until its
    driver returns; :meth:`RobotLine.release` gives it back."""

    line: RobotLine
    session: str
    tool: str


class RobotLine:
    """One robot's command slot, abandoned command and command generation, shared by every
    session in the process that drives it (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._slot = threading.Lock()
        self._state = threading.Lock()
        self._holder: Slot | None = None
        self._pending: PendingCommand | None = None
        self._generation = 0

    # ------------------------------------------------------------------ the slot

    def try_take(self, session: str, tool: str, timeout_s: float) -> Slot | None:
        """The slot, waiting up to ``timeout_s`` for the command holding it; None when it
        is still held."""
        if not self._slot.acquire(timeout=max(timeout_s, 0.0)):
            return None
        slot = Slot(self, session, tool)
        with self._state:
            self._holder = slot
        return slot

    def release(self, slot: Slot) -> None:
        """Give the slot back (only its holder can; a second release is ignored)."""
        with self._state:
            if self._holder is not slot:
                return
            self._holder = None
        self._slot.release()

    def holder(self) -> Slot | None:
        """Who holds the slot now (None: nobody)."""
        with self._state:
            return self._holder

    def holds(self, slot: Slot | None) -> bool:
        return slot is not None and self.holder() is slot

    # ------------------------------------------------------------------ bookkeeping

    @property
    def generation(self) -> int:
        """Changes whenever a command starts or ends on this robot: a reading is fresh
        only in the generation it was taken in."""
        with self._state:
            return self._generation

    def started(self) -> None:
        """A command is about to reach the robot."""
        with self._state:
            self._generation += 1

    def returned(self) -> None:
        """A command's driver returned (for one abandoned earlier: noticed by :meth:`busy`)."""
        with self._state:
            self._generation += 1

    def abandoned(self, tool: str, worker: threading.Thread, session: str) -> None:
        if worker.is_alive():
            with self._state:
                self._pending = PendingCommand(tool, worker, time.monotonic(), session)

    def busy(self) -> PendingCommand | None:
        """The abandoned command that has still not returned, if any (whoever sent it)."""
        with self._state:
            pending = self._pending
            if pending is not None and not pending.worker.is_alive():
                self._pending = pending = None
                self._generation += 1  # it has returned: the robot may have moved until now
            return pending


_REGISTRY_LOCK = threading.RLock()
"""Reentrant: a driver collected while the lock is held runs :func:`_forget` on the same
thread."""
_BY_IDENTITY: weakref.WeakValueDictionary[str, RobotLine] = weakref.WeakValueDictionary()
_BY_OBJECT: dict[int, tuple[Any, RobotLine]] = {}


def robot_line(driver: Any) -> RobotLine:
    """The line every session driving ``driver`` shares: by its hardware identity (its
    lease name) when it declares one, else by the driver object itself."""
    identity: str | None = None
    try:
        identity = hardware_identity(driver)
    except TypeError:
        logger.warning("%s declares an invalid hardware identity", type(driver).__name__)
    with _REGISTRY_LOCK:
        if identity is not None:
            line = _BY_IDENTITY.get(identity)
            if line is None:
                line = RobotLine(identity)
                _BY_IDENTITY[identity] = line
            return line
        key = id(driver)
        entry = _BY_OBJECT.get(key)
        if entry is not None and entry[0]() is driver:
            return entry[1]
        line = RobotLine(f"{type(driver).__name__} at {key:#x}")
        try:
            ref: Any = weakref.ref(driver, lambda dead, key=key: _forget(key, dead))
        except TypeError:  # cannot be weakly referenced: kept for the process's life
            ref = _Strong(driver)
        _BY_OBJECT[key] = (ref, line)
        return line


def robot_line_named(name: str) -> RobotLine:
    """The line every session naming its robot ``name`` shares (a robot reached through
    MCP servers has no driver object: :func:`harness.mcp.naming.physical_servers_identity`
    names it, :func:`mcp_robot_name`). Kept while a session holds it."""
    with _REGISTRY_LOCK:
        line = _BY_IDENTITY.get(name)
        if line is None:
            line = RobotLine(name)
            _BY_IDENTITY[name] = line
        return line


def mcp_robot_name(servers: Sequence[MCPServerConfig], base_dir: str | None = None) -> str | None:
    """The name of the robot a session's physical MCP tools drive: None when no server has
    physical tools.

    Two sessions whose physical servers are the same (the same command line and working
    directory, or the same URL) drive the same robot and share one line, so their commands
    never overlap. The servers' environments are left out on purpose: that errs on the safe
    side, since two servers that are in fact different robots are only serialised, never
    overlapped."""
    parts: list[str] = []
    for server in servers:
        if not server.physical:
            continue
        if server.transport == "streamable-http":
            parts.append(f"http {server.url}")
        else:
            cwd = os.path.realpath(server.cwd or base_dir or os.getcwd())
            parts.append(f"stdio {server.command} {' '.join(server.args)} in {cwd}")
    if not parts:
        return None
    # A digest, not the command lines: an argument may hold a secret, and the name is logged.
    digest = hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:16]
    names = "+".join(sorted(server.name for server in servers if server.physical))
    return f"mcp {names} {digest}"


def _forget(key: int, dead: Any) -> None:
    with _REGISTRY_LOCK:
        entry = _BY_OBJECT.get(key)
        if entry is not None and entry[0] is dead:
            del _BY_OBJECT[key]


class _Strong:
    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


class RobotGuard:
    """One session's view of its robot's line: the slot, the abandoned command, the stop
    at the end of each task."""

    def __init__(
        self, driver: Driver | None, *, session: str = "", robot_name: str | None = None
    ) -> None:
        """``robot_name`` names the robot that physical tools of MCP servers drive
        (:func:`mcp_robot_name`); sessions naming the same robot share its line.

        Which line: a driver's hardware identity (its lease name) first; else the MCP
        robot's name, when there is one (a driver beside physical MCP servers that declares
        no hardware is the robot's observer, or a simulator); else the driver object. With
        neither driver nor name nothing physical reaches a robot through this session and
        its line is its own."""
        self.driver = driver
        self.session = session
        identity: str | None = None
        if driver is not None:
            try:
                identity = hardware_identity(driver)
            except TypeError:
                identity = None  # robot_line below logs it
        if identity is None and robot_name is not None:
            self.line = robot_line_named(robot_name)
        elif driver is not None:
            self.line = robot_line(driver)
        else:
            self.line = RobotLine("no driver")

    def take(self, tool: str, timeout_s: float) -> Slot | None:
        return self.line.try_take(self.session, tool, timeout_s)

    def release(self, slot: Slot) -> None:
        self.line.release(slot)

    def abandoned(self, tool: str, worker: threading.Thread) -> None:
        """The loop gave up waiting for ``tool``; its worker may still be running."""
        self.line.abandoned(tool, worker, self.session)

    def busy(self) -> PendingCommand | None:
        """The abandoned command on this robot that has still not returned, if any."""
        return self.line.busy()

    def interrupt(self) -> None:
        """Interrupt a physical action in flight (called while the tool is blocking)."""
        if self.driver is not None:
            self.driver.stop()

    def halt(self) -> bool:
        """Stop the robot now, from any thread (an operator's Stop, before the loop has
        read its cancel), unless another session's command holds it (stopping that is that
        session's to do). ``driver.stop()`` may be called from any thread at any time (the
        Driver contract); the task still ends through its cancel. Returns whether it
        stopped the driver."""
        if self.driver is None:
            return False
        holder = self.line.holder()
        if holder is not None and holder.session != self.session:
            return False
        try:
            self.driver.stop()
        except Exception:
            logger.exception("driver.stop() failed on the operator's Stop")
            return False
        return True

    def stop(self) -> list[SafetyEvent]:
        """Stop the robot at the end of a task; what may have left it moving, as events."""
        problems: list[SafetyEvent] = []
        if self.driver is not None:
            # Held for the stop itself, so it never lands in another session's command.
            slot = self.line.try_take(self.session, "stop", 0.0)
            if slot is None:
                holder = self.line.holder()
                logger.info(
                    "not stopping %s at the end of the task: %s is running on it",
                    self.line.name,
                    f"session {holder.session}'s {holder.tool}" if holder else "a command",
                )
            else:
                try:
                    self.driver.stop()
                except Exception as exc:
                    logger.exception("driver.stop() failed at the end of the task")
                    problems.append(
                        SafetyEvent(
                            problem="stop_failed",
                            reason=(
                                f"driver.stop() failed at the end of the task "
                                f"({type(exc).__name__}: {exc}); the robot may still be moving"
                            ),
                        )
                    )
                finally:
                    self.line.release(slot)
        pending = self._own_pending()
        if pending is not None:
            pending.worker.join(FINAL_WAIT_S)
            pending = self._own_pending()
        if pending is not None:
            problems.append(
                SafetyEvent(
                    problem="command_not_returned",
                    tool=pending.tool,
                    reason=(
                        f"{pending.tool} never returned: it was stopped at its timeout "
                        f"{pending.age_s():.1f} s ago and its driver may still be carrying it "
                        "out; the robot may still be moving"
                    ),
                )
            )
        return problems

    def _own_pending(self) -> PendingCommand | None:
        pending = self.busy()
        return pending if pending is not None and pending.session == self.session else None

    def stopped(self, problems: list[SafetyEvent]) -> bool | None:
        """``done.robot_stopped`` for these problems (None when there is nothing to stop)."""
        if problems:
            return False
        return True if self.driver is not None else None
