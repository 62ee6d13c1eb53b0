"""Reading Accumulated context as whole turns, and deciding which turns a compaction folds.

A *turn group* is a run of items sharing ``(task_id, turn)``: the Task Notes snapshot, the
model's decision, the results of the tool(s) it called and any instruction revision that
arrived after them. Groups are the unit of every structural decision (fold, keep, chunk),
which is what guarantees that a tool call is never separated from its result. As a safety
net for histories that did not come from the loop, groups are also merged whenever a tool
result would otherwise land in a different group from the call that requested it.

The plan is pure: the same items and bounds always give the same plan, so every
compaction can be reproduced and tested without a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.messages import AssistantItem, Item, TaskNotesItem, ToolResultItem

__all__ = [
    "CompactionPlan",
    "TurnGroup",
    "current_notes_id",
    "group_turns",
    "plan_compaction",
]


@dataclass(frozen=True)
class TurnGroup:
    """Consecutive items of one turn (or of several turns bound by a call/result pair)."""

    key: tuple[str, int]
    items: tuple[Item, ...]

    @property
    def ids(self) -> list[str]:
        return [item.id for item in self.items]


def group_turns(items: Sequence[Item]) -> list[TurnGroup]:
    """Split ``items`` into turn groups, never separating a tool call from its result."""
    runs: list[list[Item]] = []
    keys: list[tuple[str, int]] = []
    for item in items:
        key = (item.task_id, item.turn)
        if not runs or keys[-1] != key:
            runs.append([])
            keys.append(key)
        runs[-1].append(item)

    # join_until[i] = the last run that must share a group with run i
    join_until = list(range(len(runs)))
    call_run: dict[str, int] = {}
    for index, run in enumerate(runs):
        for item in run:
            if isinstance(item, AssistantItem):
                for call in item.tool_calls:
                    call_run.setdefault(call.id, index)
    for index, run in enumerate(runs):
        for item in run:
            if isinstance(item, ToolResultItem) and item.call_id in call_run:
                first, last = sorted((call_run[item.call_id], index))
                join_until[first] = max(join_until[first], last)

    groups: list[TurnGroup] = []
    start = 0
    while start < len(runs):
        end = join_until[start]
        cursor = start
        while cursor <= end:
            end = max(end, join_until[cursor])
            cursor += 1
        merged = tuple(item for run in runs[start : end + 1] for item in run)
        groups.append(TurnGroup(key=keys[start], items=merged))
        start = end + 1
    return groups


def current_notes_id(items: Sequence[Item]) -> str | None:
    """The id of the current Task Notes snapshot (the latest one), which is never folded."""
    for item in reversed(items):
        if isinstance(item, TaskNotesItem):
            return item.id
    return None


@dataclass(frozen=True)
class CompactionPlan:
    """Which groups are folded into a checkpoint and which stay verbatim.

    ``groups[:tail_start]`` is the prefix (folded, except pinned items); the rest is the
    retained tail of whole recent turns.
    """

    groups: list[TurnGroup]
    tail_start: int
    pinned: frozenset[str] = field(default_factory=frozenset)

    @property
    def prefix(self) -> list[TurnGroup]:
        return self.groups[: self.tail_start]

    @property
    def tail(self) -> list[TurnGroup]:
        return self.groups[self.tail_start :]

    def foldable(self, groups: Sequence[TurnGroup] | None = None) -> list[Item]:
        """Items of ``groups`` (default: the prefix) that a checkpoint may replace."""
        source = self.prefix if groups is None else groups
        return [item for group in source for item in group.items if item.id not in self.pinned]

    def tail_items(self) -> list[Item]:
        return [item for group in self.tail for item in group.items]


def plan_compaction(
    items: Sequence[Item],
    *,
    keep_recent_turns: int,
    keep_recent_tokens: int,
    tokens: Callable[[Sequence[Item]], int],
) -> CompactionPlan:
    """Choose the retained tail: the longest run of whole recent turns within both bounds.

    Turns are counted only if they hold something foldable: the group that holds just the
    current Task Notes snapshot (appended before the model decides) is not a turn yet.
    ``tokens`` is the same estimate the budget uses, so the bound means what it says.
    """
    groups = group_turns(items)
    notes_id = current_notes_id(items)
    pinned = frozenset({notes_id} if notes_id else set())
    tail_start = len(groups)
    turns = 0
    used = 0
    for index in range(len(groups) - 1, -1, -1):
        group = groups[index]
        counts_as_turn = any(item.id not in pinned for item in group.items)
        group_tokens = tokens(group.items)
        if counts_as_turn and turns + 1 > keep_recent_turns:
            break
        if used + group_tokens > keep_recent_tokens:
            break
        turns += int(counts_as_turn)
        used += group_tokens
        tail_start = index
    return CompactionPlan(groups=groups, tail_start=tail_start, pinned=pinned)
