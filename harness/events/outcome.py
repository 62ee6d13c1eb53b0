"""What a task's ending means: how the loop ended (``TaskStatus``), whether the goal was met
(``TaskOutcome``) with its evidence, and the one rule for what a script may treat as success
(``task_succeeded``, exit code 0 of ``harness run``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GoalCondition", "OutcomeEvidence", "TaskOutcome", "TaskStatus", "task_succeeded"]


TaskStatus = Literal[
    "completed", "cancelled", "failed", "max_turns", "failure_budget", "max_tokens"
]
"""How the loop ended (the specification's statuses, and ``max_tokens``: a task given a
token budget, such as a sub-agent, that spent it)."""

TaskOutcome = Literal["achieved", "not_achieved", "unverified"]
"""Whether the task's goal was met, as far as the harness can tell: ``achieved`` only when a
task-level check confirmed it, ``not_achieved`` when a check or the model itself says it was
not, ``unverified`` otherwise (no check configured, the check could not decide, or the task
did not complete)."""


class GoalCondition(BaseModel):
    """One post-condition of the whole task, and whether it held when the task ended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    condition: str
    """What had to hold, e.g. ``red_cube_1 in tray_1``."""
    held: bool
    evidence: str = ""


class OutcomeEvidence(BaseModel):
    """Why a task's ``outcome`` is what it is: which check ran, who judged, what held."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: Literal["programmatic", "model", "none"] = "none"
    """The task-level check configured (``evaluation.task_check``); ``none``: nothing but
    the model's own word."""
    checked_by: str = ""
    """Who decided: ``simulator`` (ground truth), ``model:NAME`` (a vision model), ``the
    model's report`` (the acting model said it did not do the task), or empty."""
    summary: str = ""
    conditions: list[GoalCondition] = Field(default_factory=list)
    claim: Literal["achieved", "not_achieved"] | None = None
    """What the acting model's report claimed (its ``Outcome:`` line), if anything."""

    @property
    def held(self) -> list[GoalCondition]:
        return [c for c in self.conditions if c.held]

    @property
    def failed(self) -> list[GoalCondition]:
        return [c for c in self.conditions if not c.held]


def task_succeeded(status: str, outcome: str, evidence: OutcomeEvidence) -> bool:
    """What a script may treat as success: the task completed and its goal was confirmed,
    or it completed and no task check is configured (then nothing could confirm it; the
    evidence says so). A check that could not decide, or a goal not achieved, is not."""
    if status != "completed":
        return False
    return outcome == "achieved" or (outcome == "unverified" and evidence.check == "none")
