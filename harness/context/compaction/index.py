"""The address index the harness writes into every checkpoint, whatever the summarizer did.

A checkpoint's note is the summarizer's work (a model, or the deterministic fallback) and
may drop any address. The index is the harness's own: every tool exchange a checkpoint
folds gets one line (task, turn, tool and compact arguments, outcome, and the
``archive://`` address of its exact output), so nothing folded is ever out of reach.

Lines are written to archived *pages* of at most :data:`PAGE_CHARS` characters, so one
``recall(address=page, limit=PAGE_CHARS)`` reads a whole page. The checkpoint lists every
page's address on one short line and shows the newest few exchanges inline. When more than
:data:`FANOUT` pages of one level exist, the oldest half of them are listed in one page of
the next level, so the section stays bounded while the session grows and the depth grows
only logarithmically: with these numbers a session of 3,000 exchanges is listed in pages
the checkpoint names directly, and any exchange's output is two ``recall`` calls away.

The index keeps no state of its own: the page list lives in the checkpoint's source
metadata and the pages in the archive, so a resumed session continues the same index and
a long session costs no memory per exchange.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.context.compaction.archive import RECALL_MAX_CHARS, archive_address, archive_item_text
from harness.context.compaction.turns import TASK_ENDING_PREFIX
from harness.messages import (
    AssistantItem,
    IndexPage,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    ToolCall,
    ToolResultItem,
)

if TYPE_CHECKING:
    from harness.protocols import RunStore

__all__ = [
    "FANOUT",
    "INDEX_HEADING",
    "INLINE_ENTRIES",
    "PAGE_CHARS",
    "AddressIndex",
    "IndexState",
    "exchange_line",
    "index_entries",
    "listed_lines",
]

PAGE_CHARS = RECALL_MAX_CHARS
"""A page is read whole by one ``recall`` with the largest limit it accepts."""
FANOUT = 40
"""Pages of one level the checkpoint lists before the oldest half move one level down."""
INLINE_ENTRIES = 10
"""The newest exchanges shown in the checkpoint itself (all of them are in pages too)."""
LINE_MAX_CHARS = 170
"""An entry line without its address; the address is never cut."""
ARGUMENTS_MAX_CHARS = 80
OUTCOME_MAX_CHARS = 70
ARCHIVE_ADDRESS = re.compile(r"archive://[^\s;,\])'\"]+")
INDEX_HEADING = "## Index of folded exchanges (written by the harness)"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 3)] + "..."


def _where(item: Item) -> str:
    return f"{item.task_id or 'session'} t{item.turn}"


def exchange_line(
    call: ToolCall | None,
    result: ToolResultItem,
    clean: Callable[[str], str],
    *,
    limit: int = LINE_MAX_CHARS,
    outcome_chars: int = OUTCOME_MAX_CHARS,
) -> str:
    """``- task t3 pick({"ref": "red_cube_1"}) -> ok: grasped; archive://task/call``."""
    if call is not None:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True, default=str)
        head = f"{result.name}({_one_line(clean(arguments), ARGUMENTS_MAX_CHARS)})"
    else:
        head = result.name
    if result.evaluation is not None:
        outcome = result.evaluation.status
        if result.evaluation.evidence:
            outcome += f" ({_one_line(clean(result.evaluation.evidence), outcome_chars)})"
    elif result.is_error:
        outcome = f"error {result.error_kind or ''}: {_one_line(clean(result.text), outcome_chars)}"
    else:
        outcome = f"ok: {_one_line(clean(result.text), outcome_chars)}"
    line = _one_line(f"- {_where(result)} {head} -> {outcome}", limit)
    return line + (f"; {result.archive}" if result.archive else "")


def index_entries(
    folded: Sequence[Item], *, store: RunStore | None, clean: Callable[[str], str]
) -> list[str]:
    """Entry lines for the tool exchanges among ``folded`` (and for any instruction,
    revision or final report folded with them, archived first so the line has an
    address)."""
    calls: dict[str, ToolCall] = {}
    entries: list[str] = []
    for item in folded:
        if isinstance(item, AssistantItem):
            for call in item.tool_calls:
                calls[call.id] = call
            if item.text and not item.tool_calls:
                entries.append(_prose_entry(item, "final report", item.text, store, clean))
        elif isinstance(item, ToolResultItem):
            entries.append(exchange_line(calls.get(item.call_id), item, clean))
        elif isinstance(item, (InstructionItem, RevisionItem)):
            label = "instruction" if isinstance(item, InstructionItem) else "revision"
            entries.append(_prose_entry(item, label, item.text, store, clean))
        elif isinstance(item, NoticeItem) and item.text.startswith(TASK_ENDING_PREFIX):
            entries.append(_prose_entry(item, "task ending", item.text, store, clean))
        elif isinstance(item, NoticeItem) and item.purpose in ("episode", "memory", "pinned"):
            entries.extend(listed_lines(item, store))
            entries.append(_prose_entry(item, item.purpose, item.text, store, clean))
    return entries


def listed_lines(item: NoticeItem, store: RunStore | None) -> list[str]:
    """The address lines of one of the harness's own lists (an archived episode's record,
    the model's memory, collapsed notes), with the lines of any full list it points to read
    back from the archive: folded into the index, each keeps the depth of a native entry."""
    lines = [line for line in item.text.splitlines() if line.startswith("- ") and "://" in line]
    found: list[str] = []
    for address in ARCHIVE_ADDRESS.findall(item.text):
        full = (
            store.archive_get(address)
            if store is not None and address.endswith(("/exchanges", "/lines"))
            else None
        )
        if full is None:
            continue
        found.extend(x for x in full.splitlines() if x.startswith("- ") and "://" in x)
        lines = [line for line in lines if address not in line]  # the pointer is expanded
    return list(dict.fromkeys([*lines, *found]))


def _prose_entry(
    item: Item, label: str, text: str, store: RunStore | None, clean: Callable[[str], str]
) -> str:
    address = getattr(item, "archive", None) or archive_item_text(store, item, text, "text")
    line = _one_line(f"- {_where(item)} {label}: {clean(text)}", LINE_MAX_CHARS)
    return line + (f"; {address}" if address else "")


@dataclass(frozen=True)
class IndexState:
    """What one checkpoint knows of its index (kept in its source metadata)."""

    pages: tuple[IndexPage, ...] = ()
    exchanges: int = 0
    unindexed: int = 0
    newest: tuple[str, ...] = field(default_factory=tuple)
    """The newest entry lines, shown inline."""

    def render(self) -> str:
        """The checkpoint's closing section (empty when nothing was ever indexed)."""
        if not self.exchanges and not self.newest:
            return ""
        lines = [INDEX_HEADING]
        indexed = self.exchanges - self.unindexed
        if self.pages:
            lines.append(
                f"{indexed} folded entries (exchanges, and any folded instructions or reports) "
                f"are listed in {len(self.pages)} archived page(s), oldest first; each line "
                "gives the archive:// address of the exact output. Read a page with "
                f"recall(address=<page>, limit={PAGE_CHARS}):"
            )
            lines.extend(_page_line(page) for page in self.pages)
        if self.unindexed:
            lines.append(
                f"{self.unindexed} older folded entries are not indexed: there was no run "
                "store to archive index pages in."
            )
        if self.newest:
            lines.append("Newest folded entries:")
            lines.extend(self.newest)
        return "\n".join(lines)


def _page_line(page: IndexPage) -> str:
    """``- t1-t100 (100): address`` (the task is in the address when there is only one)."""
    first_task, _, first_turn = page.first.rpartition(" ")
    last_task, _, last_turn = page.last.rpartition(" ")
    same = first_task == last_task and page.address.startswith(f"archive://{first_task}/")
    span = f"{first_turn}-{last_turn}" if same else f"{page.first} - {page.last}"
    what = f"{page.entries}" + (f" in {page.lines} pages" if page.level > 1 else "")
    return f"- {span} ({what}): {page.address}"


class AddressIndex:
    """Extends a checkpoint's index with the entries of a new fold (pure but for the
    archive writes of new pages)."""

    def __init__(
        self,
        store: RunStore | None,
        *,
        page_chars: int = PAGE_CHARS,
        fanout: int = FANOUT,
        inline: int = INLINE_ENTRIES,
    ) -> None:
        self.store = store
        self.page_chars = page_chars
        self.fanout = max(2, fanout)
        self.inline = inline

    def extend(
        self,
        previous: IndexState,
        entries: Sequence[str],
        *,
        task_id: str,
        key: str,
    ) -> IndexState:
        """The index after adding ``entries``; new pages are archived under
        ``archive://<task_id>/index_<key>_<n>``."""
        if self.store is None:
            newest = (*previous.newest, *entries)[-self.inline :]
            dropped = len(previous.newest) + len(entries) - len(newest)
            return IndexState(
                pages=previous.pages,
                exchanges=previous.exchanges + len(entries),
                unindexed=previous.unindexed + dropped,
                newest=tuple(newest),
            )
        pages = list(previous.pages)
        open_lines: list[str] = []
        if pages and pages[-1].level == 1 and pages[-1].chars < self.page_chars * 9 // 10:
            reopened = self._read_lines(pages[-1])
            if reopened is not None:
                open_lines = reopened
                pages.pop()
        lines = [*open_lines, *entries]
        counter = _Counter(task_id, key)
        chunk: list[str] = []
        size = 0
        for line in lines:
            if chunk and size + len(line) + 1 > self.page_chars - HEADER_ROOM:
                pages.append(self._write(chunk, level=1, counter=counter, entries=len(chunk)))
                chunk, size = [], 0
            chunk.append(line)
            size += len(line) + 1
        if chunk:
            pages.append(self._write(chunk, level=1, counter=counter, entries=len(chunk)))
        pages = self._nest(pages, counter)
        return IndexState(
            pages=tuple(pages),
            exchanges=previous.exchanges + len(entries),
            unindexed=previous.unindexed,
            newest=tuple(lines[-self.inline :]) if self.inline else (),
        )

    # ------------------------------------------------------------------ pages

    def _read_lines(self, page: IndexPage) -> list[str] | None:
        assert self.store is not None
        text = self.store.archive_get(page.address)
        if text is None:
            return None
        return [line for line in text.split("\n")[1:] if line.startswith("- ")]

    def _write(
        self,
        lines: list[str],
        *,
        level: int,
        counter: _Counter,
        entries: int,
        span: tuple[str, str] | None = None,
    ) -> IndexPage:
        assert self.store is not None
        first, last = span or (_where_of(lines[0]), _where_of(lines[-1]))
        if level == 1:
            header = (
                f"[Index page written by the harness: {len(lines)} folded entries, {first} to "
                f"{last}, oldest first. Each line: task, turn, tool(arguments) -> outcome; "
                "the archive:// address of the exact output, read with recall.]"
            )
        else:
            header = (
                f"[Index of index pages written by the harness: {len(lines)} pages covering "
                f"{entries} folded entries, {first} to {last}, oldest first. Read a page with "
                f"recall(address=<page>, limit={self.page_chars}).]"
            )
        text = "\n".join([header, *lines])
        address = counter.next()
        self.store.archive_put(
            address, text, task_id=counter.task_id, call_id=counter.key, tool="index"
        )
        return IndexPage(
            address=address,
            level=level,
            entries=entries,
            lines=len(lines),
            chars=len(text),
            first=first,
            last=last,
        )

    def _nest(self, pages: list[IndexPage], counter: _Counter) -> list[IndexPage]:
        """While one level lists more than ``fanout`` pages, the oldest half of them move
        into one page of the next level. Pages stay oldest first, so the pages of a higher
        level always come before those of a lower one."""
        level = 1
        top = max((page.level for page in pages), default=0)
        while level <= top:
            at_level = [index for index, page in enumerate(pages) if page.level == level]
            if len(at_level) <= self.fanout:
                level += 1
                continue
            group = at_level[: self.fanout // 2]
            members = [pages[index] for index in group]
            nested = self._write(
                [_page_line(page) for page in members],
                level=level + 1,
                counter=counter,
                entries=sum(page.entries for page in members),
                span=(members[0].first, members[-1].last),
            )
            pages = [*pages[: group[0]], nested, *pages[group[-1] + 1 :]]
            top = max(top, level + 1)
        return pages


HEADER_ROOM = 400
"""Characters of a page kept for its header line."""


class _Counter:
    def __init__(self, task_id: str, key: str) -> None:
        self.task_id = task_id
        self.key = key
        self.count = 0

    def next(self) -> str:
        self.count += 1
        return archive_address(self.task_id, f"index_{self.key}_{self.count}")


def _where_of(line: str) -> str:
    """``task t<turn>`` of an entry line (``- task t12 tool(...) -> ...``)."""
    return " ".join(line[2:].split(" ", 2)[:2])
