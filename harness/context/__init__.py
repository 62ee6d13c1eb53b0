"""The context model and everything that keeps it within the model's window.

- :mod:`~harness.context.model`: the three lifetimes (Resident, Accumulated, Refreshed)
  and request assembly, with its token accounting in :mod:`~harness.context.sizes` and
  the bounding of long text in :mod:`~harness.context.bounds`;
- :mod:`~harness.context.archive`: archive addresses and the text an archived item stands for;
- :mod:`~harness.context.turns`: reading Accumulated as whole turns, what a fold may never
  take (the instruction, revisions, earlier tasks' prose), planning a fold;
- :mod:`~harness.context.compactor`: the compaction pipeline (prune, checkpoint, shrink),
  and folding an ended task's traffic when the next one starts;
- :mod:`~harness.context.folds`, :mod:`~harness.context.checkpoint`,
  :mod:`~harness.context.index`: the one rolling checkpoint, with or without a model, and
  the harness's address index of every folded exchange;
- :mod:`~harness.context.pruning`, :mod:`~harness.context.summarizer`,
  :mod:`~harness.context.summary_input`, :mod:`~harness.context.deterministic`,
  :mod:`~harness.context.shrink`: the steps;
- :mod:`~harness.context.instructions`: an oversized instruction as an authoritative
  reference;
- :mod:`~harness.context.overflow`: the later steps of the provider-overflow ladder;
- :mod:`~harness.context.budget`: why a request cannot fit, with the numbers;
- :mod:`~harness.context.episodes`, :mod:`~harness.context.eviction`,
  :mod:`~harness.context.cleanup`, :mod:`~harness.context.pressure`,
  :mod:`~harness.context.condense`: the structure of the work (episodes), eviction by it
  under pressure, the window-derived pressure levels and the model's own condensation;
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
