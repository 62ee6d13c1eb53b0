"""The context's token accounting: the cached estimate of every Accumulated item, the size
of each section of the next request (Resident, tools, Accumulated, Refreshed, images), and
their sum, the one number the prompt snapshot, the compaction trigger, pruning and every
budget check read.

:class:`~harness.context.model.Context` inherits :class:`ContextSizes`; it lives apart so
the context model reads as the three lifetimes and their assembly. The attributes
declared on the class are set by ``Context.__init__``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    NoticeItem,
    RefreshedBlock,
    RevisionItem,
    SystemBlock,
    TaskNotesItem,
    ToolResultItem,
)

if TYPE_CHECKING:
    from harness.context.model import Context, TransientParts
    from harness.tokens import TokenEstimator

__all__ = ["ITEM_OVERHEAD_TOKENS", "ContextSizes"]

ITEM_OVERHEAD_TOKENS = 4
"""Per-message framing tokens (role markers and separators) added by every provider."""


class ContextSizes:
    """Token estimates of the context, item by item and section by section (see the module
    docstring)."""

    estimator: TokenEstimator
    parent: Context | None
    refreshed: RefreshedBlock
    images_visible: bool
    _resident: dict[str, SystemBlock]
    _resident_tokens: int | None
    _tools_tokens: int
    _accumulated_raw: int
    _item_tokens: dict[str, int]
    _transient: TransientParts
    _merged_resident: Callable[[], dict[str, SystemBlock]]

    def item_tokens(self, item: Item) -> int:
        """Raw (uncalibrated) text estimate of one item, cached by item id."""
        cached = self._item_tokens.get(item.id)
        if cached is None:
            cached = self._estimate_item(item) + ITEM_OVERHEAD_TOKENS
            self._item_tokens[item.id] = cached
        return cached

    def _estimate_item(self, item: Item) -> int:
        est = self.estimator
        if isinstance(item, AssistantItem):
            total = est.text(item.text)
            total += sum(
                est.text(r.text) + est.text(r.signature or "") + est.text(r.redacted or "")
                for r in item.reasoning
            )
            total += sum(est.text(c.name) + est.json(c.arguments) + 8 for c in item.tool_calls)
            return total
        if isinstance(item, ToolResultItem):
            total = est.text(item.text) + est.text(item.name) + 8
            total += sum(est.text(ref.placeholder()) for ref in item.images)
            if item.evaluation is not None:
                total += est.text(item.evaluation.evidence) + 4
            return total
        if isinstance(item, InstructionItem):
            return est.text(item.text) + sum(est.text(ref.placeholder()) for ref in item.images)
        if isinstance(item, (RevisionItem, TaskNotesItem, NoticeItem, CheckpointItem)):
            return est.text(item.text) + 8
        raise TypeError(f"unknown item kind {type(item).__name__}")

    def resident_tokens(self) -> int:
        if self.parent is not None:  # the parent's blocks may change: never cached here
            return sum(
                self.estimator.text(block.text) + ITEM_OVERHEAD_TOKENS
                for block in self._merged_resident().values()
            )
        if self._resident_tokens is None:
            self._resident_tokens = sum(
                self.estimator.text(block.text) + ITEM_OVERHEAD_TOKENS
                for block in self._resident.values()
            )
        return self._resident_tokens

    def tools_tokens(self) -> int:
        return self._tools_tokens

    def accumulated_tokens(self, items: Iterable[Item] | None = None) -> int:
        """Raw tokens of Accumulated (a running total), or of the given items."""
        if items is None:
            return self._accumulated_raw
        return sum(self.item_tokens(item) for item in items)

    def refreshed_tokens(self) -> tuple[int, int]:
        """(text tokens, image tokens) of what Refreshed will carry on the next call."""
        text = self.estimator.text(self.refreshed.text()) + ITEM_OVERHEAD_TOKENS
        if not self.images_visible:  # the adapter sends a one-line caption instead
            return text, 0
        images = self.refreshed.images + self._transient.images
        return text, sum(self.estimator.image(i.width, i.height) for i in images)

    def sections(self, *, accumulated: Iterable[Item] | None = None) -> dict[str, int]:
        """Calibrated token estimate per section of the next request."""
        cal = self.estimator.calibrated
        refreshed_text, image_tokens = self.refreshed_tokens()
        return {
            "resident": cal(self.resident_tokens()),
            "tools": cal(self.tools_tokens()),
            "accumulated": cal(self.accumulated_tokens(accumulated)),
            "refreshed": cal(refreshed_text),
            "images": image_tokens,
        }

    def total_tokens(self, *, accumulated: Iterable[Item] | None = None) -> int:
        """Estimated size of the next request, optionally with a different Accumulated.

        The sum of :meth:`sections`: the prompt snapshot, the compaction trigger, pruning
        and every budget check read this one number, so they cannot disagree.
        """
        return sum(self.sections(accumulated=accumulated).values())

    def fixed_tokens(self) -> int:
        """Everything but Accumulated: what compaction can never reduce."""
        return self.total_tokens(accumulated=())
