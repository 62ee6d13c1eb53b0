"""The operator's words are never folded; an oversized one becomes an authoritative reference.

A task's instruction and its revisions stay in Accumulated context verbatim for the whole
task (:func:`harness.context.compaction.turns.protected_items`). One too large to carry on every
request is archived exactly and enters the context as a bounded reference: a notice that
it is the operator's complete instruction, its beginning and end, and the address where
``recall`` reads all of it. Nothing of it is ever summarized.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.context.compaction.archive import archive_address
from harness.context.model import Budget, bounded_text, redacted_by
from harness.messages import InstructionItem, RevisionItem

if TYPE_CHECKING:
    from harness.protocols import RunStore

__all__ = [
    "INSTRUCTION_SHARE",
    "MINIMAL_INSTRUCTION_CHARS",
    "authoritative_reference",
    "bound_instruction",
    "instruction_limit_chars",
]

INSTRUCTION_SHARE = 0.125
"""An instruction may take this share of the input budget before it becomes a reference."""
CHARS_PER_TOKEN = 4
MIN_INSTRUCTION_CHARS = 2000
MINIMAL_INSTRUCTION_CHARS = 1200
"""The bound of the minimal-reference request after repeated provider overflows."""


def instruction_limit_chars(budget: Budget) -> int:
    """The longest instruction (in characters) carried verbatim under ``budget``."""
    return max(MIN_INSTRUCTION_CHARS, int(budget.threshold * INSTRUCTION_SHARE) * CHARS_PER_TOKEN)


def authoritative_reference(text: str, *, address: str, max_chars: int, what: str) -> str:
    """``text`` as a bounded reference that says it is authoritative and where it is whole."""
    head = (
        f"[The operator's {what} is {len(text)} characters, too long to repeat on every "
        f"request. It is authoritative and kept exactly at {address}; its beginning and end "
        f"follow. Read any part with recall(address={address!r}, offset=..., limit=...).]\n"
    )
    body, _ = bounded_text(text, max(200, max_chars - len(head)), address=address)
    return head + body


def bound_instruction(
    item: InstructionItem | RevisionItem, *, store: RunStore | None, max_chars: int
) -> InstructionItem | RevisionItem:
    """``item`` itself when it fits ``max_chars``; else a copy whose text is the
    authoritative reference (the exact text archived first). Without a store to keep the
    exact text, the item stays whole: losing the operator's words is never an option."""
    exact = item.text
    if len(exact) <= max_chars or store is None:
        return item
    address = item.archive or archive_address(item.task_id, f"{item.id}/text")
    if store.archive_get(address) is None:
        store.archive_put(address, exact, task_id=item.task_id, call_id=item.id, tool=item.kind)
    what = "instruction" if isinstance(item, InstructionItem) else "instruction revision"
    if item.archive is not None:  # already a reference: read the exact text back
        exact = store.archive_get(address) or exact
    exact = redacted_by(store, exact)  # before the bound: it must not cut a secret in two
    text = authoritative_reference(exact, address=address, max_chars=max_chars, what=what)
    if len(text) >= len(item.text):
        return item
    return item.model_copy(update={"text": text, "archive": address})
