"""Episodes: the structure of the work, as the model marks it, and condensing it.

- :mod:`~harness.context.episodes.marks`: episodes as the model marks them;
- :mod:`~harness.context.episodes.condense`: ``condense_context`` at a natural milestone.
"""

__all__: list[str] = []
