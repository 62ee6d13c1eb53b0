"""The decide phase's answer to a provider overflow: one step of a ladder per rejected
request, then a named failure.

The steps are a forced compaction, then references instead of bodies outside the newest
exchange, then a minimal-reference request (the steps themselves are
:mod:`harness.context.compaction.overflow`); a fourth rejection ends the task with the
numbers. When the provider states its limit, the session's working budget is lowered to
it first. Kept apart from :mod:`~harness.runtime.phases.decide` so the model call reads
as a call, and what a rejection costs reads in one place.
"""

from __future__ import annotations

from harness.context import Budget, Context
from harness.context.budget import budget_error
from harness.context.compaction.overflow import MINIMAL, REFERENCE, OverflowStep, reference_bodies
from harness.errors import ContextOverflowError
from harness.runtime.lane import Lane, Steps
from harness.runtime.phases.refresh import compact
from harness.runtime.task import TaskEnding

__all__ = ["OVERFLOW_LADDER", "lower_budget", "recover"]

OVERFLOW_LADDER: tuple[OverflowStep | None, ...] = (None, REFERENCE, MINIMAL)
"""What each provider overflow is answered with: a forced compaction (None), references
instead of bodies, a minimal-reference request. One more overflow ends the task."""


def recover(
    lane: Lane, exc: ContextOverflowError, rejected: list[int], *, max_output: int | None
) -> Steps[TaskEnding | None]:
    """The next step of the overflow ladder for the ``len(rejected)``-th rejection, or the
    terminal ending once every step was tried."""
    context = lane.context
    lowered = lower_budget(context, getattr(exc, "limit_tokens", None), max_output=max_output)
    counted = getattr(exc, "prompt_tokens", None)
    if isinstance(counted, int) and counted > 0:
        # The server counted the prompt: the estimate it overflowed with was low by that much.
        context.estimator.observe_usage(estimated_prompt=rejected[-1], reported_prompt=counted)
    reason = f"provider overflow: {exc}" + (
        f"; the working budget is lowered to the stated limit of {lowered} tokens"
        if lowered
        else ""
    )
    if len(rejected) > len(OVERFLOW_LADDER):
        sizes = ", ".join(str(size) for size in rejected)
        limit = getattr(exc, "limit_tokens", None)
        return TaskEnding(
            "failed",
            "ContextOverflowError: context overflow again after a forced compaction, a "
            f"reference request and a minimal-reference request: the provider rejected "
            f"{len(rejected)} requests as too large (estimated {sizes} tokens"
            + (f"; the server counted {counted} for the last" if counted else "")
            + f"; window {context.budget.context_window}"
            + (f", stated limit {limit}" if limit else "")
            + f"); {budget_error(context, overflow=str(exc))}"
            + (
                "; the harness's own estimate is under the budget, so the model's real window "
                "is smaller than configured or it counts tokens differently: set "
                "model.context_window to what the server accepts"
                if rejected[-1] < context.budget.threshold
                else ""
            ),
        )
    step = OVERFLOW_LADDER[len(rejected) - 1]
    if step is None:
        return (yield from compact(lane, force=True, reason=reason))
    for event in reference_bodies(context, lane.session.store, step=step, reason=reason):
        yield lane.emit(event)
    lane.sync_item_states()
    return None


def lower_budget(context: Context, limit: object, *, max_output: int | None) -> int | None:
    """Lower the session's working budget to a limit the provider stated (an int below the
    current window); returns the new window, or None when nothing changed.

    The reserve for the answer shrinks with the window: at most a quarter of it, or the
    configured output limit when that is larger (but never more than half the window).
    """
    budget = context.budget
    if isinstance(limit, bool) or not isinstance(limit, int):
        return None
    if not 0 < limit < budget.context_window:
        return None
    reserve = min(budget.reserve_tokens, limit // 4)
    if max_output:
        reserve = min(max(reserve, max_output), limit // 2)
    pressure = budget.pressure.rescaled(limit, limit - reserve) if budget.pressure else None
    context.budget = Budget(context_window=limit, reserve_tokens=reserve, pressure=pressure)
    return limit
