"""After the provider rejected a request as too large: the later steps of the recovery ladder.

The runtime (:mod:`harness.runtime.phases.decide`) climbs the ladder one step per overflow:

1. a forced compaction (``Compactor.compact(force=True)``) and one resend;
2. :data:`REFERENCE`: every body outside the newest exchange becomes a reference to its
   archived original (tool outputs, long model texts and unsigned reasoning, earlier
   tasks' prose); superseded Task Notes snapshots leave;
3. :data:`MINIMAL`: the newest exchange too; the checkpoint keeps its header and the
   index's page addresses, its note archived; the instruction becomes a short
   authoritative reference;
4. then the provider's error ends the task, with the numbers.

Every rewrite goes through ``Context.replace`` with a new item id and a state saying why;
every original stays readable in the archive. The current Task Notes snapshot is never
touched. Without a run store nothing can be archived, so nothing but tool outputs (which
the loop archived already) is shortened.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from harness.context.compaction.archive import archive_item_text
from harness.context.compaction.checkpoint import HEADER_PREFIX
from harness.context.compaction.index import IndexState
from harness.context.compaction.turns import current_notes_id, current_task_id
from harness.context.eviction.pruning import latest_exchange_ids, pruned_reference
from harness.context.instructions import MINIMAL_INSTRUCTION_CHARS, bound_instruction
from harness.context.model import Context, ItemState, bounded_text, redacted_by
from harness.events import CompactionEvent
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    TaskNotesItem,
    ToolResultItem,
    new_id,
)

if TYPE_CHECKING:
    from harness.protocols import RunStore

__all__ = ["MINIMAL", "REFERENCE", "OverflowStep", "reference_bodies"]

OverflowStep = Literal["reference", "minimal_reference"]
REFERENCE: OverflowStep = "reference"
MINIMAL: OverflowStep = "minimal_reference"
TEXT_KEPT_CHARS = 300
"""Model texts, notices and earlier tasks' prose are cut to about this much."""
ENDED_PROSE_CHARS = 400


def reference_bodies(
    context: Context, store: RunStore | None, *, step: OverflowStep, reason: str
) -> Iterator[CompactionEvent]:
    """Rewrite Accumulated for ``step`` of the ladder (see the module docstring)."""
    started = time.monotonic()
    before = context.total_tokens()
    items = context.accumulated
    minimal = step == MINIMAL
    newest = set() if minimal else latest_exchange_ids(list(items))
    notes_id = current_notes_id(items)
    running = current_task_id(items)
    why = f"provider overflow ({reason}): {step.replace('_', ' ')} request"
    new_items: list[Item] = []
    states: dict[str, ItemState] = {}
    for item in items:
        if item.id in newest or item.id == notes_id:
            new_items.append(item)
            continue
        if isinstance(item, TaskNotesItem):
            address = archive_item_text(store, item, item.text)
            if address is None:
                new_items.append(item)
                continue
            states[item.id] = context.changed_state(
                item, "pruned", f"{why}: superseded Task Notes left the context ({address})"
            )
            continue
        replacement = _rewritten(item, store, minimal=minimal, running=running)
        if replacement is None:
            new_items.append(item)
            continue
        new_items.append(replacement)
        status = "pruned" if isinstance(item, (ToolResultItem, CheckpointItem)) else "shrunk"
        states[item.id] = context.changed_state(
            item, status, f"{why}; now {replacement.id}", replaced_by=replacement.id
        )
        states[replacement.id] = context.changed_state(item, status, f"{why} (replaces {item.id})")
    if not states:
        return
    context.replace(new_items, states=states)
    yield CompactionEvent(
        status="completed",
        mode=step,
        reason=f"{why}: {len([s for s in states.values() if s.replaced_by])} item(s) now "
        f"references, {len(items) - len(new_items)} superseded snapshot(s) left",
        tokens_before=before,
        tokens_after=context.total_tokens(),
        items_retained=len(new_items),
        duration_s=round(time.monotonic() - started, 6),
    )


def _rewritten(
    item: Item, store: RunStore | None, *, minimal: bool, running: str | None
) -> Item | None:
    """The reference standing in for ``item``, or None to keep it as it is."""
    update: dict[str, Any] = {}
    if isinstance(item, ToolResultItem):
        reference = pruned_reference(item)
        if item.archive and len(reference) < len(item.text):
            update["text"] = reference
    elif isinstance(item, (InstructionItem, RevisionItem)):
        if item.task_id == running and not minimal:
            return None  # already bounded when it was recorded
        limit = MINIMAL_INSTRUCTION_CHARS if item.task_id == running else ENDED_PROSE_CHARS
        bounded = bound_instruction(item, store=store, max_chars=limit)
        if bounded is not item:
            update = {"text": bounded.text, "archive": bounded.archive}
    elif isinstance(item, AssistantItem):
        update = _assistant_update(item, store)
    elif isinstance(item, NoticeItem):
        update = _cut(item, item.text, store, "text", TEXT_KEPT_CHARS)
    elif isinstance(item, CheckpointItem) and minimal:
        address = archive_item_text(store, item, item.text)
        if address is not None:
            header = item.text.split("\n", 1)[0] if item.text.startswith(HEADER_PREFIX) else ""
            source = item.source
            index = IndexState(
                pages=tuple(source.index), exchanges=source.exchanges, unindexed=source.unindexed
            ).render()
            note = f"[Its note is archived at {address}: read it with recall(address={address!r}).]"
            text = "\n".join(part for part in (header, note, index) if part)
            if len(text) < len(item.text):
                update["text"] = text
    if not update:
        return None
    return item.model_copy(update={**update, "id": new_id("item")})


def _cut(item: Item, text: str, store: RunStore | None, part: str, limit: int) -> dict[str, Any]:
    if len(text) <= limit:
        return {}
    address = archive_item_text(store, item, text, part)
    if address is None:
        return {}
    return {"text": bounded_text(redacted_by(store, text), limit, address=address)[0]}


def _assistant_update(item: AssistantItem, store: RunStore | None) -> dict[str, Any]:
    update = _cut(item, item.text, store, "text", TEXT_KEPT_CHARS)
    blocks = []
    for index, block in enumerate(item.reasoning):
        shortened = None
        if block.signature is None and block.redacted is None:
            shortened = _cut(item, block.text, store, f"reasoning{index}", TEXT_KEPT_CHARS)
        blocks.append(block.model_copy(update=shortened) if shortened else block)
    if any(a is not b for a, b in zip(blocks, item.reasoning, strict=True)):
        update["reasoning"] = blocks
    return update
