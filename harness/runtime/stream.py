"""What a task hands back to its caller: the event stream, and the flattened result."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from harness.events import EventBase, OutcomeEvidence, TaskOutcome, TaskStatus, task_succeeded
from harness.messages import Usage
from harness.runtime.loop import TaskLoop

__all__ = ["RunResult", "TaskStream"]


@dataclass(frozen=True)
class RunResult:
    """What ``Harness.run()`` returns: the ``done`` event's content, flattened.

    ``status`` is how the loop ended; ``outcome`` whether the goal was met (``achieved``,
    ``not_achieved``, ``unverified``), with its ``evidence``.
    """

    status: TaskStatus
    report: str
    turns: int
    usage: Usage
    task_id: str
    termination_reason: str
    outcome: TaskOutcome = "unverified"
    evidence: OutcomeEvidence = field(default_factory=OutcomeEvidence)

    @property
    def ok(self) -> bool:
        """Completed with its goal confirmed, or completed with no task check configured
        (the rule of ``harness run``'s exit code 0; see :func:`harness.events.task_succeeded`)."""
        return task_succeeded(self.status, self.outcome, self.evidence)


class TaskStream(Iterator[EventBase]):
    """The iterator ``run_stream()`` returns.

    It holds the session's task slot from the moment it is created, so a second task is
    refused at once, and gives the slot back when the stream ends, is closed, or is garbage
    collected without ever being iterated.
    """

    def __init__(self, loop: TaskLoop) -> None:
        self.loop = loop
        self.task_id = loop.task_id
        self._events = loop.events()
        self._started = False

    def __iter__(self) -> TaskStream:
        return self

    def __next__(self) -> EventBase:
        self._started = True
        return next(self._events)

    def close(self) -> None:
        """Stop the task early: the robot is stopped and the harness stays usable."""
        if self._started:
            self._events.close()
        else:
            lane = self.loop.lane
            lane.session.end_task(lane.state)

    def __enter__(self) -> TaskStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
