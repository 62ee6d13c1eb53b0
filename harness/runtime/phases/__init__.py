"""The phases of one turn, in the order :mod:`harness.runtime.loop` runs them.

- :mod:`~harness.runtime.phases.refresh`: everything before a model call;
- :mod:`~harness.runtime.phases.decide`: one model call, streamed, priced and recorded,
  with :mod:`~harness.runtime.phases.cut` for answers a limit cut off,
  :mod:`~harness.runtime.phases.overflow_ladder` for requests the provider rejected as too
  large and :mod:`~harness.runtime.phases.pricing` for what each call cost;
- :mod:`~harness.runtime.phases.gates`: whether, and with which arguments, a call may run;
- :mod:`~harness.runtime.phases.execute`: the one selected tool call, through the gates,
  run on the watched worker thread of :mod:`~harness.runtime.phases.tool_thread`;
- :mod:`~harness.runtime.phases.record`: the result into the archive, Accumulated, Task
  Notes and events.
"""

__all__: list[str] = []
