"""No identical retry of a refusal that cannot change.

A call refused for a reason that lies in the call and the world (the safety envelope
blocked it, its arguments were invalid, the driver declined it without moving: "too wide
to grasp", "closed; open it first", "not something to put things in") is refused again,
word for word, when it is sent again unchanged while nothing has moved. Models do send it
again (a scripted planner and real models alike loop on it), and every such turn costs a
model call and a failure-budget slot and teaches nothing.

:class:`RefusalMemory` (one per task, on its :class:`~harness.runtime.task.TaskState`)
remembers the refused calls of the task by name and arguments. The memory is cleared
whenever a physical call runs and is not itself a refusal: the world may have changed, so
the reason may no longer hold. A call identical to a remembered one is not sent anywhere:
the model reads a notice (``repeated_refusal``) quoting the first refusal and saying that
its reason still holds; after ``run.repeated_refusals`` notices in one task the task ends
``failed`` as stuck. Transient refusals (a busy driver, a timeout, a cancel) are never
remembered: asking again can succeed.

The memory lives with the running task only; a resumed task starts with an empty one (its
first repeat is refused by whatever refused it the first time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.messages import ToolCall
from harness.tools import ToolOutput, to_jsonable

__all__ = ["REPEATED_REFUSAL", "RefusalMemory", "is_refusal"]

REPEATED_REFUSAL = "repeated_refusal"
"""The error kind of the notice a repeated refused call gets instead of running."""
REFUSAL_KINDS = frozenset(
    {
        "blocked",
        "refused",
        "invalid_arguments",
        "unknown_tool",
        "admission_refused",
        "unknown_ref",
        "unknown_skill",
        REPEATED_REFUSAL,
    }
)
"""Error kinds that say the call was declined for a reason in the call or the world."""


def is_refusal(output: ToolOutput, *, physical: bool) -> bool:
    """Whether ``output`` declines its call for a reason that holds while nothing moves:
    a refusal kind, or a physical action that failed without applying anything (the
    driver refused it before moving)."""
    if not output.is_error:
        return False
    if output.error_kind in REFUSAL_KINDS:
        return True
    return physical and output.error_kind == "action_failed" and not output.applied


def _key(call: ToolCall) -> str:
    arguments: Any = call.raw_arguments if call.raw_arguments is not None else call.arguments
    return call.name + " " + json.dumps(to_jsonable(arguments), sort_keys=True, default=str)


@dataclass
class _Refused:
    turn: int
    reason: str


@dataclass
class RefusalMemory:
    """The task's refused calls since the world last changed (see the module docstring)."""

    refused: dict[str, _Refused] = field(default_factory=dict)
    notices: int = 0
    """Repeats answered with a notice in this task (what ``run.repeated_refusals`` caps)."""

    def note(
        self, call: ToolCall, output: ToolOutput, *, turn: int, physical: bool, executed: bool
    ) -> None:
        """Learn from one recorded result: remember a refusal, forget every refusal once a
        physical call ran (the world may have changed)."""
        if output.error_kind == REPEATED_REFUSAL:
            return
        if is_refusal(output, physical=physical):
            self.refused.setdefault(_key(call), _Refused(turn, output.render().splitlines()[0]))
        elif physical and executed:
            self.refused.clear()

    def repeat(self, call: ToolCall) -> ToolOutput | None:
        """The notice for ``call`` when it repeats a remembered refusal, else None."""
        first = self.refused.get(_key(call))
        if first is None:
            return None
        self.notices += 1
        return ToolOutput.error(
            f"not run: this exact {call.name} call was refused at turn {first.turn} "
            f"({first.reason[:300]}), and nothing has moved since, so that reason still "
            "holds. Change the call (other arguments, another tool first), or end the task "
            "with a report saying what cannot be done.",
            REPEATED_REFUSAL,
        )
