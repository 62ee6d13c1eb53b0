"""The task check of a world that judges itself: a benchmark's own goal predicates.

Some worlds carry their own definition of success: a benchmark's tasks end when its goal
predicates hold (BDDL's, for example), evaluated by the env's own functions. For such a
world nothing of ours may decide: :class:`PredicateTaskCheck` asks the driver, when the
model ends the task, for its success check (``goal_achieved()``) and for each goal
predicate's value (``goal_predicates()``: ``(text, held, evidence)`` triples), and reports
them as they are. The outcome is ``achieved`` exactly when the world's success check says
so; the predicates are the evidence. A goal revised by the operator is not the benchmark's
goal any more, so the check is ``unverified`` then (the world cannot judge a goal it was not
given)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from harness.events import GoalCondition
from harness.world.task_check import TaskCheckResult

__all__ = ["PredicateTaskCheck", "has_goal_predicates"]

logger = logging.getLogger(__name__)


def has_goal_predicates(driver: Any) -> bool:
    """Whether a driver judges its own task (``goal_predicates()`` and ``goal_achieved()``)."""
    return all(callable(getattr(driver, m, None)) for m in ("goal_predicates", "goal_achieved"))


class PredicateTaskCheck:
    """The whole-task check from a world's own goal predicates.

    Args:
        predicates: Each goal predicate now: ``(text, held, evidence)``.
        achieved: The world's own success check now.
        name: Who judges (``checked_by`` in the evidence): the world's name.
    """

    kind: Literal["programmatic", "model"] = "programmatic"

    def __init__(
        self,
        predicates: Callable[[], Iterable[Sequence[Any]]],
        achieved: Callable[[], bool],
        *,
        name: str = "world",
    ) -> None:
        self.predicates = predicates
        self.achieved = achieved
        self.name = name

    @classmethod
    def of(cls, driver: Any, *, name: str | None = None) -> PredicateTaskCheck:
        """The check of a driver with ``goal_predicates()`` and ``goal_achieved()``, named
        by its ``judge_name`` (else ``world``)."""
        who = name or str(getattr(driver, "judge_name", "") or "world")
        return cls(driver.goal_predicates, driver.goal_achieved, name=who)

    def check(
        self,
        instruction: str,
        revisions: Sequence[str],
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> TaskCheckResult:
        conditions = [
            GoalCondition(condition=str(text), held=bool(held), evidence=str(evidence))
            for text, held, evidence in self.predicates()
        ]
        achieved = bool(self.achieved())
        holding = sum(c.held for c in conditions)
        summary = f"{holding} of {len(conditions)} {self.name.upper()} goal predicates hold"
        failed = [c for c in conditions if not c.held]
        if failed:
            summary += "; not: " + "; ".join(c.condition for c in failed[:4])
        if revisions:
            return TaskCheckResult(
                "unverified",
                self.name,
                f"the goal was revised ({len(revisions)} revision(s)); {self.name}'s goal "
                f"predicates judge only the published task ({summary})",
                conditions,
            )
        if achieved != (not failed):
            # The world's success check decides; say that its parts disagreed.
            summary += f"; {self.name}'s success check says {'yes' if achieved else 'no'}"
            logger.warning("goal predicates and success check disagree: %s", summary)
        return TaskCheckResult(
            "achieved" if achieved else "not_achieved", self.name, summary, conditions
        )
