"""Addresses in the observation archive, for text the compactor shortens.

The loop archives every tool output at ``archive://<task_id>/<call_id>`` before recording
it. When the compactor shortens anything else the model saw (reasoning, a long
instruction, an old Task Notes snapshot, a checkpoint), it first archives the exact text
under the item's own address, so every marker it writes points at something ``recall``
can read back exactly.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from harness.messages import AssistantItem, Item, ToolResultItem

if TYPE_CHECKING:
    from harness.protocols import RunStore

__all__ = [
    "RECALL_MAX_CHARS",
    "ArchiveQuery",
    "archive_address",
    "archive_hit",
    "archive_item_text",
    "archive_prose",
    "find_in_text",
    "item_address",
    "matches_terms",
    "query_terms",
]

RECALL_MAX_CHARS = 20_000
"""The most characters one ``recall`` returns (its ``limit`` is capped here)."""


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


def archive_prose(store: RunStore | None, item: Item) -> None:
    """Archive what an item said before it leaves the working set whole (a decision's
    text and reasoning, a note), so ``recall`` reads it back; a tool output already is."""
    if isinstance(item, AssistantItem):
        if item.text or item.reasoning:
            text = item.text + "".join(f"\n[reasoning] {r.text}" for r in item.reasoning if r.text)
            archive_item_text(store, item, text)
    elif not isinstance(item, ToolResultItem):
        archive_item_text(store, item, getattr(item, "text", "") or "")


SNIPPET_CONTEXT_CHARS = 90
"""Characters shown on each side of the first match in a search hit."""


def find_in_text(text: str, query: str) -> tuple[int, str]:
    """Case-insensitive matches of ``query`` in ``text``: (count, snippet around the first).

    Used by the run stores' ``archive_search``; the snippet is one line, so a hit list
    stays compact in context.
    """
    return _find(text, text.lower(), query.lower())


def _find(text: str, haystack: str, needle: str) -> tuple[int, str]:
    """:func:`find_in_text` with ``text`` and the query already lower-cased."""
    first = haystack.find(needle)
    if first < 0 or not needle:
        return 0, ""
    count = haystack.count(needle)
    start = max(0, first - SNIPPET_CONTEXT_CHARS)
    end = min(len(text), first + len(needle) + SNIPPET_CONTEXT_CHARS)
    snippet = " ".join(text[start:end].split())
    return count, ("..." if start else "") + snippet + ("..." if end < len(text) else "")


_TERM = re.compile(r"[^\s=(),:;{}\[\]\"'`]+")
SHORT_TERM_CHARS = 3
"""Query words shorter than this (``7``, ``x``) only match a whole word of the tool name or
arguments: inside an output they would match almost anything."""


def query_terms(text: str) -> list[str]:
    """The lower-case words of a query or a call label (``pick({"ref": "cube_1"})`` ->
    ``pick``, ``ref``, ``cube_1``)."""
    return [term.strip(".-").lower() for term in _TERM.findall(text) if term.strip(".-")]


def matches_terms(query: str, *, label: str, text: str) -> bool:
    """Does every word of ``query`` occur in the call's ``label`` (tool name and
    arguments) or, for words of :data:`SHORT_TERM_CHARS` or more, in its output ``text``?

    This is how ``search_archive`` finds an exchange the model can name but not quote:
    "read_sensor_log index 7" matches ``read_sensor_log({"index": 7})``.
    """
    return _matches(query_terms(query), label, text.lower())


def _matches(terms: list[str], label: str, lowered: str) -> bool:
    """:func:`matches_terms` with the query's words and the output lower-cased."""
    if not terms:
        return False
    words = set(query_terms(label))
    for term in terms:
        if term in words:
            continue
        if len(term) >= SHORT_TERM_CHARS and (
            any(term in word for word in words) or term in lowered
        ):
            continue
        return False
    return True


def archive_hit(query: str, *, tool: str, arguments: str, text: str) -> tuple[int, str] | None:
    """(matches, snippet) when an archived output matches ``query``: as a phrase in its text
    (``find_in_text``), or word by word over its tool, arguments and text
    (:func:`matches_terms`); None otherwise."""
    return ArchiveQuery(query).hit(tool=tool, arguments=arguments, text=text)


class ArchiveQuery:
    """A search's query, prepared once for the many outputs it is tried on: its lower-cased
    phrase and its words (:func:`archive_hit` computed both again for every archived
    output, and lowered each output twice)."""

    __slots__ = ("needle", "terms")

    def __init__(self, query: str) -> None:
        self.needle = query.lower()
        self.terms = query_terms(query)

    def hit(self, *, tool: str, arguments: str, text: str) -> tuple[int, str] | None:
        """:func:`archive_hit` of this query."""
        lowered = text.lower()
        count, snippet = _find(text, lowered, self.needle)
        if count:
            return count, snippet
        label = f"{tool} {arguments}".strip()
        if not _matches(self.terms, label, lowered):
            return None
        head = " ".join(text[: SNIPPET_CONTEXT_CHARS * 2].split())
        more = "..." if len(text) > SNIPPET_CONTEXT_CHARS * 2 else ""
        return 1, f"{tool}({arguments}): {head}{more}"
