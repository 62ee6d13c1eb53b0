"""Keeping Accumulated context within the model's input budget.

:class:`CheckpointCompactor` runs before every model call (and, forced, after a provider
overflow). Each step runs only if the request is still too large after the previous one:

1. **Prune** (:mod:`harness.context.pruning`): old bulky tool outputs become archive references and
   superseded Task Notes snapshots leave, in batches worth a prompt-cache miss.
2. **Checkpoint**: once the estimated request reaches ``context_window - reserve_tokens``,
   an older prefix of whole turns is folded into one :class:`CheckpointItem`, written by the
   summarizer model in ordered rounds; the retained tail is whole recent turns within
   ``keep_recent_turns`` and ``keep_recent_tokens``. A failed or malformed summary leaves
   Accumulated exactly as it was, emits ``compaction``/``failed`` and backs off for
   ``failure_backoff_turns`` turns, after which the model is tried again.
3. **Deterministic fallback**: with no usable summarizer, or when it keeps failing while the
   request is over budget, a checkpoint is built without a model.
4. **Shrink**: if even the retained turns do not fit, their oversized items are cut in
   place to head+tail with the archive address of the exact original.
5. Otherwise :class:`ContextBudgetError` ends the task with the numbers that explain why,
   instead of sending a request that would overflow.

Only Accumulated is ever changed, and only through ``Context.replace``. Resident,
Refreshed, transient images and the current Task Notes snapshot are never touched.
``build_compactor`` is the one place the configured compactor is chosen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from harness.cancel import Cancelled
from harness.config import secret_sources
from harness.context.model import Context, ItemState
from harness.context.pruning import Pruner
from harness.context.shrink import shrink_oversized
from harness.context.summarizer import ModelSummarizer, SummaryError, deterministic_checkpoint
from harness.context.summary_input import InputLimits, SummaryInput, pack_rounds
from harness.context.turns import CompactionPlan, plan_compaction
from harness.errors import ContextBudgetError
from harness.events import CompactionEvent
from harness.messages import (
    CheckpointItem,
    CheckpointSource,
    Item,
)
from harness.providers.base import can_summarize
from harness.redact import Redactor

if TYPE_CHECKING:
    from harness.config import CompactionConfig, HarnessConfig, PruningConfig
    from harness.protocols import RunStore
    from harness.providers.base import Model

__all__ = [
    "FAILURE_TOLERANCE_SHARE",
    "CheckpointCompactor",
    "Compactor",
    "NoCompaction",
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


FAILURE_TOLERANCE_SHARE = 0.5
"""After a summarizer failure the request may grow into this share of ``reserve_tokens``
(beyond the threshold) while the summarizer backs off; past it the deterministic fallback
must run, so the response always keeps at least the rest of the reserve."""

CHARS_PER_SUMMARY_TOKEN = 4
ROUND_SCAFFOLD_CHARS = 500
"""Characters a round request spends on its own wording around the note and history."""


def summary_token_limit(threshold: int) -> int:
    """Largest checkpoint, in tokens: 1/16 of the input budget, between 256 and 4096."""
    return max(256, min(4096, threshold // 16))


Steps = Generator[CompactionEvent, None, bool]


class NoCompaction:
    """Checkpoint compaction switched off (``context.compaction.enabled: false``).

    Nothing is folded (pruning still runs if ``context.pruning`` enables it); a request that
    would not fit ends the task with a named error instead of overflowing at the provider.
    """

    def __init__(self, pruner: Pruner | None = None) -> None:
        self.pruner = pruner

    def compact(
        self,
        context: Context,
        *,
        force: bool = False,
        reason: str = "",
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[CompactionEvent]:
        pruned = False
        if self.pruner is not None:
            for event in self.pruner.run(context):
                pruned = True
                yield event
        total = context.total_tokens()
        if total > context.budget.context_window or (force and not pruned):
            raise ContextBudgetError(
                f"the request needs about {total} tokens"
                + (f" and the provider reported an overflow ({reason})" if force else "")
                + f"; the window is {context.budget.context_window} tokens and compaction is "
                "disabled (context.compaction.enabled: false)"
            )


class CheckpointCompactor:
    """Reserve-token checkpoint compaction with pruning, fallback and shrinking.

    Args:
        config: ``context.compaction``.
        pruning: ``context.pruning``.
        summarizer: The model that writes checkpoints (``compaction_model`` or the main
            model); None, or a model with ``supports_summaries = False``, means the
            deterministic checkpoint is used.
        store: The run store, whose archive keeps every exact original a marker points to.
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

    # ------------------------------------------------------------------ entry point

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
        before = context.total_tokens()
        if not force and before < context.budget.threshold:
            return
        yield from self._compact(
            context, before=before, force=force, reason=reason, cancelled=cancelled
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
                summarized = yield from self._model_checkpoint(
                    context, plan, started, before, cancelled
                )
                if not summarized:
                    if not (force or before >= tolerance or self.consecutive_failures >= 2):
                        return
                    fallback_reason = (
                        f"the summarizer failed {self.consecutive_failures} time(s) in a row "
                        f"while the request is over budget ({before} tokens)"
                    )
            if fallback_reason:
                yield from self._deterministic(context, plan, started, before, fallback_reason)
        if summarized and context.total_tokens() >= budget.threshold:
            # Only part of the prefix fitted max_summary_rounds: fold the rest without a model.
            rest = self._plan(context)
            if _worth_folding(rest.foldable()):
                yield from self._deterministic(
                    context,
                    rest,
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
            message = self._budget_error(context, before=before, force=force, reason=reason)
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
        """The fold plan, with the tail's token bound also capped by the room that is left.

        After a fold the request holds the fixed part, the checkpoint, the current Task
        Notes and the tail. The tail may take at most half of the room those leave under
        the threshold, so small windows (a 32k local model with the default 20000-token
        tail) keep fewer turns verbatim instead of compacting again on the very next turn.
        """
        budget = context.budget
        notes = context.latest_task_notes()
        pinned = context.item_tokens(notes) if notes is not None else 0
        allowance = summary_token_limit(budget.threshold)
        room = budget.threshold - context.fixed_tokens() - pinned - allowance
        tail_tokens = max(0, min(self.config.keep_recent_tokens, room // 2))
        plan = plan_compaction(
            context.accumulated,
            keep_recent_turns=self.config.keep_recent_turns,
            keep_recent_tokens=tail_tokens,
            tokens=lambda items: context.estimator.calibrated(context.accumulated_tokens(items)),
        )
        self.last_plan = plan
        return plan

    # ------------------------------------------------------------------ model checkpoint

    def _input(self) -> SummaryInput:
        cfg = self.config
        limits = InputLimits(
            tool_result_max_chars=cfg.tool_result_max_chars,
            reasoning_max_chars=cfg.reasoning_max_chars,
            max_input_chars=cfg.max_input_chars,
        )
        return SummaryInput(limits, redactor=self.redactor, store=self.store)

    def _limits(self, context: Context) -> tuple[int, int]:
        """(checkpoint token limit, characters of history per round).

        One round's input (the previous note, the history chunk and the request's own
        wording) stays within ``max_input_chars``; the note may take at most half of it.
        """
        note_chars = min(
            summary_token_limit(context.budget.threshold) * CHARS_PER_SUMMARY_TOKEN,
            self.config.max_input_chars // 2,
        )
        chunk_chars = self.config.max_input_chars - note_chars - ROUND_SCAFFOLD_CHARS
        return note_chars // CHARS_PER_SUMMARY_TOKEN, chunk_chars

    def _model_checkpoint(
        self,
        context: Context,
        plan: CompactionPlan,
        started: float,
        before: int,
        cancelled: Callable[[], bool] | None,
    ) -> Steps:
        assert self.summarizer is not None
        render = self._input()
        max_tokens, chunk_chars = self._limits(context)
        foldable = plan.foldable()
        previous = foldable[0] if isinstance(foldable[0], CheckpointItem) else None
        previous_text = ""
        skip = plan.pinned
        if previous is not None:
            skip = skip | {previous.id}
            previous_text = render.bounded(
                previous, render.clean(previous.text), max_tokens * CHARS_PER_SUMMARY_TOKEN
            )
        rounds = pack_rounds(plan.prefix, render, skip=skip, chunk_chars=chunk_chars)
        rounds = rounds[: self.config.max_summary_rounds]
        groups = [group for round_ in rounds for group in round_.groups]
        folded = plan.foldable(groups)
        round_tokens = [
            context.accumulated_tokens(
                i for i in plan.foldable(list(round_.groups)) if i.id not in skip
            )
            for round_ in rounds
        ]
        summarizer = ModelSummarizer(
            self.summarizer, max_tokens=max_tokens, estimator=context.estimator, cancelled=cancelled
        )
        try:
            result = summarizer.summarize(rounds, previous=previous_text, round_tokens=round_tokens)
        except Cancelled as exc:
            # Not a summarizer failure (no backoff): the operator stopped the task.
            yield CompactionEvent(
                status="cancelled",
                mode="checkpoint",
                reason=f"{exc}; the summarizer call was abandoned and Accumulated context "
                "left unchanged",
                tokens_before=before,
                tokens_after=before,
                rounds=len(rounds),
                duration_s=_since(started),
                usage=exc.usage,
            )
            raise
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
                rounds=len(rounds),
                duration_s=_since(started),
                usage=exc.usage,
            )
            return False
        self.consecutive_failures = 0
        header = self._header(folded, rounds=result.rounds, model=summarizer.name, mode="summary")
        checkpoint = self._checkpoint(
            folded, text=f"{header}\n{result.text}", rounds=result.rounds, model=summarizer.name
        )
        retained = self._fold(context, folded, checkpoint)
        kept_verbatim = len(plan.prefix) - len(groups)
        yield CompactionEvent(
            status="completed",
            mode="checkpoint",
            reason=(
                f"{len(folded)} items folded in {result.rounds} round(s) by "
                f"{summarizer.name!r}"
                + (f" ({result.repairs} repaired)" if result.repairs else "")
                + (
                    f"; {kept_verbatim} older turn(s) kept verbatim for a later compaction "
                    f"(max_summary_rounds={self.config.max_summary_rounds})"
                    if kept_verbatim
                    else ""
                )
            ),
            tokens_before=before,
            tokens_after=context.total_tokens(),
            items_folded=len(folded),
            items_retained=retained,
            rounds=result.rounds,
            duration_s=_since(started),
            checkpoint_id=checkpoint.id,
            usage=result.usage,
        )
        return True

    # ------------------------------------------------------------------ deterministic

    def _deterministic(
        self, context: Context, plan: CompactionPlan, started: float, before: int, why: str
    ) -> Iterator[CompactionEvent]:
        folded = plan.foldable()
        max_tokens, _ = self._limits(context)
        skeleton = self._checkpoint(folded, text="", rounds=0, model="deterministic")
        header = self._header(folded, rounds=0, model="deterministic", mode="deterministic")
        text = deterministic_checkpoint(
            folded,
            owner=skeleton,
            header=header,
            clean=self._input(),
            max_chars=max_tokens * CHARS_PER_SUMMARY_TOKEN,
        )
        checkpoint = skeleton.model_copy(update={"text": text})
        if context.estimator.text(text) >= context.accumulated_tokens(folded):
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
        retained = self._fold(context, folded, checkpoint)
        self.consecutive_failures = 0
        yield CompactionEvent(
            status="fallback",
            mode="deterministic",
            reason=f"{why}; deterministic checkpoint of {len(folded)} items",
            tokens_before=before,
            tokens_after=context.total_tokens(),
            items_folded=len(folded),
            items_retained=retained,
            duration_s=_since(started),
            checkpoint_id=checkpoint.id,
        )

    # ------------------------------------------------------------------ folding

    def _checkpoint(
        self, folded: Sequence[Item], *, text: str, rounds: int, model: str
    ) -> CheckpointItem:
        previous = next((i.id for i in folded if isinstance(i, CheckpointItem)), None)
        task_ids = list(dict.fromkeys(item.task_id for item in folded))
        last = folded[-1]
        return CheckpointItem(
            text=text,
            task_id=last.task_id,
            turn=last.turn,
            source=CheckpointSource(
                first_turn=min(item.turn for item in folded),
                last_turn=max(item.turn for item in folded),
                task_ids=task_ids,
                items_folded=len(folded),
                rounds=rounds,
                model=model,
                mode="deterministic" if model == "deterministic" else "summary",
                previous_checkpoint=previous,
            ),
        )

    def _header(self, folded: Sequence[Item], *, rounds: int, model: str, mode: str) -> str:
        how = (
            "written without a model"
            if mode == "deterministic"
            else f"summarized by {model} in {rounds} round(s)"
        )
        return (
            f"[Checkpoint: {len(folded)} earlier items ({_span(folded)}) were replaced by this "
            f"note, {how}. Exact tool outputs remain readable with recall(address=...) using "
            "the archive:// addresses shown.]"
        )

    def _fold(self, context: Context, folded: Sequence[Item], checkpoint: CheckpointItem) -> int:
        """Replace ``folded`` by ``checkpoint`` at the position of the first folded item."""
        folded_ids = {item.id for item in folded}
        new_items: list[Item] = []
        placed = False
        for item in context.accumulated:
            if item.id in folded_ids:
                if not placed:
                    new_items.append(checkpoint)
                    placed = True
                continue
            new_items.append(item)
        reason = f"folded into checkpoint {checkpoint.id} ({checkpoint.source.mode})"
        states = {item.id: context.changed_state(item, "summarized", reason) for item in folded}
        states[checkpoint.id] = ItemState(
            status="summarized",
            reason=(
                f"checkpoint of {len(folded)} items ({checkpoint.source.mode}, "
                f"{checkpoint.source.rounds} round(s), model {checkpoint.source.model})"
            ),
            original_tokens=context.accumulated_tokens(folded),
        )
        context.replace(new_items, states=states)
        return len(new_items) - 1

    # ------------------------------------------------------------------ shrinking

    # ------------------------------------------------------------------ errors

    def _budget_error(self, context: Context, *, before: int, force: bool, reason: str) -> str:
        budget = context.budget
        sections = context.sections()
        fixed = sections["resident"] + sections["tools"] + sections["refreshed"]
        after = context.total_tokens()
        parts = [
            f"the request needs about {after} tokens after compaction"
            + (f" (the provider reported an overflow: {reason})" if force else "")
            + f"; the input budget is {budget.threshold} tokens (window "
            f"{budget.context_window} - reserve {budget.reserve_tokens})",
            f"resident {sections['resident']} + tool definitions {sections['tools']} + "
            f"refreshed {sections['refreshed']} + images {sections['images']} tokens are "
            "never compacted",
            f"Accumulated is {sections['accumulated']} tokens in {len(context.accumulated)} "
            "items (checkpoint, current Task Notes and the retained turns, already shrunk)",
        ]
        if fixed + sections["images"] >= budget.threshold:
            parts.append(
                "the fixed part alone exceeds the budget: load fewer skills or tools, shorten "
                "memory or the profile, or send smaller images"
            )
        else:
            parts.append(
                "lower context.compaction.keep_recent_tokens, or use a model with a larger window"
            )
        return "; ".join(parts)


# ---------------------------------------------------------------------- helpers


def _span(items: Sequence[Item]) -> str:
    """``task_ab t3-t57, task_cd t0-t4`` for the items a checkpoint covers."""
    turns: dict[str, list[int]] = {}
    for item in items:
        turns.setdefault(item.task_id or "session", []).append(item.turn)
    spans = [f"{task} t{min(t)}-t{max(t)}" for task, t in turns.items()]
    if len(spans) > 4:
        spans = [*spans[:2], f"... {len(spans) - 3} more tasks ...", spans[-1]]
    return ", ".join(spans)


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
