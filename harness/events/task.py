"""A task's life as the operator sees it: its start (or resume), the tools it was offered, skills
loaded, revisions, questions and notices for people, memory consolidation, and the single
``done`` event.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.events.base import EventBase
from harness.events.outcome import (
    OutcomeEvidence,
    TaskOutcome,
    TaskStatus,
    task_succeeded,
)
from harness.messages import Usage

__all__ = [
    "DoneEvent",
    "MemoryConsolidationEvent",
    "NotificationEvent",
    "ReplanEvent",
    "SkillLoadedEvent",
    "TaskResumedEvent",
    "TaskStartedEvent",
    "ToolsListedEvent",
    "UserQueryEvent",
]


class TaskStartedEvent(EventBase):
    type: Literal["task_started"] = "task_started"
    instruction: str
    max_turns: int
    images: int = 0


class TaskResumedEvent(EventBase):
    """A task interrupted by a crash continues in a new process (``Harness.resume``).

    ``interrupted_calls`` lists the tool calls the model had requested without a recorded
    result: ``started`` ones are reported to the model as outcome unknown (never run
    again), the others as not executed.
    """

    type: Literal["task_resumed"] = "task_resumed"
    instruction: str
    from_turn: int
    max_turns: int
    interrupted_calls: list[dict[str, Any]] = Field(default_factory=list)
    previous_pid: int | None = None
    world: Literal["restored", "re_observed", "none"] = "none"
    """What became of the world: ``restored`` (a simulator put back into the state recorded
    after turn ``world_turn``), ``re_observed`` (a real robot: its state is whatever it is
    now, observed before the next model call), ``none`` (no driver)."""
    world_turn: int | None = None

    def describe_world(self) -> str:
        """What became of the world, for people."""
        if self.world == "restored":
            return f"world restored to its state after turn {self.world_turn}"
        if self.world == "re_observed":
            return "world re-observed (its state is not restored)"
        return ""

    def describe_interrupted(self) -> str:
        """The interrupted calls for people: ``move_to (outcome unknown)``."""
        return ", ".join(
            f"{c['name']} ({'outcome unknown' if c['started'] else 'not executed'})"
            for c in self.interrupted_calls
        )


class ToolsListedEvent(EventBase):
    """The tool definitions visible to the model for this task."""

    type: Literal["tools_listed"] = "tools_listed"
    tools: list[str]
    physical: list[str] = Field(default_factory=list)
    tokens: int = 0


class SkillLoadedEvent(EventBase):
    type: Literal["skill_loaded"] = "skill_loaded"
    name: str
    tokens: int


class ReplanEvent(EventBase):
    type: Literal["replan"] = "replan"
    revision: str


class UserQueryEvent(EventBase):
    type: Literal["user_query"] = "user_query"
    question: str
    answer: str | None = None
    status: Literal["asked", "answered", "timeout", "cancelled", "unavailable"] = "asked"


class NotificationEvent(EventBase):
    type: Literal["notification"] = "notification"
    message: str
    level: Literal["info", "warning", "error"] = "info"


class MemoryConsolidationEvent(EventBase):
    type: Literal["memory_consolidation"] = "memory_consolidation"
    status: Literal["completed", "skipped", "failed", "cancelled"]
    kept: list[str] = Field(default_factory=list)
    rejected: list[dict[str, str]] = Field(default_factory=list)
    reason: str = ""


class DoneEvent(EventBase):
    """The single terminal event of a task.

    ``status`` is how the loop ended; ``outcome`` whether the goal was met (see
    :data:`TaskOutcome`), with its ``evidence``.
    """

    type: Literal["done"] = "done"
    status: TaskStatus
    termination_reason: str
    report: str = ""
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    outcome: TaskOutcome = "unverified"
    evidence: OutcomeEvidence = Field(default_factory=OutcomeEvidence)
    robot_stopped: bool | None = None
    """False when the robot may still be moving (a failed ``stop()``, or a physical command
    that never returned; the ``safety`` events say which); None without a robot."""

    @property
    def succeeded(self) -> bool:
        """See :func:`task_succeeded` (exit code 0 of ``harness run``); never while the
        robot may still be moving."""
        if self.robot_stopped is False:
            return False
        return task_succeeded(self.status, self.outcome, self.evidence)
