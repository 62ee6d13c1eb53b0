"""The compactor used when checkpoint compaction is switched off."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from harness.context.eviction.pruning import Pruner
from harness.context.model import Context
from harness.errors import ContextBudgetError
from harness.events import CompactionEvent

__all__ = ["NoCompaction"]


class NoCompaction:
    """Checkpoint compaction switched off (``context.compaction.enabled: false``).

    Nothing is folded (pruning still runs if ``context.pruning`` enables it); a request that
    would not fit ends the task with a named error instead of overflowing at the provider.
    """

    def __init__(self, pruner: Pruner | None = None) -> None:
        self.pruner = pruner

    def compact(
        self,
        context: Context,
        *,
        force: bool = False,
        reason: str = "",
        cancelled: Callable[[], bool] | None = None,
    ) -> Iterator[CompactionEvent]:
        pruned = False
        if self.pruner is not None:
            for event in self.pruner.run(context):
                pruned = True
                yield event
        total = context.total_tokens()
        if total > context.budget.context_window or (force and not pruned):
            raise ContextBudgetError(
                f"the request needs about {total} tokens"
                + (f" and the provider reported an overflow ({reason})" if force else "")
                + f"; the window is {context.budget.context_window} tokens and compaction is "
                "disabled (context.compaction.enabled: false)"
            )
