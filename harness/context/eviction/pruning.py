"""Proactive pruning: cheap, model-free reclaiming well before a full compaction.

Once the request passes ``context.pruning.trigger_tokens`` (default: 40% of the input
budget), one pass considers, outside the most recent ``protect_recent_items`` items and
the newest turn:

- tool results of at least ``min_result_chars`` characters, which become a one-line
  reference to their archive address (error flag, verdict and image placeholders kept);
- superseded Task Notes snapshots: the harness appends a snapshot whenever the notes
  change (most turns, since they carry a timeline of tool outcomes), so every snapshot of a
  task but its newest is redundant. They are archived and leave the context. The current
  snapshot is never touched, and each task's last snapshot stays for the checkpoint.

The pass is applied only if it reclaims at least ``min_reclaim_tokens``: every change to an
early item invalidates the provider's prompt cache from that point on, so changes are made
in batches worth the cache miss, never a few tokens per turn. A pruned item's text is one
short line, so a second pass over a pruned context finds nothing to do.

What costs no cache miss is done at once, at any size (:meth:`Pruner.free_start`): the
snapshot that ended the previous request is superseded by the one this turn appends, and
nothing cached follows it, so it leaves now instead of being re-read every turn until the
next batch (most of a long task's request was such snapshots). Likewise, once another step
has changed an item this turn, everything prunable after that item goes in the same write.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.context import ItemState
from harness.context.compaction.archive import archive_item_text
from harness.context.compaction.turns import current_notes_id
from harness.events import CompactionEvent
from harness.messages import AssistantItem, Item, TaskNotesItem, ToolResultItem, new_id

if TYPE_CHECKING:
    from harness.config import PruningConfig
    from harness.context import Budget, Context
    from harness.protocols import RunStore

__all__ = [
    "DEFAULT_TRIGGER_SHARE",
    "PrunePlan",
    "Pruner",
    "latest_exchange_ids",
    "pruned_reference",
    "rewrite_as_reference",
]

DEFAULT_TRIGGER_SHARE = 0.4
"""Without ``trigger_tokens``, pruning starts at this share of the input budget."""


def pruned_reference(item: ToolResultItem) -> str:
    """The one line that replaces a pruned tool result."""
    return (
        f"[{item.name} output of turn {item.turn} ({len(item.text)} characters) pruned from "
        f"context; exact text: recall(address={item.archive!r})]"
    )


@dataclass
class PrunePlan:
    """What one pruning pass would change, and what it would reclaim."""

    rewrites: dict[str, str] = field(default_factory=dict)
    """Tool result id -> the one-line reference that replaces its text."""
    removals: set[str] = field(default_factory=set)
    """Superseded Task Notes snapshots that leave the context (after being archived)."""
    reasons: dict[str, str] = field(default_factory=dict)
    reclaim_tokens: int = 0

    @property
    def empty(self) -> bool:
        return not self.rewrites and not self.removals


class Pruner:
    """Plans and applies pruning passes over a Context's Accumulated items."""

    def __init__(self, config: PruningConfig, *, store: RunStore | None) -> None:
        self.config = config
        self.store = store

    def trigger_tokens(self, budget: Budget) -> int:
        if self.config.trigger_tokens is not None:
            return self.config.trigger_tokens
        return int(budget.threshold * DEFAULT_TRIGGER_SHARE)

    def plan(self, context: Context, *, start: int = 0) -> PrunePlan:
        """Everything prunable now from Accumulated index ``start`` on, with the tokens it
        would reclaim (nothing is changed)."""
        items = context.accumulated
        plan = PrunePlan()
        if not items:
            return plan
        keep = self.config.protect_recent_items
        protected = {item.id for item in items[max(0, len(items) - keep) :]} if keep else set()
        protected.update(latest_exchange_ids(items))
        current = current_notes_id(items)
        newest_notes: dict[str, str] = {}
        for item in items:
            if isinstance(item, TaskNotesItem):
                newest_notes[item.task_id] = item.id

        estimate = context.estimator.text
        reclaim = 0
        states = context.states
        for item in items[start:]:
            if item.id == current:
                continue
            if item.id in protected and not (start and isinstance(item, TaskNotesItem)):
                continue  # a superseded snapshot leaves the recent items for free
            if item.id in states and states[item.id].status == "pruned":
                continue  # already a one-line reference
            if isinstance(item, TaskNotesItem):
                if newest_notes[item.task_id] == item.id or self.store is None:
                    continue
                plan.removals.add(item.id)
                plan.reasons[item.id] = f"superseded Task Notes v{item.version}"
                reclaim += context.item_tokens(item)
            elif (
                isinstance(item, ToolResultItem)
                and item.archive
                and len(item.text) >= self.config.min_result_chars
            ):
                reference = pruned_reference(item)
                plan.rewrites[item.id] = reference
                plan.reasons[item.id] = (
                    f"old {item.name} output of {len(item.text)} characters pruned to a "
                    f"reference to {item.archive}"
                )
                reclaim += max(0, estimate(item.text) - estimate(reference))
        plan.reclaim_tokens = context.estimator.calibrated(reclaim)
        return plan

    def apply(self, context: Context, plan: PrunePlan) -> None:
        """Swap in the plan's changes through the Context's single write path.

        Rewritten results get new ids: the run store keeps the original item untouched,
        and per-item token estimates (cached by id) can never go stale.
        """
        states: dict[str, ItemState] = {}
        new_items: list[Item] = []
        for item in context.accumulated:
            if item.id in plan.removals:
                address = archive_item_text(self.store, item, item.text)
                reason = f"{plan.reasons[item.id]}; archived at {address}"
                states[item.id] = context.changed_state(item, "pruned", reason)
                continue
            reference = plan.rewrites.get(item.id)
            if reference is None:
                new_items.append(item)
                continue
            new_items.append(
                rewrite_as_reference(context, item, reference, plan.reasons[item.id], states)
            )
        context.replace(new_items, states=states)

    def run(self, context: Context) -> Iterator[CompactionEvent]:
        """One pass: the whole working set above the trigger when it reclaims enough;
        else, at any size, only what changes no cached item (:meth:`free_start`)."""
        if not self.config.enabled:
            return
        before = context.total_tokens()
        trigger = self.trigger_tokens(context.budget)
        started = time.monotonic()
        plan = self.plan(context) if before >= trigger else PrunePlan()
        batch = before >= trigger and plan.reclaim_tokens >= self.config.min_reclaim_tokens
        if batch:
            why = f"request of about {before} tokens passed the pruning trigger ({trigger})"
        elif context.stable_items:
            start = self.free_start(context)
            plan = self.plan(context, start=start)
            why = (
                f"nothing before item {start} changes (the provider's prompt cache keeps "
                "serving it)"
            )
        else:
            return
        if plan.empty:
            return
        self.apply(context, plan)
        yield CompactionEvent(
            status="completed",
            # a free pass that only drops the superseded snapshot is no prune: it happens
            # most turns, rewrites nothing cached, and would make the prune count the
            # request count
            mode="prune" if batch or plan.rewrites else "supersede",
            reason=(
                f"{why}; pruned {len(plan.rewrites)} old tool outputs and "
                f"{len(plan.removals)} superseded Task Notes snapshots"
            ),
            tokens_before=before,
            tokens_after=context.total_tokens(),
            items_folded=len(plan.rewrites) + len(plan.removals),
            items_retained=len(context.accumulated),
            duration_s=round(time.monotonic() - started, 6),
        )

    @staticmethod
    def free_start(context: Context) -> int:
        """The first Accumulated index whose change costs no prompt-cache write the next
        request does not pay anyway: the last item of the previous request (usually the
        Task Notes snapshot it ended with, superseded by now) and everything after it, or
        everything from the first item another step changed this turn. (Before this
        context's first request nothing is free: a resumed session's provider may still
        hold its prefix.)"""
        return max(0, context.stable_items - 1)


def rewrite_as_reference(
    context: Context, item: Item, reference: str, reason: str, states: dict[str, ItemState]
) -> Item:
    """A copy of ``item`` whose text is the one-line ``reference``, under a new id (the run
    store keeps the original untouched, and per-item token estimates cached by id can
    never go stale); both states say what happened, with ``reason``."""
    replacement = item.model_copy(update={"id": new_id("item"), "text": reference})
    states[item.id] = context.changed_state(
        item, "pruned", f"{reason}; now {replacement.id}", replaced_by=replacement.id
    )
    states[replacement.id] = context.changed_state(item, "pruned", f"{reason} (replaces {item.id})")
    return replacement


def latest_exchange_ids(items: list[Item]) -> set[str]:
    """The newest model decision and everything after it: its results have not been read
    by the model yet when the compactor runs, so they are never pruned.

    Scans back from the end only (this runs before every model call, so its cost must not
    grow with the history): the newest assistant item, the rest of its turn before it, and
    everything after it.
    """
    if not items:
        return set()
    anchor = next(
        (i for i in range(len(items) - 1, -1, -1) if isinstance(items[i], AssistantItem)),
        len(items) - 1,  # no decision yet: protect the last turn
    )
    key = (items[anchor].task_id, items[anchor].turn)
    start = anchor
    while start > 0 and (items[start - 1].task_id, items[start - 1].turn) == key:
        start -= 1
    return {item.id for item in items[start:]}
