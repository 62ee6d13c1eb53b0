"""Keeping Accumulated context within the model's input budget.

``build_compactor`` is the one place the configured compactor is chosen.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.errors import ContextBudgetError
from harness.events import CompactionEvent

if TYPE_CHECKING:
    from harness.config import HarnessConfig
    from harness.context import Context

__all__ = ["NoCompaction", "build_compactor"]


class NoCompaction:
    """Compaction switched off (``context.compaction.enabled: false``).

    Nothing is folded; a request that would not fit ends the task with a named error
    instead of being sent to overflow at the provider.
    """

    def compact(
        self, context: Context, *, force: bool = False, reason: str = ""
    ) -> Iterator[CompactionEvent]:
        total = context.total_tokens()
        if total > context.budget.context_window:
            raise ContextBudgetError(
                f"the request needs about {total} tokens, more than the "
                f"{context.budget.context_window}-token window, and compaction is disabled "
                "(context.compaction.enabled: false)"
            )
        yield from ()


def build_compactor(config: HarnessConfig, *, summarizer: Any, store: Any) -> NoCompaction:
    return NoCompaction()
