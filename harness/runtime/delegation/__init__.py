"""Sub-agents: a child task with a contract, narrowed tools and a structured handoff.

- :mod:`~harness.runtime.delegation.delegate`: the ``delegate`` tool and the child lane;
- :mod:`~harness.runtime.delegation.contract`: what a ``delegate`` call asks for;
- :mod:`~harness.runtime.delegation.handoff`: what a sub-agent hands back;
- :mod:`~harness.runtime.delegation.recovery`: lanes found when a session is resumed.
"""

__all__: list[str] = []
