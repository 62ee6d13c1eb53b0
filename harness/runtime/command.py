"""Every physical command, through one admission: the robot's slot, fresh readings, the
safety envelope, the cancel check, and only then the driver.

A physical tool reaches its driver (or its MCP server) only through :func:`send_command`:
the first command of a call and every re-run of a segmented one alike. It takes the
robot's slot (:class:`~harness.runtime.robot.RobotLine`, shared by every session driving
the same robot, waiting up to the tool's timeout for another session's command), and
holding it passes the gates (:mod:`harness.runtime.phases.gates`): driver idle, readings taken
after the robot's latest command, the envelope, not cancelled. The slot is held until the
driver returns, so no other command can be checked against readings this one is about to
make stale, and none can overlap it. :func:`run_handler` refuses to run a physical tool
without the slot (a harness bug, raised, never a result).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from harness.events import ProgressEvent, ToolCallEvent
from harness.messages import ToolCall
from harness.runtime.lane import Lane, Steps
from harness.runtime.phases.gates import (
    Admitted,
    Refused,
    driver_idle,
    fresh_readings,
    not_cancelled,
    safety_envelope,
)
from harness.runtime.phases.tool_thread import CallOutcome, run_tool
from harness.runtime.robot import Slot
from harness.tools import Tool, ToolOutput, to_jsonable

__all__ = ["SLOT_POLL_S", "Sent", "run_handler", "send_command"]

SLOT_POLL_S = 0.05
"""How often a command waiting for the robot's slot checks the operator's cancel."""


@dataclass(frozen=True)
class Sent:
    """A command that reached the robot: the arguments it was sent with (after the
    envelope) and how the call went."""

    arguments: dict[str, Any]
    outcome: CallOutcome


def send_command(
    lane: Lane, call: ToolCall, gate: Admitted, *, segment: int = 1
) -> Steps[Sent | Refused]:
    """Admit one command of a physical tool and run it (see the module docstring)."""
    tool = gate.tool
    if not tool.physical:
        raise ValueError(f"{tool.name} moves nothing; it is not sent as a command")
    slot = yield from take_slot(lane, tool)
    if isinstance(slot, Refused):
        return slot
    try:
        admitted: Admitted | Refused = driver_idle(lane, gate)
        if isinstance(admitted, Admitted):
            admitted = yield from fresh_readings(lane, admitted)
        if isinstance(admitted, Admitted):
            admitted = yield from safety_envelope(lane, call, admitted, segment=segment)
        if isinstance(admitted, Admitted):
            admitted = not_cancelled(lane, admitted)
        if isinstance(admitted, Refused):
            return admitted
        if segment == 1:
            yield lane.emit(
                ToolCallEvent(
                    call_id=call.id,
                    name=tool.name,
                    arguments=to_jsonable(admitted.arguments),
                    physical=True,
                )
            )
        line = lane.session.robot.line
        line.started()
        outcome = yield from run_handler(lane, call, tool, admitted.arguments, slot=slot)
        if outcome.pending is None:
            line.returned()
        control_log = lane.session.control_log
        steps = (
            control_log.take(call_id=call.id, tool=tool.name, segment=segment)
            if control_log
            else None
        )
        if steps is not None:
            yield lane.emit(steps)
        return Sent(admitted.arguments, outcome)
    finally:
        lane.session.robot.release(slot)


def take_slot(lane: Lane, tool: Tool) -> Steps[Slot | Refused]:
    """The robot's slot; while another session's command holds it, wait (up to the
    tool's timeout, the operator's cancel winning) and say so once."""
    robot = lane.session.robot
    slot = robot.take(tool.name, 0.0)
    if slot is not None:
        return slot
    holder = robot.line.holder()
    who = f"{holder.tool} of session {holder.session}" if holder else "another command"
    text = f"{tool.name}: waiting for the robot ({who} is running)"
    yield lane.emit(ProgressEvent(text=text, source="harness"))
    limit = tool.timeout_s or lane.session.config.run.tool_timeout_s
    deadline = time.monotonic() + limit
    while True:
        ending = lane.cancelled(f"while {tool.name} waited for the robot")
        if ending is not None:
            output = ToolOutput.error("not executed: the task was cancelled", "cancelled")
            return Refused(output, tool, ending=ending)
        slot = robot.take(tool.name, SLOT_POLL_S)
        if slot is not None:
            return slot
        if time.monotonic() >= deadline:
            message = (
                f"driver_busy: the robot ran {who} for all of {limit:g} s that {tool.name} "
                "waited, so nothing was sent (one command at a time per robot). Observe, "
                "then try again."
            )
            return Refused(ToolOutput.error(message, "driver_busy"), tool)


def run_handler(
    lane: Lane, call: ToolCall, tool: Tool, arguments: dict[str, Any], *, slot: Slot | None = None
) -> Steps[CallOutcome]:
    """Run the tool's handler on its watched worker (a physical tool only with the
    robot's slot, from :func:`send_command`)."""
    session = lane.session
    if tool.physical and not session.robot.line.holds(slot):
        raise RuntimeError(f"harness bug: {tool.name} would reach the robot without admission")
    outcome = yield from lane.emit_all(
        run_tool(
            tool,
            arguments,
            {"call_id": call.id, "task_id": lane.state.task_id, "turn": lane.state.turn},
            timeout_s=tool.timeout_s or session.config.run.tool_timeout_s,
            should_cancel=lane.should_cancel,
            interrupt=session.interrupt_robot if tool.physical else None,
        )
    )
    if tool.physical and outcome.pending is not None:
        # Abandoned, but its execute has not returned: no other physical command until it
        # does (the driver_busy gate), and the task cannot end as if the robot were idle.
        session.robot.abandoned(tool.name, outcome.pending)
    return outcome
