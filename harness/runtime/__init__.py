"""The runtime: the Harness facade, the session, one task's state, and the turn loop.

- :mod:`~harness.runtime.harness`: ``Harness`` (the public facade), ``RunResult``,
  ``TaskStream``;
- :mod:`~harness.runtime.session`: what outlives a task (context, store, tools, clients,
  memory, the robot, sequence numbers), with its tool sources in
  :mod:`~harness.runtime.session_tools` and its side of durable memory in
  :mod:`~harness.runtime.session_memory`;
- :mod:`~harness.runtime.task`: what belongs to one task (``TaskState``) and how it ended
  (``TaskEnding``);
- :mod:`~harness.runtime.rules`: the bookkeeping rules the loop and resume both apply;
- :mod:`~harness.runtime.lane`: a running task as the phases see it;
- :mod:`~harness.runtime.loop`: the turn loop, reading top to bottom, and its phases in
  :mod:`~harness.runtime.phases` (refresh, decide, gates, execute, record);
- :mod:`~harness.runtime.builtins`: the built-in tools;
- :mod:`~harness.runtime.delegation`: sub-agents (contract, child lane, handoff, recovery);
- :mod:`~harness.runtime.resume`: continuing a task after a crash.
"""

from harness.runtime.harness import Harness, RunResult, TaskStream
from harness.runtime.session import Session
from harness.runtime.task import TaskEnding, TaskState

__all__ = ["Harness", "RunResult", "Session", "TaskEnding", "TaskState", "TaskStream"]
