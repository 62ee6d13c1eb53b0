"""The context's token accounting: the cached estimate of every Accumulated item, the size
of each section of the next request (Resident, tools, Accumulated, Refreshed, images), and
their sum, the one number the prompt snapshot, the compaction trigger, pruning and every
budget check read.

A :class:`~harness.context.model.Context` owns one :class:`ContextSizes` (``sizes``) and
tells it what changed; it lives apart so the context model reads as the three lifetimes
and their assembly. It reads the context through its public surface only
(:class:`Measured`: estimator, parent, Resident blocks, Refreshed block, transient images,
``images_visible``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    TaskNotesItem,
    ToolResultItem,
    ToolSpec,
)

if TYPE_CHECKING:
    from harness.messages import ImagePart, RefreshedBlock, SystemBlock
    from harness.tokens import TokenEstimator

__all__ = ["ITEM_OVERHEAD_TOKENS", "ContextSizes", "Measured"]


class Measured(Protocol):
    """What :class:`ContextSizes` reads of the context it measures (a
    :class:`~harness.context.model.Context`), so this module needs nothing of the model."""

    estimator: TokenEstimator
    refreshed: RefreshedBlock
    images_visible: bool

    @property
    def parent(self) -> object | None: ...

    @property
    def transient_images(self) -> list[ImagePart]: ...

    def resident_blocks(self) -> list[SystemBlock]: ...


ITEM_OVERHEAD_TOKENS = 4
"""Per-message framing tokens (role markers and separators) added by every provider."""


class ContextSizes:
    """Token estimates of one context, item by item and section by section (see the module
    docstring)."""

    def __init__(self, context: Measured) -> None:
        self._context = context
        self._item_tokens: dict[str, int] = {}
        self._resident_tokens: int | None = None
        self._tools_tokens = 0
        self._accumulated_raw = 0
        """Running sum of item_tokens over Accumulated: per-turn cost stays flat."""

    # ------------------------------------------------------------------ changes

    def resident_changed(self) -> None:
        """A Resident block of the context's own was set or removed."""
        self._resident_tokens = None

    def tools_set(self, specs: Sequence[ToolSpec]) -> None:
        est = self._context.estimator
        self._tools_tokens = sum(
            est.text(spec.name)
            + est.text(spec.description)
            + est.json(spec.parameters)
            + ITEM_OVERHEAD_TOKENS
            for spec in specs
        )

    def appended(self, item: Item) -> int:
        """``item`` joined Accumulated; its estimate."""
        tokens = self.item_tokens(item)
        self._accumulated_raw += tokens
        return tokens

    def recount(self, items: Iterable[Item]) -> None:
        """Accumulated is now ``items``."""
        self._accumulated_raw = sum(self.item_tokens(item) for item in items)

    def retired(self, item: Item) -> None:
        """``item`` left Accumulated: its cached estimate goes."""
        self._item_tokens.pop(item.id, None)

    @property
    def cached_items(self) -> int:
        """How many item estimates are cached (bounded by what is in Accumulated)."""
        return len(self._item_tokens)

    # ------------------------------------------------------------------ sizes

    def item_tokens(self, item: Item) -> int:
        """Raw (uncalibrated) text estimate of one item, cached by item id."""
        cached = self._item_tokens.get(item.id)
        if cached is None:
            cached = self._estimate_item(item) + ITEM_OVERHEAD_TOKENS
            self._item_tokens[item.id] = cached
        return cached

    def _estimate_item(self, item: Item) -> int:
        est = self._context.estimator
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
        context = self._context
        if context.parent is not None:  # the parent's blocks may change: never cached here
            return sum(
                context.estimator.text(block.text) + ITEM_OVERHEAD_TOKENS
                for block in context.resident_blocks()
            )
        if self._resident_tokens is None:
            self._resident_tokens = sum(
                context.estimator.text(block.text) + ITEM_OVERHEAD_TOKENS
                for block in context.resident_blocks()
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
        context = self._context
        text = context.estimator.text(context.refreshed.text()) + ITEM_OVERHEAD_TOKENS
        if not context.images_visible:  # the adapter sends a one-line caption instead
            return text, 0
        images = context.refreshed.images + context.transient_images
        return text, sum(context.estimator.image(i.width, i.height) for i in images)

    def sections(self, *, accumulated: Iterable[Item] | None = None) -> dict[str, int]:
        """Calibrated token estimate per section of the next request."""
        cal = self._context.estimator.calibrated
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
