"""Reading Accumulated context as whole turns, and deciding which turns a compaction folds.

A *turn group* is a run of items sharing ``(task_id, turn)``: the Task Notes snapshot, the
model's decision, the results of the tool(s) it called and any instruction revision that
arrived after them. Groups are the unit of every structural decision (fold, keep, chunk),
which is what guarantees that a tool call is never separated from its result. As a safety
net for histories that did not come from the loop, groups are also merged whenever a tool
result would otherwise land in a different group from the call that requested it.

What a fold may never take is decided here too (:func:`protected_items`), each with its
reason: the current Task Notes snapshot; the running task's instruction and every revision
of it; and the operator-visible prose of ended tasks (instruction, revisions, final
report), newest tasks first, within a share of the budget; and the turns of an active
episode, newest first, within a share of the budget. Everything else in the prefix is
foldable. A new protection (a pinned decision) is one more rule there.

The plan is pure: the same items and bounds always give the same plan, so every
compaction can be reproduced and tested without a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    TaskNotesItem,
    ToolResultItem,
)

__all__ = [
    "CompactionPlan",
    "TurnGroup",
    "current_notes_id",
    "current_task_id",
    "group_turns",
    "is_task_prose",
    "plan_compaction",
    "protected_items",
]

TASK_ENDING_PREFIX = "Task "
"""Notices the harness records when a task ends start with this (``Task task_x ended``)."""


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


def current_task_id(items: Sequence[Item]) -> str | None:
    """The running task: the one of the newest instruction (or of the newest item)."""
    for item in reversed(items):
        if isinstance(item, InstructionItem):
            return item.task_id
    return items[-1].task_id if items else None


def is_task_prose(item: Item, final_reports: frozenset[str]) -> bool:
    """Operator-visible prose of a task: instruction, revisions, final report, ending."""
    if isinstance(item, (InstructionItem, RevisionItem)):
        return True
    if isinstance(item, NoticeItem):
        return item.text.startswith(TASK_ENDING_PREFIX)
    return item.id in final_reports


def _final_reports(items: Sequence[Item]) -> frozenset[str]:
    """Per task, its last model message when that message called no tool (the answer)."""
    last: dict[str, AssistantItem] = {}
    for item in items:
        if isinstance(item, AssistantItem):
            last[item.task_id] = item
    return frozenset(a.id for a in last.values() if a.text and not a.tool_calls)


def protected_items(
    items: Sequence[Item],
    *,
    tokens: Callable[[Sequence[Item]], int],
    ended_prose_tokens: int,
    current_task: str | None = None,
    keep_current_notes: bool = True,
    active_episodes: frozenset[str] = frozenset(),
    active_episode_tokens: int = 0,
) -> dict[str, str]:
    """Item id -> why no fold may take it (see the module docstring).

    Ended tasks' prose is kept newest task first while it fits ``ended_prose_tokens``; the
    prose of older tasks is foldable (the index keeps its address). ``current_task``
    defaults to :func:`current_task_id`; when a task is only about to start,
    ``keep_current_notes=False`` lets the ended task's last Task Notes snapshot go too.
    """
    running = current_task if current_task is not None else current_task_id(items)
    reports = _final_reports(items)
    protected: dict[str, str] = {}
    notes_id = current_notes_id(items) if keep_current_notes else None
    if notes_id is not None:
        protected[notes_id] = "the current Task Notes snapshot"
    ended: dict[str, list[Item]] = {}
    for item in items:
        if not is_task_prose(item, reports):
            continue
        if item.task_id == running:
            what = "instruction" if isinstance(item, InstructionItem) else "instruction revision"
            if isinstance(item, (InstructionItem, RevisionItem)):
                protected[item.id] = f"the running task's {what}"
        else:
            ended.setdefault(item.task_id, []).append(item)
    _protect_active_episodes(
        items, protected, active=active_episodes, limit=active_episode_tokens, tokens=tokens
    )
    used = 0
    for task_id in reversed(list(ended)):
        cost = tokens(ended[task_id])
        if used + cost > ended_prose_tokens:
            break
        used += cost
        for item in ended[task_id]:
            protected[item.id] = f"operator-visible prose of ended task {task_id or 'session'}"
    return protected


def _protect_active_episodes(
    items: Sequence[Item],
    protected: dict[str, str],
    *,
    active: frozenset[str],
    limit: int,
    tokens: Callable[[Sequence[Item]], int],
) -> None:
    """Whole turn groups of an active episode, newest first, within ``limit`` tokens (a
    model that never ends its episode must not make the context unfoldable; beyond the
    limit its oldest turns fold like any others, into the index)."""
    if not active:
        return
    used = 0
    for group in reversed(group_turns(items)):
        name = next((i.episode for i in group.items if i.episode in active), "")
        if not name:
            continue
        used += tokens(group.items)
        if used > limit:
            return
        for item in group.items:
            protected.setdefault(item.id, f"active episode {name}")


@dataclass(frozen=True)
class CompactionPlan:
    """Which groups are folded into a checkpoint and which stay verbatim.

    ``groups[:tail_start]`` is the prefix (folded, except pinned items); the rest is the
    retained tail of whole recent turns. ``reasons`` says why each pinned item stays.
    """

    groups: list[TurnGroup]
    tail_start: int
    pinned: frozenset[str] = field(default_factory=frozenset)
    reasons: dict[str, str] = field(default_factory=dict)

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
    ended_prose_tokens: int = 0,
    active_episodes: frozenset[str] = frozenset(),
    active_episode_tokens: int = 0,
) -> CompactionPlan:
    """Choose the retained tail: the longest run of whole recent turns within both bounds.

    Turns are counted only if they hold something foldable: the group that holds just the
    current Task Notes snapshot (appended before the model decides) is not a turn yet.
    ``tokens`` is the same estimate the budget uses, so the bound means what it says.
    """
    groups = group_turns(items)
    reasons = protected_items(
        items,
        tokens=tokens,
        ended_prose_tokens=ended_prose_tokens,
        active_episodes=active_episodes,
        active_episode_tokens=active_episode_tokens,
    )
    pinned = frozenset(reasons)
    tail_start = len(groups)
    turns = 0
    used = 0
    for index in range(len(groups) - 1, -1, -1):
        group = groups[index]
        if any(isinstance(item, CheckpointItem) for item in group.items):
            break  # the checkpoint stands for everything before the tail: never retained
        counts_as_turn = any(item.id not in pinned for item in group.items)
        group_tokens = tokens(group.items)
        if counts_as_turn and turns + 1 > keep_recent_turns:
            break
        if used + group_tokens > keep_recent_tokens:
            break
        turns += int(counts_as_turn)
        used += group_tokens
        tail_start = index
    return CompactionPlan(groups=groups, tail_start=tail_start, pinned=pinned, reasons=reasons)
