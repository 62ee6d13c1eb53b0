"""Building a Harness's parts from configuration: the composition root.

- :mod:`~harness.assembly.build`: every part a config names (model, store, skills, memory,
  scene, MCP servers, config tools), closing what was built if a later part fails;
- :mod:`~harness.assembly.embodiment`: profile, driver, safety envelope, physical tools and
  the evaluator;
- :mod:`~harness.assembly.memory`: durable memory with its model-backed helpers;
- :mod:`~harness.assembly.imports`: ``package.module:attribute`` references from config;
- :mod:`~harness.assembly.checks`: the named checks behind ``harness check``.
"""

__all__: list[str] = []
