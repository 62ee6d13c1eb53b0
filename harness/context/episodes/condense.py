"""``condense_context``: the model keeps its own workspace lean at a natural milestone.

The model writes a bounded JSON memory (:class:`CondensedMemory`: completed work,
strategies and outcomes, environment changes, constraints, open questions and
``archive://`` references). No model is called: the harness checks the memory and
replaces the eligible old exchange groups and completed episodes with it, in one write.

Protected, always: the newest :data:`KEEP_GROUPS` exchange groups, the instruction and its
revisions (and everything :func:`~harness.context.compaction.turns.protected_items` keeps), Task
Notes, active episodes, observations (results that carried camera frames), the
checkpoint, harness notices and the pinned summary. There is one live memory: a new one
replaces the previous (whose text stays archived), and its harness-written list of the
exchanges it replaced carries over, so every replaced output keeps its address in context.

Refused, with the context unchanged and a sentence that says why (:class:`CondenseRefused`):
while an episode is active, when a reference is not an address of this session, when the
memory is over :data:`MEMORY_MAX_TOKENS`, and when there is nothing to condense yet.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from harness.context.compaction.archive import archive_item_text, archive_prose
from harness.context.compaction.folds import ended_prose_tokens, token_estimate
from harness.context.compaction.index import exchange_line, listed_lines
from harness.context.compaction.turns import TurnGroup, group_turns, protected_items
from harness.context.eviction.by_structure import exchange_calls, group_episode
from harness.context.model import Context, ItemState
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    Item,
    NoticeItem,
    ToolResultItem,
)
from harness.protocols import RunStore

__all__ = [
    "KEEP_GROUPS",
    "MEMORY_MAX_TOKENS",
    "CondenseRefused",
    "Condensed",
    "CondensedMemory",
    "condense",
]

MEMORY_MAX_TOKENS = 2000
KEEP_GROUPS = 4
"""The newest exchange groups stay verbatim: the model is still working with them."""
LINES_KEPT = 6
"""Replaced exchanges listed in the memory itself; the full list is archived beside it."""
MEMORY_HEADING = "[condensed memory, written by the model with condense_context"
LISTED_AT = re.compile(r"replaced exchanges are listed at (archive://\S+?)[\];]")


class CondensedMemory(BaseModel):
    """What the model keeps of the work so far (the arguments of ``condense_context``)."""

    model_config = ConfigDict(extra="forbid")

    completed_work: list[str] = Field(
        default_factory=list, description="What is done, with the objects and results."
    )
    strategies: list[str] = Field(
        default_factory=list, description="Strategies tried and how each turned out."
    )
    environment_changes: list[str] = Field(
        default_factory=list, description="What changed in the world (moved, opened, ...)."
    )
    constraints: list[str] = Field(
        default_factory=list, description="Constraints learned (limits, blocked areas)."
    )
    open_questions: list[str] = Field(default_factory=list, description="What is still open.")
    references: list[str] = Field(
        default_factory=list,
        description="archive:// addresses of exact outputs worth reading again.",
    )

    def render(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"))


class CondenseRefused(ValueError):
    """``condense_context`` was refused; the context is unchanged."""


@dataclass(frozen=True)
class Condensed:
    memory: NoticeItem
    replaced: int
    tokens_before: int
    tokens_after: int
    first_turn: int
    last_turn: int


def live_memory(items: list[Item]) -> NoticeItem | None:
    return next((i for i in items if isinstance(i, NoticeItem) and i.purpose == "memory"), None)


def _protected_group(group: TurnGroup, active: frozenset[str]) -> bool:
    if group_episode(group) in active:
        return True
    for item in group.items:
        if isinstance(item, CheckpointItem):
            return True
        if isinstance(item, ToolResultItem) and item.images:
            return True  # an observation: the frames it showed are not in any memory
    return False


def _leaves(item: Item, protected: dict[str, str]) -> bool:
    """Inside an eligible group only decisions, results and episode records are replaced."""
    if item.id in protected:
        return False
    if isinstance(item, NoticeItem):
        return item.purpose in ("episode", "nudge")
    return isinstance(item, (AssistantItem, ToolResultItem))


def condense(
    context: Context,
    memory: CondensedMemory,
    *,
    task_id: str,
    turn: int,
    address_exists: Callable[[str], bool],
    store: RunStore | None,
) -> Condensed:
    """Replace the eligible old groups with ``memory``, or raise :class:`CondenseRefused`."""
    active = context.episodes.active(task_id)
    if active:
        raise CondenseRefused(
            f"episode {active[0].name!r} ({active[0].kind}) is active: condense at a "
            "milestone, after end_episode"
        )
    bad = [ref for ref in memory.references if not address_exists(ref)]
    if bad:
        raise CondenseRefused(
            f"reference(s) {', '.join(map(repr, bad[:5]))} are not archive:// addresses of "
            "this session; use addresses shown in results, the checkpoint index or "
            "search_archive"
        )
    text = memory.render()
    size = context.estimator.calibrated(context.estimator.text(text))
    if size > MEMORY_MAX_TOKENS:
        raise CondenseRefused(
            f"the memory has about {size} tokens; keep it under {MEMORY_MAX_TOKENS} (cite "
            "details by archive:// address instead of copying them)"
        )
    items = context.accumulated
    previous = live_memory(items)
    tokens = token_estimate(context)
    protected = protected_items(
        items, tokens=tokens, ended_prose_tokens=ended_prose_tokens(context)
    )
    groups = group_turns(items)
    exchanges = [i for i, g in enumerate(groups) if any(_is_decision(x) for x in g.items)]
    cutoff = exchanges[-KEEP_GROUPS] if len(exchanges) >= KEEP_GROUPS else 0
    names = context.episodes.active_names()
    leaving: list[Item] = []
    lines: list[str] = []
    for group in groups[:cutoff]:
        if _protected_group(group, names):
            continue
        calls = exchange_calls(group)
        for item in group.items:
            if _leaves(item, protected):
                leaving.append(item)
                archive_prose(store, item)
                if isinstance(item, ToolResultItem):
                    lines.append(exchange_line(calls.get(item.call_id), item, str))
                elif isinstance(item, NoticeItem):
                    # an episode record's exchanges themselves, read back whole when the
                    # record in context was cut: one recall of the memory's list each
                    lines.extend(listed_lines(item, store))
    if not leaving and previous is None:
        raise CondenseRefused(
            f"nothing to condense yet: the newest {KEEP_GROUPS} exchange groups, the "
            "instruction, Task Notes, active episodes and observations always stay"
        )
    before = context.total_tokens()
    carried = _carried_lines(previous, store)
    memory_item = _memory_item(
        text, [*carried, *lines], leaving, previous, store, task_id=task_id, turn=turn
    )
    gone = {item.id for item in leaving}
    states: dict[str, ItemState] = {}
    new_items: list[Item] = []
    placed = False
    for item in items:
        if item is previous or item.id in gone:
            if not placed:
                new_items.append(memory_item)
                placed = True
            reason = (
                f"replaced by the newer condensed memory {memory_item.id}"
                if item is previous
                else f"condensed by the model at turn {turn} into memory {memory_item.id}"
            )
            if item is previous:
                archive_item_text(store, item, item.text)
            states[item.id] = context.changed_state(item, "summarized", reason)
            continue
        new_items.append(item)
    context.replace(new_items, states=states)
    turns = [item.turn for item in leaving] or [turn]
    return Condensed(
        memory=memory_item,
        replaced=len(leaving),
        tokens_before=before,
        tokens_after=context.total_tokens(),
        first_turn=min(turns),
        last_turn=max(turns),
    )


def _is_decision(item: Item) -> bool:
    return isinstance(item, AssistantItem) and bool(item.tool_calls)


def _carried_lines(previous: NoticeItem | None, store: RunStore | None) -> list[str]:
    """Every exchange line of the previous memory: the archived full list when it had
    one, else the lines it showed."""
    if previous is None:
        return []
    listed = LISTED_AT.search(previous.text.splitlines()[0])
    if listed is not None and store is not None:
        full = store.archive_get(listed.group(1))
        if full is not None:
            return full.splitlines()
    return [line for line in previous.text.splitlines() if line.startswith("- ")]


def _memory_item(
    text: str,
    lines: list[str],
    leaving: list[Item],
    previous: NoticeItem | None,
    store: RunStore | None,
    *,
    task_id: str,
    turn: int,
) -> NoticeItem:
    """The memory: the model's JSON, then the harness's list of what it replaced (the
    newest :data:`LINES_KEPT` lines; the full list archived beside it)."""
    item = NoticeItem(text="", purpose="memory", task_id=task_id, turn=turn)
    header = f"{MEMORY_HEADING} at turn {turn}; it replaces {len(leaving)} earlier items"
    if previous is not None:
        header += " and the previous memory"
    shown = lines[-LINES_KEPT:] if store is not None else lines
    if len(lines) > len(shown):
        every = archive_item_text(store, item, "\n".join(lines), part="exchanges")
        header += f"; all {len(lines)} replaced exchanges are listed at {every}"
    body = [header + "]", text]
    if shown:
        body.append("Replaced exchanges (written by the harness; exact outputs by address):")
        body.extend(shown)
    return item.model_copy(update={"text": "\n".join(body)})
