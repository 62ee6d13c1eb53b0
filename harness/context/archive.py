"""Addresses in the observation archive, for text the compactor shortens.

The loop archives every tool output at ``archive://<task_id>/<call_id>`` before recording
it. When the compactor shortens anything else the model saw (reasoning, a long
instruction, an old Task Notes snapshot, a checkpoint), it first archives the exact text
under the item's own address, so every marker it writes points at something ``recall``
can read back exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.messages import Item, ToolResultItem

if TYPE_CHECKING:
    from harness.protocols import RunStore

__all__ = ["archive_address", "archive_item_text", "find_in_text", "item_address"]


def archive_address(task_id: str, key: str) -> str:
    """``archive://<task>/<key>``: a tool call's exact output (key = call id) or an item's
    archived text (key = item id)."""
    return f"archive://{task_id or 'session'}/{key}"


def item_address(item: Item, part: str = "") -> str:
    """The stable archive address of one item (or one named part of it)."""
    if isinstance(item, ToolResultItem) and item.archive and not part:
        return item.archive
    return archive_address(item.task_id, item.id) + (f"/{part}" if part else "")


def archive_item_text(store: RunStore | None, item: Item, text: str, part: str = "") -> str | None:
    """Archive ``text`` (exactly) under the item's address; returns the address.

    A tool result's own archive (written by the loop) is reused as is. Returns None when
    there is no store to keep the text, in which case callers must not shorten it.
    """
    address = item_address(item, part)
    if isinstance(item, ToolResultItem) and item.archive and not part:
        return address
    if store is None:
        return None
    if store.archive_get(address) is None:
        tool = item.name if isinstance(item, ToolResultItem) else item.kind
        store.archive_put(address, text, task_id=item.task_id, call_id=item.id, tool=tool)
    return address


SNIPPET_CONTEXT_CHARS = 90
"""Characters shown on each side of the first match in a search hit."""


def find_in_text(text: str, query: str) -> tuple[int, str]:
    """Case-insensitive matches of ``query`` in ``text``: (count, snippet around the first).

    Used by the run stores' ``archive_search``; the snippet is one line, so a hit list
    stays compact in context.
    """
    haystack, needle = text.lower(), query.lower()
    first = haystack.find(needle)
    if first < 0 or not needle:
        return 0, ""
    count = haystack.count(needle)
    start = max(0, first - SNIPPET_CONTEXT_CHARS)
    end = min(len(text), first + len(needle) + SNIPPET_CONTEXT_CHARS)
    snippet = " ".join(text[start:end].split())
    return count, ("..." if start else "") + snippet + ("..." if end < len(text) else "")
