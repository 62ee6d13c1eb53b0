"""The task-level check for real robots: a vision model judges the whole task.

In a context of its own, the evaluator model sees the camera images taken after the robot
stopped, the instruction and its revisions, and answers a JSON verdict that is validated
(one repair round; a second malformed answer is ``unverified``). An ``achieved`` needs at
least one condition and every condition held. The simulators' check, the protocol and how
a check combines with the model's own claim are :mod:`harness.world.task_check`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from embodiment.types import Observation
from harness.config import ObservationConfig
from harness.events import GoalCondition, TaskOutcome
from harness.messages import RefreshedBlock
from harness.prompts import TASK_CHECK_PROMPT
from harness.providers.base import Model
from harness.world.evaluation import Judge, parse_json_answer
from harness.world.observation import encode_observation_frames, render_observation
from harness.world.task_check import TaskCheckResult

__all__ = ["ModelTaskCheck", "parse_task_answer"]


class _ConditionAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    condition: str = Field(min_length=1)
    held: bool
    evidence: str = ""


class _TaskAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    outcome: Literal["achieved", "not_achieved", "cannot_tell"]
    conditions: list[_ConditionAnswer] = Field(default_factory=list)
    evidence: str = Field(min_length=1)


def parse_task_answer(text: str) -> tuple[_TaskAnswer | None, str]:
    """A task verdict from a model's answer, or (None, what is wrong with it)."""
    answer, problem = parse_json_answer(text, _TaskAnswer)
    if answer is None:
        return None, problem
    held = [c.held for c in answer.conditions]
    if answer.outcome == "achieved" and (not held or not all(held)):
        return None, (
            "outcome 'achieved' needs at least one condition and every condition held; "
            "list them, or answer not_achieved or cannot_tell"
        )
    if answer.outcome == "not_achieved" and all(held) and held:
        return None, "outcome 'not_achieved' but every condition held; name the one that failed"
    return answer, ""


class ModelTaskCheck:
    """A vision model judges the whole task from the images after it (real robots).

    Args:
        model: The evaluator model (``evaluation.model``); its requests are its own.
        observe: Takes the observation after the task (the driver's ``observe``).
        image_settings: How frames are encoded (``observation``).
        max_images: Camera views sent.
    """

    kind: Literal["programmatic", "model"] = "model"

    def __init__(
        self,
        model: Model,
        observe: Callable[[], Observation],
        *,
        image_settings: ObservationConfig | None = None,
        max_images: int = 3,
        max_output_tokens: int = 600,
    ) -> None:
        self.model = model
        self.observe = observe
        self.image_settings = image_settings or ObservationConfig()
        self.max_images = max_images
        self.name = f"model:{getattr(model, 'name', 'evaluator')}"
        self.judge = Judge(
            model,
            prompt_name="task_check",
            prompt=TASK_CHECK_PROMPT,
            max_output_tokens=max_output_tokens,
        )

    def check(
        self,
        instruction: str,
        revisions: Sequence[str],
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> TaskCheckResult:
        try:
            observation = self.observe()
        except Exception as exc:
            return self._result("unverified", f"no observation after the task: {exc}")
        if not observation.images:
            return self._result("unverified", "no camera image to judge the task from")
        images = encode_observation_frames(observation, self.image_settings, limit=self.max_images)
        lines = [f"Instruction: {instruction}"]
        lines += [f"Revision {i}: {text}" for i, text in enumerate(revisions, 1)]
        lines.append(f"Images: {', '.join(i.label for i in images)} (taken after the task).")
        refreshed = RefreshedBlock(observation=render_observation(observation), images=images)
        try:
            answer, problems = self.judge.answer(
                "\n".join(lines),
                refreshed,
                parse_task_answer,
                shape='{"outcome": ..., "conditions": [...], "evidence": ...}',
                cancelled=cancelled,
            )
        except Exception as exc:
            return self._result("unverified", f"the evaluator failed: {type(exc).__name__}: {exc}")
        if answer is None:
            return self._result(
                "unverified",
                f"the evaluator's answer was malformed twice ({'; then '.join(problems)}); "
                "the outcome is unconfirmed",
            )
        conditions = [
            GoalCondition(condition=c.condition, held=c.held, evidence=c.evidence)
            for c in answer.conditions
        ]
        outcome: TaskOutcome = "unverified" if answer.outcome == "cannot_tell" else answer.outcome
        return self._result(outcome, answer.evidence, conditions)

    def _result(
        self, outcome: TaskOutcome, summary: str, conditions: list[GoalCondition] | None = None
    ) -> TaskCheckResult:
        return TaskCheckResult(outcome, self.name, summary, conditions or [])
