"""The robot's side of a session: one physical command at a time, and a stop that is
never silent.

A physical tool that runs out of time is interrupted through ``driver.stop()`` and, after
a grace period, abandoned by the loop; but if its ``execute`` still has not returned, the
driver may still be carrying the command out. Until it returns, :class:`RobotGuard`
refuses every further physical call (the ``driver_busy`` gate), so two commands never
overlap. At the end of each task it stops the robot and reports, as ``safety`` events,
anything that leaves the robot possibly moving: a ``stop()`` that raised, or a command
that never returned. The loop turns those into ``done.robot_stopped = False``, a failed
task (for a command that never returned) and a warning in the report.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.events import SafetyEvent

if TYPE_CHECKING:
    from embodiment.types import Driver

__all__ = ["FINAL_WAIT_S", "PendingCommand", "RobotGuard"]

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

    def age_s(self) -> float:
        return time.monotonic() - self.since


class RobotGuard:
    """Tracks the physical command in flight and stops the robot at the end of a task."""

    def __init__(self, driver: Driver | None) -> None:
        self.driver = driver
        self._pending: PendingCommand | None = None
        self._lock = threading.Lock()

    def abandoned(self, tool: str, worker: threading.Thread) -> None:
        """The loop gave up waiting for ``tool``; its worker may still be running."""
        if worker.is_alive():
            with self._lock:
                self._pending = PendingCommand(tool, worker, time.monotonic())

    def busy(self) -> PendingCommand | None:
        """The abandoned command that has still not returned, if any."""
        with self._lock:
            pending = self._pending
            if pending is not None and not pending.worker.is_alive():
                self._pending = pending = None
            return pending

    def interrupt(self) -> None:
        """Interrupt a physical action in flight (called while the tool is blocking)."""
        if self.driver is not None:
            self.driver.stop()

    def stop(self) -> list[SafetyEvent]:
        """Stop the robot at the end of a task; what may have left it moving, as events."""
        problems: list[SafetyEvent] = []
        if self.driver is not None:
            try:
                self.driver.stop()
            except Exception as exc:
                logger.exception("driver.stop() failed at the end of the task")
                problems.append(
                    SafetyEvent(
                        problem="stop_failed",
                        reason=(
                            f"driver.stop() failed at the end of the task ({type(exc).__name__}: "
                            f"{exc}); the robot may still be moving"
                        ),
                    )
                )
        pending = self.busy()
        if pending is not None:
            pending.worker.join(FINAL_WAIT_S)
            pending = self.busy()
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

    def stopped(self, problems: list[SafetyEvent]) -> bool | None:
        """``done.robot_stopped`` for these problems (None when there is nothing to stop)."""
        if problems:
            return False
        return True if self.driver is not None else None
