"""Eviction: reclaiming context before (and instead of) a checkpoint fold.

- :mod:`~harness.context.eviction.pressure`: pressure levels from the window's size;
- :mod:`~harness.context.eviction.pruning`: cheap, model-free pruning of old bulky results;
- :mod:`~harness.context.eviction.by_structure`: what leaves the working set first, by the
  structure of the work (episodes);
- :mod:`~harness.context.eviction.cleanup`: the pressure cleanup that applies it.
"""

__all__: list[str] = []
