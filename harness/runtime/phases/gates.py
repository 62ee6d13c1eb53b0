"""Admission gates: whether, and with which arguments, a requested tool call may run.

A call passes the gates in order; the first that refuses decides, and its refusal is
recorded by the execute phase like any other result (the model reads why). Every call
passes the first three (:func:`admit`):

1. **known tool**: the name is one of this lane's visible tools (hidden hooks such as
   ``evaluate_run`` are refused with a reason, a tool the lane was refused (a sub-agent's
   physical tool) is blocked with its reason, other names get close matches);
2. **arguments**: a complete JSON object that validates against the tool's schema; the
   schema's defaults are filled in, so what follows sees what will run;
3. **pre-execution hooks**: each may let the call through, rewrite its arguments
   (revalidated) or block it.

A call of a tool that moves nothing then passes **not cancelled** (the operator has not
asked to stop) and runs. Every command of a physical tool, the first and each re-run of a
segmented one, is admitted by :mod:`harness.runtime.command` instead, holding the robot's
slot, through:

4. **driver idle**: no earlier physical command is still running (one abandoned after
   its timeout whose ``execute`` never returned): ``driver_busy``;
5. **fresh readings**: an observation taken since the robot's latest command returned
   (one taken before, or while it ran, is taken again);
6. **safety envelope**: allow, clamp (revalidated) or block; no envelope, or an envelope
   that raises, blocks (fail closed);
7. **not cancelled**.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.events import HookDecisionEvent, ObservationEvent, SafetyCheckEvent
from harness.messages import ToolCall
from harness.runtime.lane import Lane, Steps
from harness.runtime.task import TaskEnding
from harness.tools import Tool, ToolArgumentError, ToolOutput, close_matches, to_jsonable

__all__ = [
    "HIDDEN_HOOK_NAMES",
    "Admitted",
    "Refused",
    "admit",
    "driver_idle",
    "fresh_readings",
    "not_cancelled",
    "safety_envelope",
]

HIDDEN_HOOK_NAMES = frozenset({"evaluate_run"})
"""Hooks the harness runs itself; a model that calls one is told so."""


@dataclass(frozen=True)
class Admitted:
    """The call may run: the tool and its (validated, possibly rewritten) arguments."""

    tool: Tool
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Refused:
    """The call may not run: the result the model reads instead, and, for a cancel, how
    the task ends."""

    output: ToolOutput
    tool: Tool | None = None
    ending: TaskEnding | None = None


def admit(lane: Lane, call: ToolCall) -> Steps[Admitted | Refused]:
    """Pass ``call`` through the gates every call passes (and, for a tool that moves
    nothing, the cancel check); a physical tool's command is admitted by
    :func:`harness.runtime.command.send_command`."""
    gate = known_tool(lane, call)
    if isinstance(gate, Admitted):
        gate = valid_arguments(call, gate.tool)
    if isinstance(gate, Admitted):
        gate = yield from pre_hooks(lane, call, gate)
    if isinstance(gate, Admitted) and not gate.tool.physical:
        gate = not_cancelled(lane, gate)
    return gate


def known_tool(lane: Lane, call: ToolCall) -> Admitted | Refused:
    refusal = lane.refusals.get(call.name)
    if refusal is not None:  # asked for, but this lane may not have it (a sub-agent's)
        return Refused(ToolOutput.error(f"{call.name} is not available here: {refusal}", "blocked"))
    tool = lane.tools.get(call.name)
    if tool is not None and not tool.hidden:
        return Admitted(tool, {})
    if call.name in HIDDEN_HOOK_NAMES or tool is not None:
        message = (
            f"{call.name} is run by the harness itself after physical actions and "
            "cannot be called; its verdict comes with those actions' results"
        )
        return Refused(ToolOutput.error(message, "refused"))
    matches = close_matches(call.name, lane.tools.names(visible_only=True))
    hint = f"; did you mean {', '.join(matches)}?" if matches else ""
    return Refused(ToolOutput.error(f"unknown tool {call.name!r}{hint}", "unknown_tool"))


def valid_arguments(call: ToolCall, tool: Tool) -> Admitted | Refused:
    if call.raw_arguments is not None:
        message = f"arguments for {tool.name} are not a JSON object: {call.raw_arguments[:300]!r}"
        return Refused(ToolOutput.error(message, "invalid_arguments"), tool)
    try:
        return Admitted(tool, tool.validate(call.arguments))
    except ToolArgumentError as exc:
        return Refused(ToolOutput.error(str(exc), "invalid_arguments"), tool)


def pre_hooks(lane: Lane, call: ToolCall, gate: Admitted) -> Steps[Admitted | Refused]:
    tool, arguments = gate.tool, gate.arguments
    for hook in lane.session.hooks:
        name = getattr(hook, "name", None) or getattr(hook, "__name__", type(hook).__name__)
        try:
            decision = hook(call, tool, arguments)
        except Exception as exc:
            reason = f"hook {name} raised {type(exc).__name__}: {exc}"
            yield lane.emit(
                HookDecisionEvent(
                    hook=name,
                    call_id=call.id,
                    tool=tool.name,
                    action="block",
                    requested=arguments,
                    reason=reason,
                )
            )
            return Refused(ToolOutput.error(f"blocked: {reason}", "blocked"), tool)
        if decision is None:
            continue
        yield lane.emit(
            HookDecisionEvent(
                hook=name,
                call_id=call.id,
                tool=tool.name,
                action=decision.action,
                requested=to_jsonable(arguments),
                applied=to_jsonable(decision.arguments),
                reason=decision.reason,
            )
        )
        if decision.action == "block":
            message = f"blocked by {name}: {decision.reason}"
            return Refused(ToolOutput.error(message, "blocked"), tool)
        try:
            arguments = tool.validate(decision.arguments)
        except ToolArgumentError as exc:
            message = f"hook {name} produced invalid arguments: {exc}"
            return Refused(ToolOutput.error(message, "blocked"), tool)
    return Admitted(tool, arguments)


def driver_idle(lane: Lane, gate: Admitted) -> Admitted | Refused:
    """One physical command at a time, even after a timeout the driver did not honour."""
    pending = lane.session.robot.busy()
    if pending is None:
        return gate
    message = (
        f"driver_busy: {pending.tool} has not returned {pending.age_s():.1f} s after it was "
        "stopped at its timeout, so the robot may still be executing it; no other physical "
        "command is sent until it returns. Observe, wait, or end the task (it ends failed "
        "while the command has not returned)."
    )
    return Refused(ToolOutput.error(message, "driver_busy"), gate.tool)


def fresh_readings(lane: Lane, gate: Admitted) -> Steps[Admitted | Refused]:
    """The envelope checks a command against the robot as it is now: a reading taken
    before or during the robot's latest command (this task's, a segment's, another
    session's) is replaced by a new one. Without an observation provider the envelope gets
    none, and takes its own (or blocks)."""
    state = lane.state
    generation = lane.session.robot.line.generation
    if state.observation is not None and state.observed_in == generation:
        return gate
    provider = lane.session.observation_provider
    if provider is None:
        state.observation = None
        return gate
    try:
        observation = provider.observe()
    except Exception as exc:
        message = (
            f"not executed: fresh readings for {gate.tool.name} could not be taken "
            f"({type(exc).__name__}: {exc}); nothing was sent. Observe, then try again."
        )
        return Refused(ToolOutput.error(message, "blocked"), gate.tool)
    state.observation, state.observed_in = observation, generation
    yield lane.emit(
        ObservationEvent(state=to_jsonable(observation.state), timestamp=observation.timestamp)
    )
    return gate


def safety_envelope(
    lane: Lane, call: ToolCall, gate: Admitted, *, segment: int = 1
) -> Steps[Admitted | Refused]:
    tool, arguments = gate.tool, gate.arguments
    envelope = lane.session.safety
    applied: dict[str, Any] = {}
    if envelope is None:
        outcome, reason = "block", "no safety envelope is configured for physical tools"
        violations = ["no_safety_envelope"]
    else:
        try:
            decision = envelope.check(tool, arguments, lane.state.observation)
        except Exception as exc:  # fail closed
            outcome, reason = "block", f"safety check failed: {type(exc).__name__}: {exc}"
            violations = ["safety_check_error"]
        else:
            outcome, reason = decision.outcome, decision.reason
            applied, violations = dict(decision.arguments), list(decision.violations)
    yield lane.emit(
        SafetyCheckEvent(
            call_id=call.id,
            tool=tool.name,
            outcome=outcome,  # type: ignore[arg-type]
            requested=to_jsonable(arguments),
            applied=to_jsonable(applied),
            violations=violations,
            reason=reason,
            segment=segment,
        )
    )
    if outcome == "block":
        detail = reason or "; ".join(violations)
        message = f"blocked by the safety envelope: {detail}"
        return Refused(ToolOutput.error(message, "blocked"), tool)
    if outcome != "clamp":
        return gate
    try:
        return Admitted(tool, tool.validate(applied))
    except ToolArgumentError as exc:
        message = f"blocked: clamped arguments are invalid: {exc}"
        return Refused(ToolOutput.error(message, "blocked"), tool)


def not_cancelled(lane: Lane, gate: Admitted) -> Admitted | Refused:
    ending = lane.cancelled("before the tool call")
    if ending is None:
        return gate
    output = ToolOutput.error("not executed: the task was cancelled", "cancelled")
    return Refused(output, gate.tool, ending=ending)
