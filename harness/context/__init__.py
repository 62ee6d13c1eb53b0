"""The context model and everything that keeps it within the model's window.

- :mod:`~harness.context.model`: the three lifetimes (Resident, Accumulated, Refreshed)
  and request assembly;
- :mod:`~harness.context.archive`: archive addresses and the text an archived item stands for;
- :mod:`~harness.context.turns`: reading Accumulated as whole turns, planning a fold;
- :mod:`~harness.context.compactor`: the compaction pipeline (prune, checkpoint, shrink);
- :mod:`~harness.context.pruning`, :mod:`~harness.context.summarizer`,
  :mod:`~harness.context.summary_input`: its steps;
- :mod:`~harness.context.admission`: capability admission of tool definitions and skills;
- :mod:`~harness.context.introspection`: what the model sees, item by item.

Only the context model is imported here, so ``import harness.context`` stays light.
"""

from harness.context.model import (
    ITEM_OVERHEAD_TOKENS,
    RESIDENT_ORDER,
    Budget,
    Context,
    ItemState,
    ItemStatus,
    RetiredItem,
    bounded_text,
)

__all__ = [
    "ITEM_OVERHEAD_TOKENS",
    "RESIDENT_ORDER",
    "Budget",
    "Context",
    "ItemState",
    "ItemStatus",
    "RetiredItem",
    "bounded_text",
]
