"""Keeping Accumulated context within the model's input budget.

:class:`CheckpointCompactor` runs before every model call (and, forced, after a provider
overflow). Each step runs only if the request is still too large after the previous one:

1. **Prune** (:mod:`harness.context.eviction.pruning`): old bulky tool outputs become archive
   references and
   superseded Task Notes snapshots leave, in batches worth a prompt-cache miss.
2. **Checkpoint**: once the estimated request reaches ``context_window - reserve_tokens``,
   an older prefix of whole turns is folded into the one rolling :class:`CheckpointItem`
   (:mod:`harness.context.compaction.checkpoint`), its note written by the summarizer model in
   ordered
   rounds, its address index by the harness; the retained tail is whole recent turns
   within ``keep_recent_turns`` and ``keep_recent_tokens``. The running task's instruction
   and revisions, and earlier tasks' prose, are never folded
   (:mod:`harness.context.compaction.turns`).
   A failed or malformed summary leaves Accumulated exactly as it was, emits
   ``compaction``/``failed`` and backs off for ``failure_backoff_turns`` turns, after which
   the model is tried again.
3. **Deterministic fallback**: with no usable summarizer, or when it keeps failing while the
   request is over budget, a checkpoint is built without a model.
4. **Shrink**: if even the retained turns do not fit, their oversized items are cut in
   place to head+tail with the archive address of the exact original.
5. Otherwise :class:`ContextBudgetError` ends the task with the numbers that explain why,
   instead of sending a request that would overflow.

When a task ends, :meth:`CheckpointCompactor.retire_tasks` folds its tool traffic into the
checkpoint before the next task starts (no model call): its prose stays, its exchanges are
reachable through the index.

Only Accumulated is ever changed, and only through ``Context.replace``. Resident,
Refreshed, transient images and the current Task Notes snapshot are never touched.
``build_compactor`` is the one place the configured compactor is chosen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harness.cancel import Cancelled
from harness.config import secret_sources
from harness.context.budget import budget_error
from harness.context.compaction.checkpoint import CheckpointWriter
from harness.context.compaction.disabled import NoCompaction
from harness.context.compaction.folds import ENDED_PROSE_SHARE, Folds, summary_token_limit
from harness.context.compaction.shrink import shrink_oversized
from harness.context.compaction.summarizer import StaleSummaryError, SummaryError
from harness.context.compaction.summary_input import InputLimits, SummaryInput
from harness.context.compaction.turns import CompactionPlan
from harness.context.eviction.cleanup import PressureCleanup
from harness.context.eviction.pruning import Pruner
from harness.context.model import Context
from harness.errors import ContextBudgetError
from harness.events import CompactionEvent
from harness.messages import CheckpointItem, Item
from harness.providers.base import can_summarize
from harness.redact import Redactor

if TYPE_CHECKING:
    from harness.config import CompactionConfig, HarnessConfig, PruningConfig
    from harness.protocols import RunStore
    from harness.providers.base import Model

__all__ = [
    "ENDED_PROSE_SHARE",
    "FAILURE_TOLERANCE_SHARE",
    "CheckpointCompactor",
    "Compactor",
    "NoCompaction",
    "RetiresTasks",
    "build_compactor",
    "summary_token_limit",
]


class Compactor(Protocol):
    """Keeps Accumulated context within budget. Yields ``compaction`` events.

    Called before every model decision (``force=False``) and after a provider overflow
    (``force=True``). Raises :class:`harness.errors.ContextBudgetError` only when nothing it
    may do can make the request fit. ``cancelled`` is the operator's cancel: a compactor
    that calls a model watches it and raises :class:`harness.cancel.Cancelled` (leaving the
    context as it was) instead of finishing.
    """

    def compact(
        self,
        context: Context,
        *,
        force: bool = False,
        reason: str = "",
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[CompactionEvent]: ...


@runtime_checkable
class RetiresTasks(Protocol):
    """A compactor that folds ended tasks' tool traffic when the next task starts."""

    def retire_tasks(self, context: Context, *, running_task: str) -> Iterator[CompactionEvent]: ...


FAILURE_TOLERANCE_SHARE = 0.5
"""After a summarizer failure the request may grow into this share of ``reserve_tokens``
(beyond the threshold) while the summarizer backs off; past it the deterministic fallback
must run, so the response always keeps at least the rest of the reserve."""


class CheckpointCompactor:
    """Reserve-token checkpoint compaction with pruning, fallback and shrinking.

    Args:
        config: ``context.compaction``.
        pruning: ``context.pruning``.
        summarizer: The model that writes checkpoint notes (``compaction_model`` or the
            main model); None, or a model with ``supports_summaries = False``, means the
            deterministic note is used.
        store: The run store, whose archive keeps every exact original a marker points to
            and the pages of the checkpoint's index.
        redactor: Secrets are redacted from everything a summarizer sees.
    """

    def __init__(
        self,
        config: CompactionConfig,
        pruning: PruningConfig,
        *,
        summarizer: Model | None,
        store: RunStore | None,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = config
        self.pruner = Pruner(pruning, store=store)
        self.summarizer = summarizer
        self.store = store
        self.redactor = redactor or Redactor()
        self.turn = 0
        """Unforced calls so far (one per turn): the clock the failure backoff reads."""
        self.backoff_until = -1
        self.consecutive_failures = 0
        self.last_plan: CompactionPlan | None = None
        """The most recent fold plan (for inspection and tests)."""
        render = SummaryInput(
            InputLimits(
                tool_result_max_chars=config.tool_result_max_chars,
                reasoning_max_chars=config.reasoning_max_chars,
                max_input_chars=config.max_input_chars,
            ),
            redactor=self.redactor,
            store=store,
        )
        self.folds = Folds(config, render, CheckpointWriter(store, render))
        self.cleanup = PressureCleanup(store, keep_recent=config.keep_recent_turns)

    # ------------------------------------------------------------------ entry points

    def compact(
        self,
        context: Context,
        *,
        force: bool = False,
        reason: str = "",
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[CompactionEvent]:
        if not force:
            self.turn += 1
        yield from self.pruner.run(context)
        fold = False
        if not force:
            fold = yield from self.cleanup.run(context)
        before = context.total_tokens()
        if not force and before < context.budget.threshold and not fold:
            return
        if fold and not reason:
            reason = self.cleanup.fold_reason or (
                f"pressure cleanup: the request of about {before} tokens is still above "
                "halfway to the landing level after eviction"
            )
        yield from self._compact(
            context, before=before, force=force, reason=reason, cancelled=cancelled
        )

    def retire_tasks(self, context: Context, *, running_task: str) -> Iterator[CompactionEvent]:
        """Fold the tool traffic of every task but ``running_task`` into the checkpoint.

        Called when a task starts: the ended tasks' prose stays (within
        :data:`ENDED_PROSE_SHARE` of the budget), everything else they left (calls,
        results, Task Notes snapshots, the previous checkpoint) becomes part of the rolling
        checkpoint, its exchanges listed in the index. No model is called.
        """
        started = time.monotonic()
        before = context.total_tokens()
        fold = self.folds.retire(context, running_task=running_task)
        if fold is None:
            return
        context.episode_ledger.release()
        tasks = ", ".join(dict.fromkeys(item.task_id or "session" for item in fold.folded))
        yield fold.event(
            status="completed",
            mode="task_end",
            reason=f"task(s) {tasks} ended: {len(fold.folded)} items of their tool traffic "
            "folded into the checkpoint (their prose stays; every exchange is in its index)",
            before=before,
            after=context.total_tokens(),
            duration_s=_since(started),
        )

    # ------------------------------------------------------------------ the ladder

    def _compact(
        self,
        context: Context,
        *,
        before: int,
        force: bool,
        reason: str,
        cancelled: Callable[[], bool] | None,
    ) -> Iterator[CompactionEvent]:
        budget = context.budget
        started = time.monotonic()
        tolerance = budget.threshold + int(budget.reserve_tokens * FAILURE_TOLERANCE_SHARE)
        yield CompactionEvent(
            status="started",
            mode="overflow" if force else "checkpoint",
            reason=reason
            or (
                f"the request needs about {before} tokens, at or over the threshold of "
                f"{budget.threshold} (window {budget.context_window} - reserve "
                f"{budget.reserve_tokens})"
            ),
            tokens_before=before,
        )
        plan = self._plan(context)
        summarized = False
        if _worth_folding(plan.foldable()):
            fallback_reason = ""
            if not can_summarize(self.summarizer):
                fallback_reason = (
                    "no summarizer model is configured"
                    if self.summarizer is None
                    else f"model {_model_name(self.summarizer)!r} cannot write summaries"
                )
            elif self.turn <= self.backoff_until:
                if not force and before < tolerance:
                    yield CompactionEvent(
                        status="skipped",
                        mode="checkpoint",
                        reason=(
                            f"the summarizer failed recently; next attempt at turn "
                            f"{self.backoff_until + 1}; the request still fits under "
                            f"{tolerance} tokens"
                        ),
                        tokens_before=before,
                        tokens_after=before,
                    )
                    return
                fallback_reason = (
                    f"the summarizer is backing off after a failure and the request reached "
                    f"{before} tokens (limit while backing off: {tolerance})"
                )
            else:
                summarized = yield from self._with_model(context, plan, started, before, cancelled)
                if not summarized:
                    if not (force or before >= tolerance or self.consecutive_failures >= 2):
                        return
                    fallback_reason = (
                        f"the summarizer failed {self.consecutive_failures} time(s) in a row "
                        f"while the request is over budget ({before} tokens)"
                    )
            if fallback_reason:
                yield from self._without_model(
                    context, plan.foldable(), started, before, fallback_reason
                )
        if summarized and context.total_tokens() >= budget.threshold:
            # Only part of the prefix fitted max_summary_rounds: fold the rest without a model.
            rest = self._plan(context)
            if _worth_folding(rest.foldable()):
                yield from self._without_model(
                    context,
                    rest.foldable(),
                    started,
                    context.total_tokens(),
                    "still over budget after the summarized rounds",
                )
        if context.total_tokens() >= budget.threshold or force:
            # After a provider overflow the estimate is known to be low: cut every
            # oversized retained item, not just enough to pass the estimated threshold.
            yield from shrink_oversized(
                self.store, self.config, context, started, target=0 if force else budget.threshold
            )
        after = context.total_tokens()
        if after >= budget.threshold or (force and after >= before):
            message = budget_error(context, overflow=reason if force else None)
            yield CompactionEvent(
                status="failed",
                mode="overflow" if force else "shrink",
                reason=message,
                tokens_before=before,
                tokens_after=after,
                duration_s=_since(started),
            )
            raise ContextBudgetError(message)

    def _plan(self, context: Context) -> CompactionPlan:
        self.last_plan = self.folds.plan(context)
        return self.last_plan

    # ------------------------------------------------------------------ the two folds

    def _with_model(
        self,
        context: Context,
        plan: CompactionPlan,
        started: float,
        before: int,
        cancelled: Callable[[], bool] | None,
    ) -> Steps:
        assert self.summarizer is not None
        try:
            fold = self.folds.with_model(context, plan, self.summarizer, cancelled=cancelled)
        except Cancelled as exc:
            # Not a summarizer failure (no backoff): the operator stopped the task.
            yield CompactionEvent(
                status="cancelled",
                mode="checkpoint",
                reason=f"{exc}; the summarizer call was abandoned and Accumulated context "
                "left unchanged",
                tokens_before=before,
                tokens_after=before,
                rounds=getattr(exc, "rounds", 0),
                duration_s=_since(started),
                usage=exc.usage,
            )
            raise
        except StaleSummaryError as exc:
            # Not the summarizer's fault (no backoff): the working set moved under it.
            yield CompactionEvent(
                status="skipped",
                mode="checkpoint",
                reason=f"{exc.reason}; the model's condensation is discarded and the "
                "deterministic plan is used instead",
                tokens_before=before,
                tokens_after=before,
                rounds=exc.rounds,
                duration_s=_since(started),
                usage=exc.usage,
            )
            yield from self._without_model(
                context, self._plan(context).foldable(), started, before, "stale condensation"
            )
            return True
        except SummaryError as exc:
            self.consecutive_failures += 1
            self.backoff_until = self.turn + self.config.failure_backoff_turns
            yield CompactionEvent(
                status="failed",
                mode="checkpoint",
                reason=(
                    f"{exc.reason}; Accumulated context left unchanged; next summarizer "
                    f"attempt at turn {self.backoff_until + 1}"
                ),
                tokens_before=before,
                tokens_after=before,
                rounds=exc.rounds,
                duration_s=_since(started),
                usage=exc.usage,
            )
            return False
        self.consecutive_failures = 0
        context.episode_ledger.release()
        yield fold.event(
            status="completed",
            mode="checkpoint",
            reason=(
                f"{len(fold.folded)} items folded in {fold.rounds} round(s) by {fold.model!r}"
                + (f" ({fold.repairs} repaired)" if fold.repairs else "")
                + (
                    f"; {fold.kept_verbatim} older turn(s) kept verbatim for a later "
                    f"compaction (max_summary_rounds={self.config.max_summary_rounds})"
                    if fold.kept_verbatim
                    else ""
                )
            ),
            before=before,
            after=context.total_tokens(),
            duration_s=_since(started),
        )
        return True

    def _without_model(
        self, context: Context, folded: list[Item], started: float, before: int, why: str
    ) -> Iterator[CompactionEvent]:
        fold = self.folds.without_model(context, folded)
        if fold is None:
            yield CompactionEvent(
                status="skipped",
                mode="deterministic",
                reason=f"{why}; a deterministic checkpoint would not be smaller than the "
                f"{len(folded)} items it replaces",
                tokens_before=before,
                tokens_after=context.total_tokens(),
                duration_s=_since(started),
            )
            return
        self.consecutive_failures = 0
        context.episode_ledger.release()
        yield fold.event(
            status="fallback",
            mode="deterministic",
            reason=f"{why}; deterministic checkpoint of {len(folded)} items",
            before=before,
            after=context.total_tokens(),
            duration_s=_since(started),
        )


# ---------------------------------------------------------------------- helpers

Steps = Generator[CompactionEvent, None, bool]


def _worth_folding(items: Sequence[Item]) -> bool:
    """A prefix holding only an earlier checkpoint gains nothing from being folded again."""
    return any(not isinstance(item, CheckpointItem) for item in items)


def _model_name(model: object) -> str:
    return str(getattr(model, "name", type(model).__name__))


def _since(started: float) -> float:
    return round(time.monotonic() - started, 6)


def build_compactor(
    config: HarnessConfig, *, summarizer: Any, store: Any, redactor: Redactor | None = None
) -> Compactor:
    """The configured compactor: checkpoints when ``context.compaction.enabled``; secrets
    are redacted from what the summarizer sees with ``redactor`` (the session's), or with
    one built from the config's patterns and API-key variables."""
    pruner = Pruner(config.context.pruning, store=store) if config.context.pruning.enabled else None
    if not config.context.compaction.enabled:
        return NoCompaction(pruner)
    if redactor is None:
        patterns, env_vars = secret_sources(config.model_dump(mode="json"))
        redactor = Redactor(patterns, env_vars=env_vars)
    return CheckpointCompactor(
        config.context.compaction,
        config.context.pruning,
        summarizer=summarizer,
        store=store,
        redactor=redactor,
    )
