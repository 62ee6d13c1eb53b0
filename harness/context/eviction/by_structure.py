"""Eviction by the structure of the work: what leaves the working set first, and how.

Applied by the pressure cleanup (:mod:`harness.context.eviction.cleanup`) before any checkpoint
fold, in three passes, each only while the cleanup still needs tokens:

1. **Completed tool exchanges**, by priority: physical actions whose effects are now in the
   scene graph (a physical call that succeeded) first; reads and observations next; errors
   and failed actions last (the model learns most from them). An evicted exchange keeps its
   call and a one-line reference to the exact output's ``archive://`` address.
2. **Completed episodes** become one record each: the conclusion plus one line per
   exchange with its address. Actions go first; an exploration stays while an action that
   depends on it is still in the working set. An active episode is never evicted.
3. As a last resort, **pinned notes** (ended tasks' prose, episode records, older notices
   and Task Notes snapshots) collapse oldest-first into one rolling summary of about
   :data:`PINNED_SUMMARY_TOKENS`. The running task's instruction and revisions, the current
   Task Notes, the checkpoint and the model's condensed memory stay.

Whole turn groups (:func:`~harness.context.compaction.turns.group_turns`) are the unit, so a call is
never separated from its result; the newest ``keep_recent`` exchange groups are never
touched; and every text that leaves is archived first (a tool output already is), so
nothing leaves the archive. :func:`plan_eviction` is pure; :func:`apply_eviction` writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.context.compaction.index import exchange_line
from harness.context.compaction.turns import TurnGroup, group_turns
from harness.context.episodes.marks import Episode, EpisodeBook
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
)

__all__ = [
    "PINNED_SUMMARY_TOKENS",
    "EvictionPlan",
    "evicted_reference",
    "exchange_calls",
    "exchange_priority",
    "group_episode",
    "plan_eviction",
    "record_in_context",
]

PINNED_SUMMARY_TOKENS = 400
ADDRESS_ROOM = "archive://task_0123456789abcdef/item_0123456789abcdef/exchanges"
"""An address as long as the ones records point to (for planning their size)."""
RECORD_LINES = 4
"""Exchange lines an episode record lists; the rest are counted (``search_archive``)."""
PINNED_LINE_CHARS = 160
PINNED_LINE_TOKENS = PINNED_LINE_CHARS // 4 + 8
KEPT_VERBATIM = ("the running task", "the current")
"""Protection reasons (:func:`~harness.context.compaction.turns.protected_items`) even the last
pass respects: the running task's instruction and revisions, the current Task Notes."""
EARLY, NORMAL, LATE = 0, 1, 2
Tokens = Callable[[Sequence[Item]], int]


def exchange_priority(results: Sequence[ToolResultItem]) -> int:
    """0: a physical action that succeeded (its effect is in the scene graph); 2: an error
    or a failed action (kept longest); 1: everything else (reads, observations)."""
    if any(r.is_error or (r.evaluation and r.evaluation.status == "failure") for r in results):
        return LATE
    if results and all(r.physical for r in results):
        return EARLY
    return NORMAL


def evicted_reference(result: ToolResultItem) -> str:
    return (
        f"[{result.name} output of turn {result.turn} evicted from the working set; exact "
        f"text: recall(address={result.archive!r})]"
    )


def _is_reference(result: ToolResultItem) -> bool:
    """Already a one-line reference (evicted here, or pruned: both read this way)."""
    return result.text.startswith(f"[{result.name} output of turn {result.turn} ")


def group_episode(group: TurnGroup) -> str:
    """The episode a turn group belongs to: any of its items' (one per group, since a turn
    makes one call and one episode is active at a time). An archived episode's record is
    not the episode's work: it belongs to no episode."""
    return next((item.episode for item in group.items if item.episode and not _is_record(item)), "")


def _is_record(item: Item) -> bool:
    return isinstance(item, NoticeItem) and item.purpose == "episode"


def exchange_calls(group: TurnGroup) -> dict[str, ToolCall]:
    return {
        call.id: call
        for item in group.items
        if isinstance(item, AssistantItem)
        for call in item.tool_calls
    }


def _results(group: TurnGroup) -> list[ToolResultItem]:
    return [item for item in group.items if isinstance(item, ToolResultItem)]


def _completed_exchange(group: TurnGroup) -> bool:
    calls = exchange_calls(group)
    answered = {r.call_id for r in _results(group)}
    return bool(calls) and set(calls) <= answered


def is_pinned_note(item: Item) -> bool:
    """What the last pass may collapse: notices and episode records, Task Notes snapshots,
    instructions and revisions (unless :data:`KEPT_VERBATIM`) and model prose that called no
    tool (a decision always stays with its results)."""
    if isinstance(item, NoticeItem):
        return item.purpose in ("notice", "episode", "nudge")
    if isinstance(item, AssistantItem):
        return bool(item.text) and not item.tool_calls
    return isinstance(item, (InstructionItem, RevisionItem, TaskNotesItem))


@dataclass
class EvictionPlan:
    """What one cleanup changes (nothing is changed until it is applied)."""

    rewrites: dict[str, str] = field(default_factory=dict)
    """Tool result id -> the reference that replaces its text (pass 1)."""
    episodes: dict[str, list[str]] = field(default_factory=dict)
    """Archived episode -> the ids of its items that leave (pass 2), in eviction order."""
    records: dict[str, str] = field(default_factory=dict)
    """Archived episode -> its whole record (:func:`record_in_context` is what stays)."""
    collapsed: list[str] = field(default_factory=list)
    """Pinned notes that collapse into the rolling summary (pass 3), oldest first."""
    reasons: dict[str, str] = field(default_factory=dict)
    freed_tokens: int = 0
    episode_tokens: int = 0
    """Of ``freed_tokens``: what archiving episodes freed (pass 2)."""

    @property
    def empty(self) -> bool:
        return not (self.rewrites or self.episodes or self.collapsed)

    def removed(self) -> set[str]:
        return {i for ids in self.episodes.values() for i in ids} | set(self.collapsed)


def _record_text(episode: Episode, groups: Sequence[TurnGroup]) -> str:
    turns = [item.turn for group in groups for item in group.items]
    span = f"turns {min(turns)}-{max(turns)}" if turns else "no turns"
    depends = f"; depended on {', '.join(episode.depends_on)}" if episode.depends_on else ""
    lines = [
        f"[episode {episode.name} ({episode.kind}, {span}, {episode.state}{depends}) archived "
        "by the harness]",
        f"Conclusion: {episode.conclusion or '(none given)'}",
    ]
    exchanges = [
        exchange_line(exchange_calls(group).get(result.call_id), result, str)
        for group in groups
        for result in _results(group)
    ]
    lines.extend(exchanges)
    return "\n".join(lines)


def record_in_context(record: str, every: str) -> str:
    """What of a record stays in context: its header, conclusion and first
    :data:`RECORD_LINES` exchanges; beyond them, one line with the address ``every`` where
    the whole record is archived (one ``recall`` from any of its exchanges)."""
    lines = record.splitlines()
    if len(lines) <= RECORD_LINES + 2:
        return record
    more = len(lines) - RECORD_LINES - 2
    return "\n".join(
        [*lines[: RECORD_LINES + 2], f"- ... {more} more exchanges of this episode: {every}"]
    )


def _batch_after_first_change(
    plan: EvictionPlan,
    candidates: list[tuple[int, int, list[ToolResultItem]]],
    groups: Sequence[TurnGroup],
    text_tokens: Callable[[str], int],
) -> None:
    """Everything after the first item the plan changes is written to the provider's cache
    again anyway: evict every other eligible output there in the same pass (errors and
    failed actions excepted: they are kept longest), so the next cleanup comes later and
    rewrites less. What stays verbatim is what came before the first change."""
    if not plan.rewrites:
        return
    first = min(
        index
        for _, index, results in candidates
        if any(result.id in plan.rewrites for result in results)
    )
    for priority, index, results in candidates:
        if index <= first or priority == LATE:
            continue
        for result in results:
            if result.id not in plan.rewrites:
                _evict(
                    plan,
                    result,
                    text_tokens,
                    f"completed {result.name} exchange evicted with the batch (after the "
                    f"first change, rewritten anyway); exact output at {result.archive}",
                )


def _evict(
    plan: EvictionPlan, result: ToolResultItem, text_tokens: Callable[[str], int], reason: str
) -> None:
    """Add ``result``'s one-line reference to ``plan`` when it is shorter than the output."""
    reference = evicted_reference(result)
    gain = text_tokens(result.text) - text_tokens(reference)
    if gain > 0:
        plan.rewrites[result.id] = reference
        plan.reasons[result.id] = reason
        plan.freed_tokens += gain


def plan_eviction(
    items: Sequence[Item],
    *,
    book: EpisodeBook,
    tokens: Tokens,
    text_tokens: Callable[[str], int],
    need: int,
    protected: Mapping[str, str],
    keep_recent: int,
    archive: bool = True,
    last_resort_below: int | None = None,
) -> EvictionPlan:
    """Choose what leaves to free ``need`` tokens, in the order of the module docstring.

    ``tokens`` is the budget's estimate of items already in the context; ``text_tokens``
    that of a text not yet in it (a reference, a record), so planning never caches an
    estimate under an id that will not exist.

    ``protected`` (item id -> why) is only ever collapsed by the last pass, and never when
    :data:`KEPT_VERBATIM`; the newest ``keep_recent`` exchange groups and every group of an
    active episode are never touched. Without an ``archive`` (no run store to keep what
    leaves), only pass 1 runs: tool outputs are archived by the loop. With
    ``last_resort_below``, pass 3 runs only when passes 1 and 2 freed less than that (the
    cleanup would otherwise change nothing). May free less than ``need``.
    """
    plan = EvictionPlan()
    groups = group_turns(items)
    exchange_indexes = [i for i, g in enumerate(groups) if exchange_calls(g)]
    recent = set(exchange_indexes[len(exchange_indexes) - keep_recent :]) if keep_recent else set()
    if exchange_indexes:  # the newest decision's results are unread: never evicted
        recent.add(exchange_indexes[-1])
    active = book.active_names()
    eligible = [
        i
        for i, group in enumerate(groups)
        if i not in recent
        and group_episode(group) not in active
        and not any(isinstance(item, CheckpointItem) for item in group.items)
    ]

    # Pass 1: completed exchanges by priority, oldest first within a priority.
    candidates = []
    for index in eligible:
        group = groups[index]
        results = [
            r
            for r in _results(group)
            if r.archive and r.id not in protected and not _is_reference(r)
        ]
        if not results or not _completed_exchange(group):
            continue
        candidates.append((exchange_priority(_results(group)), index, results))
    for priority, _, results in sorted(candidates, key=lambda c: (c[0], c[1])):
        if plan.freed_tokens >= need:
            break
        for result in results:
            _evict(
                plan,
                result,
                text_tokens,
                f"completed {result.name} exchange evicted (priority "
                f"{('early', 'normal', 'late')[priority]}); exact output at {result.archive}",
            )
    _batch_after_first_change(plan, candidates, groups, text_tokens)
    if plan.freed_tokens >= need or not archive:
        return plan

    # Pass 2: completed episodes, actions first; an exploration waits for its dependants.
    by_episode: dict[str, list[TurnGroup]] = {}
    blocked: set[str] = set()
    for index, group in enumerate(groups):
        name = group_episode(group)
        if not name:
            continue
        if index in eligible:
            by_episode.setdefault(name, []).append(group)
        else:
            blocked.add(name)  # part of it is recent (or active): it stays whole
    in_working_set = {group_episode(g) for g in groups if group_episode(g)} | active
    ended = [
        book.get(name)
        for name in by_episode
        if name not in blocked and book.get(name) is not None and not book.get(name).active  # type: ignore[union-attr]
    ]
    order = [e for e in ended if e is not None and e.kind == "action"]
    order += [e for e in ended if e is not None and e.kind == "exploration"]
    for episode in order:
        if plan.freed_tokens >= need:
            break
        if episode.kind == "exploration" and any(
            d.name in in_working_set for d in book.dependants(episode.name)
        ):
            continue
        leaving = [
            item
            for group in by_episode[episode.name]
            for item in group.items
            if item.id not in protected
        ]
        record = _record_text(episode, by_episode[episode.name])
        last = leaving[-1] if leaving else None
        # Measured as the item it becomes (an episode notice, with its framing), not as bare
        # text: a tiny episode whose record is as large as its exchanges frees nothing.
        as_item = NoticeItem(
            text=record_in_context(record, ADDRESS_ROOM),
            purpose="episode",
            episode=episode.name,
            task_id=last.task_id if last is not None else "",
            turn=last.turn if last is not None else 0,
        )
        gain = tokens(leaving) - max(tokens([as_item]), text_tokens(as_item.text))
        if gain <= 0:
            continue
        plan.episodes[episode.name] = [item.id for item in leaving]
        plan.records[episode.name] = record
        for item in leaving:
            plan.reasons[item.id] = f"completed {episode.kind} episode {episode.name} archived"
        plan.freed_tokens += gain
        plan.episode_tokens += gain
        in_working_set.discard(episode.name)
    if plan.freed_tokens >= need:
        return plan

    # Pass 3: pinned notes, oldest first, into one rolling summary.
    if not archive or (last_resort_below is not None and plan.freed_tokens >= last_resort_below):
        return plan
    removed = plan.removed()
    lines_cost = 0
    for index in eligible:
        for item in groups[index].items:
            if plan.freed_tokens >= need:
                return plan
            if item.id in removed or item.id in plan.rewrites or not is_pinned_note(item):
                continue
            if protected.get(item.id, "").startswith(KEPT_VERBATIM):
                continue
            line = min(tokens([item]), PINNED_LINE_TOKENS)
            added = min(lines_cost + line, PINNED_SUMMARY_TOKENS) - min(
                lines_cost, PINNED_SUMMARY_TOKENS
            )
            gain = tokens([item]) - added
            if gain <= 0:
                continue
            lines_cost += line
            plan.collapsed.append(item.id)
            plan.reasons[item.id] = "pinned note collapsed into the rolling summary (last resort)"
            plan.freed_tokens += gain
    return plan
