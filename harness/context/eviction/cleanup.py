"""The pressure cleanup: eviction by the structure of the work, before any checkpoint fold.

Runs before every model call once the request reaches the cleanup level
(:class:`~harness.context.eviction.pressure.Pressure`) and aims for the landing level, in the order
:mod:`harness.context.eviction.by_structure` plans. An eviction that would free less than
:data:`~harness.context.eviction.pressure.MIN_CLEANUP_SHARE` of the window changes nothing (and
says so once per crossing). When eviction is skipped, or leaves the request above halfway
between the landing and cleanup levels, the compactor's checkpoint fold follows in the
same call: a cleanup lands deep, so the prompt cache is spent rarely.

With cache prices on the levels (``context.pressure.cache_aware``), a cleanup also runs
below the cleanup level, whenever it pays for itself
(:mod:`harness.context.eviction.carrying`): it evicts every eligible output and completed
episode, and asks for a fold once what eviction leaves behind has cost a fold.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Generator
from typing import TYPE_CHECKING

from harness.context.compaction.archive import archive_item_text, archive_prose, item_address
from harness.context.compaction.folds import ended_prose_tokens, text_estimate, token_estimate
from harness.context.compaction.index import ARCHIVE_ADDRESS, listed_lines
from harness.context.compaction.turns import protected_items
from harness.context.eviction.by_structure import (
    PINNED_LINE_CHARS,
    PINNED_SUMMARY_TOKENS,
    plan_eviction,
    record_in_context,
)
from harness.context.eviction.carrying import CacheCost, CarryingCost
from harness.context.eviction.pruning import rewrite_as_reference
from harness.context.model import Context, ItemState
from harness.events import CompactionEvent
from harness.messages import CheckpointItem, Item, NoticeItem

if TYPE_CHECKING:
    from harness.context.eviction.by_structure import EvictionPlan
    from harness.context.eviction.pressure import Pressure
    from harness.protocols import RunStore

__all__ = ["PINNED_HEADER", "PressureCleanup", "apply_eviction", "kept_prefix"]

PINNED_HEADER = "[pinned notes collapsed by the harness, oldest first; exact texts by address]"
EVERY_LINE = "; every line: "


class PressureCleanup:
    """One context's cleanup step (see the module docstring)."""

    def __init__(self, store: RunStore | None, *, keep_recent: int) -> None:
        self.store = store
        self.keep_recent = keep_recent
        self._said_skip = False
        self.carrying: CarryingCost | None = None
        """The cost rule's account (:mod:`harness.context.eviction.carrying`), made on the
        first call of a context whose pressure has cache prices."""
        self.fold_reason = ""
        """Why the fold this call asks for follows (empty: the cleanup level's reason)."""
        self._owner: weakref.ref[Context] | None = None
        """The context the account belongs to (a new context starts a new one). A weak
        reference, not ``id()``: a context built after another was collected may reuse
        its ``id`` and would inherit a stranger's account."""

    def run(self, context: Context) -> Generator[CompactionEvent, None, bool]:
        """Evict if the request reached the cleanup level, or below it when a cleanup pays
        for itself at the cache's prices; returns True when a checkpoint fold must follow
        (eviction at the cleanup level could not land halfway to the landing level)."""
        pressure = context.budget.pressure
        if pressure is None:
            return False
        before = context.total_tokens()
        self.fold_reason = ""
        cleanup, land = self._levels(context, pressure)
        if before < cleanup:
            self._said_skip = False
            if pressure.cost is None:
                return False
            return (yield from self._when_it_pays(context, pressure.cost, before))
        halfway = (land + cleanup) // 2
        started = time.monotonic()
        plan = self._plan(context, need=before - land, last_resort_below=pressure.min_free_tokens)
        if plan.freed_tokens < pressure.min_free_tokens:
            if not self._said_skip:
                self._said_skip = True
                yield CompactionEvent(
                    status="skipped",
                    mode="eviction",
                    reason=f"the request of about {before} tokens reached the cleanup level "
                    f"({cleanup}), but eviction could free only about "
                    f"{plan.freed_tokens} tokens, less than the {pressure.min_free_tokens} "
                    "(15 % of the window) a cleanup must free; nothing was evicted and the "
                    "checkpoint fold takes over",
                    tokens_before=before,
                    tokens_after=before,
                )
            return True
        kept = kept_prefix(context, plan)
        apply_eviction(context, plan, self.store)
        context.episode_ledger.hold_out(plan.episode_tokens)
        self._said_skip = False
        after = context.total_tokens()
        if self.carrying is not None and self._owns(context):
            self.carrying.applied(_accumulated(context), kept_prefix=kept)
        names = ", ".join(plan.episodes) or "none"
        yield CompactionEvent(
            status="completed",
            mode="eviction",
            reason=f"the request of about {before} tokens reached the cleanup level "
            f"({cleanup}; aiming for {land}): evicted "
            f"{len(plan.rewrites)} completed tool outputs, archived {len(plan.episodes)} "
            f"completed episode(s) ({names}), collapsed {len(plan.collapsed)} pinned note(s)",
            tokens_before=before,
            tokens_after=after,
            items_folded=len(plan.rewrites) + len(plan.removed()),
            items_retained=len(context.accumulated),
            duration_s=round(time.monotonic() - started, 6),
        )
        return after > halfway

    def _owns(self, context: Context) -> bool:
        """Whether the carrying-cost account was opened for this very context."""
        return self._owner is not None and self._owner() is context

    def _plan(self, context: Context, *, need: int, last_resort_below: int) -> EvictionPlan:
        """The eviction plan for ``need`` tokens, the same for both triggers (the cleanup
        level and the cache prices); only how much is needed and when the last resort
        (collapsing pinned notes) applies differ."""
        tokens = token_estimate(context)
        return plan_eviction(
            context.accumulated,
            book=context.episodes,
            tokens=tokens,
            text_tokens=text_estimate(context),
            need=need,
            protected=protected_items(
                context.accumulated, tokens=tokens, ended_prose_tokens=ended_prose_tokens(context)
            ),
            keep_recent=self.keep_recent,
            archive=self.store is not None,
            last_resort_below=last_resort_below,
        )

    def _levels(self, context: Context, pressure: Pressure) -> tuple[int, int]:
        """(cleanup level, landing level) in force. When the part no cleanup can touch
        (system blocks, tool definitions, Refreshed, images) already reaches the cleanup
        level, a level under it would plan, skip and fold on every request: the cleanup
        level moves to that floor plus the least a cleanup must free (the compaction
        threshold still caps it) and the landing level to the floor itself."""
        floor = context.fixed_tokens()
        if floor < pressure.cleanup_tokens:
            return pressure.cleanup_tokens, pressure.land_tokens
        cleanup = min(floor + pressure.min_free_tokens, context.budget.threshold)
        return cleanup, min(floor, cleanup - 1)

    def _when_it_pays(
        self, context: Context, prices: CacheCost, before: int
    ) -> Generator[CompactionEvent, None, bool]:
        """The cost rule below the cleanup level (module docstring of
        :mod:`harness.context.eviction.carrying`): evict every eligible completed output
        and episode once the carrying cost since the last cleanup reached the cost of the
        rewrite, if the plan frees enough to pay for its own rewrite; True when a
        checkpoint fold must follow (carrying what eviction leaves has cost a fold)."""
        if self.carrying is None or self.carrying.prices != prices or not self._owns(context):
            self.carrying, self._owner = CarryingCost(prices), weakref.ref(context)
        carrying = self.carrying
        accumulated = _accumulated(context)
        checkpoint = next(
            (item.id for item in context.accumulated if isinstance(item, CheckpointItem)), None
        )
        if not carrying.observe(accumulated, checkpoint=checkpoint):
            return False
        started = time.monotonic()
        plan = self._plan(
            context,
            need=before - context.fixed_tokens(),
            last_resort_below=carrying.min_free(accumulated),
        )
        kept = kept_prefix(context, plan)
        rewritten = max(0, accumulated - plan.freed_tokens - kept)
        if plan.empty or not carrying.worth(freed=plan.freed_tokens, rewritten=rewritten):
            carrying.declined(accumulated - plan.freed_tokens, kept_prefix=kept)
            return self._fold_due(carrying)
        cycle = carrying.requests
        apply_eviction(context, plan, self.store)
        context.episode_ledger.hold_out(plan.episode_tokens)
        carrying.applied(_accumulated(context), kept_prefix=kept)
        names = ", ".join(plan.episodes) or "none"
        yield CompactionEvent(
            status="completed",
            mode="eviction",
            reason=f"carrying the evictable tokens for {cycle} requests cost what a "
            f"rewrite of about {rewritten} cached tokens costs (cache prices: read "
            f"x{prices.read_price:g}, write x{prices.write_price:g}): evicted "
            f"{len(plan.rewrites)} completed tool outputs, archived {len(plan.episodes)} "
            f"completed episode(s) ({names}), collapsed {len(plan.collapsed)} pinned note(s)",
            tokens_before=before,
            tokens_after=context.total_tokens(),
            items_folded=len(plan.rewrites) + len(plan.removed()),
            items_retained=len(context.accumulated),
            duration_s=round(time.monotonic() - started, 6),
        )
        return self._fold_due(carrying)

    def _fold_due(self, carrying: CarryingCost) -> bool:
        residue, cost = carrying.residue(), carrying.fold_cost()
        if not carrying.fold_due():
            return False
        self.fold_reason = (
            f"cache-aware cleanup: the {residue} tokens eviction leaves behind (references, "
            f"records, notes) have cost, carried since the last fold, what a fold costs "
            f"(about {cost:.0f} token-equivalents: the summarizer reading them and the "
            "rewrite of the rest)"
        )
        return True


def kept_prefix(context: Context, plan: EvictionPlan) -> int:
    """Tokens of the Accumulated items before the first one ``plan`` changes: the part a
    cleanup leaves cached."""
    changed = set(plan.rewrites) | plan.removed()
    total = 0
    for item in context.accumulated:
        if item.id in changed:
            break
        total += context.item_tokens(item)
    return context.estimator.calibrated(total)


def _accumulated(context: Context) -> int:
    """Accumulated's calibrated estimate (the unit every plan counts in)."""
    return context.estimator.calibrated(context.accumulated_tokens())


def apply_eviction(context: Context, plan: EvictionPlan, store: RunStore | None) -> None:
    """Write the plan through ``Context.replace``: references for evicted outputs, one
    record per archived episode where its first item was, the rolling pinned summary where
    the previous one (or the first collapsed note) was. Everything that leaves is archived
    first; rewritten items get new ids (the store keeps the originals)."""
    states: dict[str, ItemState] = {}
    owner = {item_id: name for name, ids in plan.episodes.items() for item_id in ids}
    last_of = {owner[item.id]: item for item in context.accumulated if item.id in owner}
    collapsed = set(plan.collapsed)
    previous = next(
        (i for i in context.accumulated if isinstance(i, NoticeItem) and i.purpose == "pinned"),
        None,
    )
    lines = carried_lines(previous, store)
    new_items: list[Item] = []
    summary_at: int | None = None
    placed: set[str] = set()
    for item in context.accumulated:
        if item is previous:
            summary_at = len(new_items)
            continue
        if item.id in owner:
            name = owner[item.id]
            archive_prose(store, item)
            states[item.id] = context.changed_state(item, "summarized", plan.reasons[item.id])
            if name not in placed:
                placed.add(name)
                last = last_of[name]
                record = NoticeItem(
                    text="", purpose="episode", episode=name, task_id=last.task_id, turn=last.turn
                )
                whole = plan.records[name]
                every = archive_item_text(store, record, whole, part="exchanges") or ""
                new_items.append(
                    record.model_copy(update={"text": record_in_context(whole, every)})
                )
            continue
        if item.id in collapsed:
            address = archive_item_text(store, item, _text_of(item)) or item_address(item)
            lines.append(_pinned_line(item, address))
            if isinstance(item, NoticeItem) and item.purpose == "episode":
                # the record's exchanges join the list themselves: each output stays one
                # recall of the list away, however often the list is carried over
                lines.extend(line for line in listed_lines(item, store) if line not in lines)
            states[item.id] = context.changed_state(
                item, "summarized", f"{plan.reasons[item.id]}; exact text at {address}"
            )
            if summary_at is None:
                summary_at = len(new_items)
            continue
        reference = plan.rewrites.get(item.id)
        if reference is None:
            new_items.append(item)
            continue
        new_items.append(
            rewrite_as_reference(context, item, reference, plan.reasons[item.id], states)
        )
    if collapsed and summary_at is not None:
        anchor = new_items[summary_at - 1] if summary_at else context.accumulated[0]
        new_items.insert(
            summary_at, _rolling_summary(context, store, previous, lines, anchor=anchor)
        )
    elif previous is not None and summary_at is not None:
        # Nothing collapsed this time: the summary stays where it was, unchanged (it is
        # the only place in context that leads to the notes it replaced).
        new_items.insert(summary_at, previous)
    context.replace(new_items, states=states)


def carried_lines(previous: NoticeItem | None, store: RunStore | None) -> list[str]:
    """Every line of the previous rolling summary: the archived full list when it named
    one (its header's ``every line``), else the lines it showed. Carried whole into the
    next summary, so no line is ever further away than the newest list."""
    if previous is None:
        return []
    header, *shown = previous.text.splitlines()
    _, marker, rest = header.partition(EVERY_LINE)
    listed = ARCHIVE_ADDRESS.match(rest.strip()) if marker else None
    if listed is not None and store is not None:
        full = store.archive_get(listed.group(0))
        if full is not None:
            return full.splitlines()
    return shown


def _text_of(item: Item) -> str:
    return getattr(item, "text", "") or ""


def _pinned_line(item: Item, address: str) -> str:
    text = " ".join(_text_of(item).split())
    head = f"- {item.task_id or 'session'} t{item.turn} {item.kind}: "
    room = PINNED_LINE_CHARS - len(head) - len(address) - 8
    if len(text) > room:
        text = text[: max(0, room - 3)] + "..."
    return f"{head}{text} ({address})"


def _rolling_summary(
    context: Context,
    store: RunStore | None,
    previous: NoticeItem | None,
    lines: list[str],
    *,
    anchor: Item,
) -> NoticeItem:
    """One summary of at most :data:`PINNED_SUMMARY_TOKENS`: the oldest lines drop out
    first, the previous summary's exact text stays archived and is named in the header."""
    header = PINNED_HEADER
    if previous is not None:
        address = archive_item_text(store, previous, previous.text)
        if address:
            header += f"; the previous summary: {address}"
    summary = NoticeItem(text="", purpose="pinned", task_id=anchor.task_id, turn=anchor.turn)
    estimate = context.estimator.text
    if estimate("\n".join([header, *lines])) > PINNED_SUMMARY_TOKENS:
        every = archive_item_text(store, summary, "\n".join(lines), part="lines")
        header += f"{EVERY_LINE}{every}"
        while lines and estimate("\n".join([header, *lines])) > PINNED_SUMMARY_TOKENS:
            lines = lines[1:]
    return summary.model_copy(update={"text": "\n".join([header, *lines])})
