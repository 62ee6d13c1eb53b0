"""The last step before giving up: oversized retained items cut in place to head+tail.

When even the retained turns do not fit the input budget, each oversized item (largest
first, never the current Task Notes) is replaced by a copy whose long texts keep their
beginning and end, with the ``archive://`` address of the exact original between them.
Signed or encrypted reasoning is never edited: providers reject altered blocks. An
instruction or revision is never cut like the rest: only one longer than the instruction
limit becomes its authoritative reference (:mod:`harness.context.instructions`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.context.compaction.archive import archive_item_text
from harness.context.instructions import bound_instruction, instruction_limit_chars
from harness.context.model import Context, ItemState, bounded_text, redacted_by
from harness.events import CompactionEvent
from harness.messages import (
    AssistantItem,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    TaskNotesItem,
    ToolResultItem,
    new_id,
)

if TYPE_CHECKING:
    from harness.config import CompactionConfig
    from harness.protocols import RunStore

__all__ = ["shrink_oversized", "shrunk_copy"]


def shrink_oversized(
    store: RunStore | None,
    config: CompactionConfig,
    context: Context,
    started: float,
    *,
    target: int,
) -> Iterator[CompactionEvent]:
    """Cut oversized retained items to head+tail, largest first, until the request is
    under ``target`` tokens."""
    before = context.total_tokens()
    notes = context.latest_task_notes()
    pinned = notes.id if notes is not None else None
    order = sorted(
        (item for item in context.accumulated if item.id != pinned),
        key=context.item_tokens,
        reverse=True,
    )
    items = list(context.accumulated)
    states: dict[str, ItemState] = {}
    total = before
    for original in order:
        if total < target:
            break
        shrunk, address = shrunk_copy(
            store, config, original, instruction_chars=instruction_limit_chars(context.budget)
        )
        if shrunk is None:
            continue
        items[items.index(original)] = shrunk
        total = context.total_tokens(accumulated=items)
        reason = f"cut to head+tail to fit the input budget; exact original: {address}"
        states[original.id] = context.changed_state(
            original, "shrunk", f"{reason}; now {shrunk.id}", replaced_by=shrunk.id
        )
        states[shrunk.id] = context.changed_state(
            original, "shrunk", f"{reason} (replaces {original.id})"
        )
    if not states:
        return
    context.replace(items, states=states)
    yield CompactionEvent(
        status="completed",
        mode="shrink",
        reason=f"{len(states) // 2} oversized retained item(s) cut to head+tail",
        tokens_before=before,
        tokens_after=context.total_tokens(),
        items_retained=len(items),
        duration_s=round(time.monotonic() - started, 4),
    )


def shrunk_copy(
    store: RunStore | None,
    config: CompactionConfig,
    item: Item,
    *,
    instruction_chars: int,
) -> tuple[Item | None, str | None]:
    """A head+tail copy (new id) of an oversized item, or (None, None) if not possible.

    Signed or encrypted reasoning is never edited: providers reject altered blocks.
    """
    if isinstance(item, (InstructionItem, RevisionItem)):
        bounded = bound_instruction(item, store=store, max_chars=instruction_chars)
        if bounded is item:
            return None, None
        return bounded.model_copy(update={"id": new_id("item")}), bounded.archive
    cfg = config
    text_limit = cfg.tool_result_max_chars
    update: dict[str, Any] = {}
    addresses: list[str] = []

    def cut(text: str, limit: int, part: str) -> str | None:
        if len(text) <= limit:
            return None
        address = archive_item_text(store, item, text, part)
        if address is None:
            return None
        addresses.append(address)
        return bounded_text(redacted_by(store, text), limit, address=address)[0]

    if isinstance(item, (ToolResultItem, NoticeItem, TaskNotesItem)):
        text = cut(item.text, text_limit, "")
        if text is not None:
            update["text"] = text
    elif isinstance(item, AssistantItem):
        text = cut(item.text, text_limit, "text")
        if text is not None:
            update["text"] = text
        blocks = []
        for index, block in enumerate(item.reasoning):
            shortened = None
            if block.signature is None and block.redacted is None:
                shortened = cut(block.text, cfg.reasoning_max_chars, f"reasoning{index}")
            blocks.append(
                block if shortened is None else block.model_copy(update={"text": shortened})
            )
        if any(a is not b for a, b in zip(blocks, item.reasoning, strict=True)):
            update["reasoning"] = blocks
    if not update:
        return None, None
    update["id"] = new_id("item")
    return item.model_copy(update=update), ", ".join(addresses)
