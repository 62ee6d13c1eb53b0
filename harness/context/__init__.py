"""The context model and everything that keeps it within the model's window.

- :mod:`~harness.context.model`: the three lifetimes (Resident, Accumulated, Refreshed)
  and request assembly, with its token accounting in :mod:`~harness.context.sizes` and
  the bounding of long text in :mod:`~harness.context.bounds`;
- :mod:`~harness.context.compaction`: the one rolling checkpoint (the pipeline, whole
  turns, folds with or without a model, the address index, summaries, the last steps and
  the provider-overflow ladder);
- :mod:`~harness.context.eviction`: pressure levels, proactive pruning, and eviction by
  the structure of the work under pressure;
- :mod:`~harness.context.episodes`: the structure of the work (episodes) and the model's
  own condensation;
- :mod:`~harness.context.instructions`: an oversized instruction as an authoritative
  reference;
- :mod:`~harness.context.budget`: why a request cannot fit, with the numbers;
- :mod:`~harness.context.admission`: capability admission of tool definitions and skills;
- :mod:`~harness.context.introspection`: what the model sees, item by item.

Only the context model is imported here, so ``import harness.context`` stays light.
"""

from harness.context.model import (
    ITEM_OVERHEAD_TOKENS,
    RESIDENT_ORDER,
    RETIRED_KEPT,
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
    "RETIRED_KEPT",
    "Budget",
    "Context",
    "ItemState",
    "ItemStatus",
    "RetiredItem",
    "bounded_text",
]
