"""Resuming a session after a crash.

- :mod:`~harness.runtime.resume.rebuild`: the session rebuilt from the run store, and its
  task continued;
- :mod:`~harness.runtime.resume.resumed_task`: what runs instead of a task's start.
"""

__all__: list[str] = []
