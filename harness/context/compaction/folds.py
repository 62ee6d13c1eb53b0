"""The two ways a prefix of Accumulated becomes the rolling checkpoint: with a model, or not.

:class:`Folds` turns a fold plan into an updated checkpoint and swaps it in
(:class:`~harness.context.compaction.checkpoint.CheckpointWriter` does the writing):

- :meth:`Folds.with_model` runs the summarizer over ordered rounds of whole turns, giving it
  the previous note to update and the instructions in force for context; a failure raises
  :class:`~harness.context.compaction.summarizer.SummaryError` before anything changed;
- :meth:`Folds.without_model` updates the previous note deterministically
  (:mod:`harness.context.compaction.deterministic`).

Either way the harness appends its address index, so what the note leaves out stays
reachable. The sizes every fold plans with are here too: the note's limit
(:func:`summary_token_limit`) and the room a checkpoint takes (:func:`checkpoint_allowance`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from harness.cancel import Cancelled
from harness.context.compaction.checkpoint import CheckpointWriter, live_checkpoint, note_of
from harness.context.compaction.deterministic import deterministic_note
from harness.context.compaction.index import INLINE_ENTRIES
from harness.context.compaction.summarizer import ModelSummarizer, StaleSummaryError, SummaryError
from harness.context.compaction.summary_input import SummaryInput, pack_rounds
from harness.context.compaction.turns import (
    CompactionPlan,
    current_task_id,
    plan_compaction,
    protected_items,
)
from harness.context.model import ITEM_OVERHEAD_TOKENS, Context
from harness.events import CompactionEvent
from harness.messages import CheckpointItem, CheckpointSource, InstructionItem, Item, Usage, new_id

if TYPE_CHECKING:
    from harness.config import CompactionConfig
    from harness.providers.base import Model

__all__ = [
    "CHARS_PER_SUMMARY_TOKEN",
    "ENDED_PROSE_SHARE",
    "Fold",
    "Folds",
    "checkpoint_allowance",
    "summary_token_limit",
    "text_estimate",
    "token_estimate",
]

CHARS_PER_SUMMARY_TOKEN = 4
ROUND_SCAFFOLD_CHARS = 500
"""Characters a round request spends on its own wording around the note and history."""
INDEX_ALLOWANCE_SHARE = 1 / 32
"""Room planned for the harness's header and index, beyond the note's own limit."""
INDEX_ALLOWANCE_MAX = 800
HEADER_CHARS = 400
INLINE_LINE_CHARS = 200
"""About what one index line takes (``LINE_MAX_CHARS`` plus its address)."""
NOTE_MIN_CHARS = 600
ACTIVE_EPISODE_SHARE = 0.5
"""An active episode's turns are never folded while they take at most this share of the
input budget (newest first); older turns of an episode that never ends fold like others."""
ENDED_PROSE_SHARE = 0.1
"""Ended tasks' prose (instructions, revisions, final reports) stays verbatim while it takes
at most this share of the input budget; the oldest tasks' prose is folded beyond it."""
FoldStatus = Literal["completed", "fallback"]
FoldMode = Literal["checkpoint", "deterministic", "task_end"]


def ended_prose_tokens(context: Context) -> int:
    return int(context.budget.threshold * ENDED_PROSE_SHARE)


def summary_token_limit(threshold: int) -> int:
    """Largest checkpoint note, in tokens: 1/16 of the input budget, between 256 and 4096."""
    return max(256, min(4096, threshold // 16))


def checkpoint_allowance(threshold: int) -> int:
    """Tokens a checkpoint may take: its note, plus the harness's header and index."""
    return summary_token_limit(threshold) + min(
        INDEX_ALLOWANCE_MAX, int(threshold * INDEX_ALLOWANCE_SHARE)
    )


def token_estimate(context: Context) -> Callable[[Sequence[Item]], int]:
    """The calibrated estimate the budget uses, for any run of Accumulated items."""
    return lambda items: context.estimator.calibrated(context.accumulated_tokens(items))


def text_estimate(context: Context) -> Callable[[str], int]:
    """The same estimate for a text that is not an item yet (nothing is cached)."""
    return lambda text: context.estimator.calibrated(
        context.estimator.text(text) + ITEM_OVERHEAD_TOKENS
    )


@dataclass(frozen=True)
class Fold:
    """What one successful fold did."""

    checkpoint: CheckpointItem
    folded: list[Item]
    retained: int
    model: str
    rounds: int = 0
    repairs: int = 0
    usage: Usage | None = None
    kept_verbatim: int = 0
    """Prefix turns left verbatim because they did not fit ``max_summary_rounds``."""

    def event(
        self,
        *,
        status: FoldStatus,
        mode: FoldMode,
        reason: str,
        before: int,
        after: int,
        duration_s: float,
    ) -> CompactionEvent:
        """The ``compaction`` event that reports this fold."""
        return CompactionEvent(
            status=status,
            mode=mode,
            reason=reason,
            tokens_before=before,
            tokens_after=after,
            items_folded=len(self.folded),
            items_retained=self.retained,
            rounds=self.rounds,
            duration_s=duration_s,
            checkpoint_id=self.checkpoint.id,
            usage=self.usage,
        )


class Folds:
    """Writes the checkpoint for a fold plan (see the module docstring)."""

    def __init__(
        self, config: CompactionConfig, render: SummaryInput, writer: CheckpointWriter
    ) -> None:
        self.config = config
        self.render = render
        self.writer = writer

    def plan(self, context: Context) -> CompactionPlan:
        """The fold plan, with the tail's token bound also capped by the room that is left.

        After a fold the request holds the fixed part, the protected items (instruction,
        revisions, current Task Notes, earlier tasks' prose), the checkpoint and the tail.
        The tail may take at most half of the room those leave under the threshold, so
        small windows (a 32k local model with the default 20000-token tail) keep fewer
        turns verbatim instead of compacting again on the very next turn.
        """
        budget = context.budget
        tokens = token_estimate(context)
        keep_tokens = self.config.keep_recent_tokens

        def capped(tail_tokens: int) -> CompactionPlan:
            return plan_compaction(
                context.accumulated,
                keep_recent_turns=self.config.keep_recent_turns,
                keep_recent_tokens=min(keep_tokens, tail_tokens),
                tokens=tokens,
                ended_prose_tokens=ended_prose_tokens(context),
                active_episodes=context.episodes.active_names(),
                active_episode_tokens=int(budget.threshold * ACTIVE_EPISODE_SHARE),
            )

        plan = capped(keep_tokens)
        protected = tokens([item for item in context.accumulated if item.id in plan.pinned])
        allowance = checkpoint_allowance(budget.threshold)
        room = max(0, (budget.threshold - context.fixed_tokens() - protected - allowance) // 2)
        if room >= keep_tokens:
            return plan

        # The newest turn's results have not been read yet: while anything older can be
        # folded instead, the room cap does not fold it (the configured bound still can,
        # and shrinking cuts it if it must).
        newest = next(
            (
                index
                for index in range(len(plan.groups) - 1, -1, -1)
                if any(i.id not in plan.pinned for i in plan.groups[index].items)
            ),
            len(plan.groups),
        )
        unread = sum(tokens(group.items) for group in plan.groups[newest:])  # as the plan counts
        if unread > room:
            keeping = capped(unread)
            if any(not isinstance(item, CheckpointItem) for item in keeping.foldable()):
                return keeping
        return capped(room)

    def retire(self, context: Context, *, running_task: str) -> Fold | None:
        """Fold the tool traffic of every task but ``running_task`` (which is starting)
        into the checkpoint, whatever its size: ended tasks' prose stays (within
        :data:`ENDED_PROSE_SHARE` of the budget), their calls, results, Task Notes and the
        previous checkpoint become the updated checkpoint. None when there is nothing."""
        protected = protected_items(
            context.accumulated,
            tokens=token_estimate(context),
            ended_prose_tokens=ended_prose_tokens(context),
            current_task=running_task,
            keep_current_notes=False,
        )
        folded = [
            item
            for item in context.accumulated
            if item.task_id != running_task and item.id not in protected
        ]
        if all(isinstance(item, CheckpointItem) for item in folded):
            return None
        return self.without_model(context, folded, always=True, running_task=running_task)

    def inline_entries(self, context: Context) -> int:
        """Newest entries shown in the checkpoint itself: about a quarter of the note's
        size, between 3 and :data:`~harness.context.compaction.index.INLINE_ENTRIES`."""
        note_chars = summary_token_limit(context.budget.threshold) * CHARS_PER_SUMMARY_TOKEN
        return max(3, min(INLINE_ENTRIES, note_chars // 4 // INLINE_LINE_CHARS))

    def limits(self, context: Context) -> tuple[int, int]:
        """(note token limit, characters of history per round).

        One round's input (the previous note, the history chunk and the request's own
        wording) stays within ``max_input_chars``; the note may take at most half of it.
        """
        note_chars = min(
            summary_token_limit(context.budget.threshold) * CHARS_PER_SUMMARY_TOKEN,
            self.config.max_input_chars // 2,
        )
        chunk_chars = self.config.max_input_chars - note_chars - ROUND_SCAFFOLD_CHARS
        return note_chars // CHARS_PER_SUMMARY_TOKEN, chunk_chars

    def with_model(
        self,
        context: Context,
        plan: CompactionPlan,
        model: Model,
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> Fold:
        """Fold as much of the prefix as ``max_summary_rounds`` rounds take, with a model.

        Raises :class:`SummaryError` (``rounds`` set) when the model fails, and
        :class:`~harness.cancel.Cancelled` when the operator cancels (``cancelled``); the
        context is then unchanged.
        """
        render = self.render
        max_tokens, chunk_chars = self.limits(context)
        previous = live_checkpoint(plan.foldable())
        previous_text = ""
        skip = plan.pinned
        if previous is not None:
            skip = skip | {previous.id}
            previous_text = render.bounded(
                previous, render.clean(note_of(previous)), max_tokens * CHARS_PER_SUMMARY_TOKEN
            )
        rounds = pack_rounds(plan.prefix, render, skip=skip, chunk_chars=chunk_chars)
        rounds = rounds[: self.config.max_summary_rounds]
        groups = [group for round_ in rounds for group in round_.groups]
        folded = plan.foldable(groups)
        if previous is not None and previous not in folded:
            folded = [previous, *folded]
        round_tokens = [
            context.accumulated_tokens(
                i for i in plan.foldable(list(round_.groups)) if i.id not in skip
            )
            for round_ in rounds
        ]
        instructions = "\n".join(
            render.render_item(item)
            for item in context.accumulated
            if item.id in plan.pinned and isinstance(item, InstructionItem)
        )
        summarizer = ModelSummarizer(
            model, max_tokens=max_tokens, estimator=context.estimator, cancelled=cancelled
        )
        planned_at = context.version
        try:
            result = summarizer.summarize(
                rounds, previous=previous_text, round_tokens=round_tokens, context=instructions
            )
            if context.version != planned_at:
                raise StaleSummaryError(
                    f"the working set changed while {summarizer.name!r} was condensing it "
                    f"(version {planned_at} -> {context.version})",
                    usage=result.usage,
                )
        except (SummaryError, Cancelled) as exc:
            exc.rounds = len(rounds)  # type: ignore[union-attr]
            raise
        checkpoint_id = new_id("item")
        checkpoint = self.writer.write(
            folded,
            note=result.text,
            rounds=result.rounds,
            model=summarizer.name,
            checkpoint_id=checkpoint_id,
            index=self.writer.index_for(
                folded, checkpoint_id=checkpoint_id, inline=self.inline_entries(context)
            ),
        )
        return Fold(
            checkpoint=checkpoint,
            folded=folded,
            retained=self.writer.fold(context, folded, checkpoint),
            model=summarizer.name,
            rounds=result.rounds,
            repairs=result.repairs,
            usage=result.usage,
            kept_verbatim=len(plan.prefix) - len(groups),
        )

    def without_model(
        self,
        context: Context,
        folded: Sequence[Item],
        *,
        always: bool = False,
        running_task: str | None = None,
    ) -> Fold | None:
        """Fold ``folded`` with the deterministic note; None (nothing changed) when the
        checkpoint would not be smaller than what it replaces, unless ``always``.
        ``running_task`` defaults to the task of the newest instruction."""
        max_tokens, _ = self.limits(context)
        checkpoint_id = new_id("item")
        index = self.writer.index_for(
            folded, checkpoint_id=checkpoint_id, inline=self.inline_entries(context)
        )
        previous, state = index
        room = max_tokens * CHARS_PER_SUMMARY_TOKEN - len(state.render()) - HEADER_CHARS
        note = deterministic_note(
            [item for item in folded if item is not previous],
            previous=note_of(previous),
            owner=_skeleton(checkpoint_id, folded[-1]),
            clean=self.render,
            max_chars=max(NOTE_MIN_CHARS, room),
            running_task=running_task
            if running_task is not None
            else current_task_id(context.accumulated),
        )
        checkpoint = self.writer.write(
            folded,
            note=note,
            rounds=0,
            model="deterministic",
            checkpoint_id=checkpoint_id,
            index=index,
        )
        estimate = context.estimator.text
        if not always and estimate(checkpoint.text) >= context.accumulated_tokens(folded):
            return None
        return Fold(
            checkpoint=checkpoint,
            folded=list(folded),
            retained=self.writer.fold(context, folded, checkpoint),
            model="deterministic",
        )


def _skeleton(checkpoint_id: str, last: Item) -> CheckpointItem:
    """The checkpoint-to-be, so its note can be archived under its address before a cut."""
    source = CheckpointSource(
        first_turn=last.turn,
        last_turn=last.turn,
        task_ids=[last.task_id],
        items_folded=0,
        rounds=0,
        model="deterministic",
        mode="deterministic",
    )
    return CheckpointItem(
        id=checkpoint_id, text="", task_id=last.task_id, turn=last.turn, source=source
    )
