"""The execute phase: the one selected tool call, through the gates, run, judged, recorded.

The model may return several calls; only the first runs (one tool per turn) and the
others are recorded as not executed (a call the output limit cut off as cut, with what
arrived of its arguments). The call passes the admission gates
(:mod:`harness.runtime.phases.gates`); a physical tool's command is admitted and sent by
:mod:`harness.runtime.command`, the one path to a robot. It runs on a watched worker thread
(:mod:`harness.runtime.phases.tool_thread`), is judged by the hidden ``evaluate_run`` hook
when it is a configured physical tool (in segments while the evaluator says "in progress", each
segment sent through the same admission as the first), and is recorded
(:mod:`harness.runtime.phases.record`). The phase returns how the task ends when the
call ended it (a cancel, a tool that ends the task), else None.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from harness.cancel import Cancelled, call_cancellable
from harness.events import EvaluationEvent, ProgressEvent, ToolCallEvent
from harness.messages import ModelResponse, ToolCall, Verdict
from harness.runtime.command import run_handler, send_command
from harness.runtime.lane import Lane, Steps
from harness.runtime.phases.gates import Admitted, Refused, admit
from harness.runtime.phases.record import record_result
from harness.runtime.phases.tool_thread import CallOutcome
from harness.runtime.task import TaskEnding
from harness.tools import Tool, ToolOutput, to_jsonable

__all__ = ["execute"]

logger = logging.getLogger(__name__)

ENDING_STATUSES = ("completed", "cancelled", "failed")
"""Statuses a tool may end its task with (``EndTask``); anything else ends it failed."""


def execute(lane: Lane, response: ModelResponse) -> Steps[TaskEnding | None]:
    if response.text:
        yield lane.emit(ProgressEvent(text=response.text, source="model"))
    first, *extra = response.tool_calls
    ending = yield from run_call(lane, first)
    for call in extra:
        yield from record_result(lane, call, None, not_executed(call, first), executed=False)
    return ending


def stuck(lane: Lane, call: ToolCall) -> TaskEnding | None:
    """The ``failed`` ending once ``run.repeated_refusals`` repeats were answered."""
    limit = lane.session.config.run.repeated_refusals
    count = lane.state.refused.notices
    if count < limit:
        return None
    return TaskEnding(
        "failed",
        f"stuck: {count} calls repeated a refusal whose reason still held, the last "
        f"{call.name} (run.repeated_refusals={limit})",
    )


def not_executed(call: ToolCall, first: ToolCall) -> ToolOutput:
    """The answer to a call after the first of a turn: one tool per turn, or, for the call
    the output limit cut off, that it never arrived whole."""
    if call.cut:
        partial = call.raw_arguments or ""
        return ToolOutput.error(
            f"not executed: the output limit cut this {call.name or 'tool'} call off before "
            f"its arguments were complete ({len(partial)} characters arrived: "
            f"{partial[:200]!r}); only {first.name} ({first.id}) ran. Request it again, "
            "with compact arguments, next turn if it is still needed.",
            "output_limit",
        )
    return ToolOutput.error(
        f"not executed: one tool per turn; only {first.name} ({first.id}) ran. "
        "Request this call again next turn if it is still needed.",
        "not_executed",
    )


def run_call(lane: Lane, call: ToolCall) -> Steps[TaskEnding | None]:
    notice = lane.state.refused.repeat(call)
    if notice is not None:  # refused before, nothing moved since: the reason still holds
        yield from record_result(lane, call, lane.tools.get(call.name), notice, executed=False)
        return stuck(lane, call)
    admission = yield from admit(lane, call)
    if isinstance(admission, Refused):
        yield from record_result(lane, call, admission.tool, admission.output, executed=False)
        return admission.ending
    tool, arguments = admission.tool, admission.arguments
    if tool.physical:
        sent = yield from send_command(lane, call, admission)
        if isinstance(sent, Refused):
            yield from record_result(lane, call, tool, sent.output, executed=False)
            return sent.ending
        arguments, outcome = sent.arguments, sent.outcome
    else:
        yield lane.emit(
            ToolCallEvent(
                call_id=call.id, name=tool.name, arguments=to_jsonable(arguments), physical=False
            )
        )
        outcome = yield from run_handler(lane, call, tool, arguments)
    judged = Judged(outcome)
    if not outcome.output.is_error and not outcome.cancelled:
        judged = yield from evaluate(lane, call, tool, arguments, outcome)
    outcome = judged.outcome
    # The world first, then the result: a crash in between leaves a result-less call that
    # resume reports as "outcome unknown" over a world that shows what happened.
    lane.session.record_world_state(lane.state)
    yield from record_result(
        lane,
        call,
        tool,
        outcome.output,
        executed=outcome.output.executed,
        duration_s=outcome.duration_s,
        verdict=judged.verdict,
    )
    if judged.ending is not None:
        return judged.ending
    if outcome.cancelled:
        return TaskEnding("cancelled", f"cancelled by the operator during {tool.name}")
    if outcome.end_task is not None:
        end = outcome.end_task
        status = end.status if end.status in ENDING_STATUSES else "failed"
        return TaskEnding(status, end.reason)  # type: ignore[arg-type]
    return None


@dataclass
class Judged:
    """A call's outcome after the evaluator: its verdict, and an ending if the operator
    cancelled between segments."""

    outcome: CallOutcome
    verdict: Verdict | None = None
    ending: TaskEnding | None = None


def evaluate(
    lane: Lane, call: ToolCall, tool: Tool, arguments: dict[str, Any], outcome: CallOutcome
) -> Steps[Judged]:
    """The hidden ``evaluate_run`` hook; a segment tool runs again while "in progress"."""
    session = lane.session
    cfg = session.config.evaluation
    evaluator = session.evaluator
    if evaluator is None or tool.name not in cfg.required_tools:
        return Judged(outcome)
    segment = 1
    ending: TaskEnding | None = None
    while True:
        try:
            # A vision model may take seconds: watched, so the operator's cancel wins.
            verdict = call_cancellable(
                functools.partial(
                    _judge_once, session, evaluator, tool, arguments, outcome.output, segment
                ),
                cancelled=lane.should_cancel,
                what=f"the evaluation of {tool.name}",
            )
        except Cancelled as exc:
            ending = TaskEnding("cancelled", str(exc))
            verdict = _harness_failure(f"not judged: {exc}; the outcome is unknown")
        except Exception as exc:
            verdict = _harness_failure(f"evaluator raised {type(exc).__name__}: {exc}")
        yield lane.emit(
            EvaluationEvent(call_id=call.id, tool=tool.name, verdict=verdict, segment=segment)
        )
        if ending is not None:
            return Judged(outcome, verdict, ending)  # the scene learns nothing from it
        if verdict.status != "process" or tool.name not in cfg.segment_tools:
            break
        if segment >= cfg.max_segments:
            verdict = Verdict(
                status="failure",
                evidence=f"still in progress after {segment} segments "
                f"(max_segments={cfg.max_segments}): {verdict.evidence}",
                evaluator=verdict.evaluator,
            )
            break
        ending = lane.cancelled(f"between segments of {tool.name}")
        if ending is not None:
            break
        segment += 1
        yield lane.emit(
            ProgressEvent(
                text=f"{tool.name}: segment {segment} (evaluator: in progress)", source="harness"
            )
        )
        sent = yield from send_command(lane, call, Admitted(tool, arguments), segment=segment)
        if isinstance(sent, Refused):
            return Judged(_not_rerun(tool, segment, outcome, sent), ending=sent.ending)
        arguments = sent.arguments
        next_outcome = sent.outcome
        next_outcome.duration_s += outcome.duration_s
        outcome = next_outcome
        if outcome.output.is_error or outcome.cancelled:
            return Judged(outcome)
    if session.scene is not None:
        try:
            session.scene.on_verdict(tool.name, arguments, verdict)
        except Exception:
            logger.exception("the scene graph could not apply the verdict on %s", tool.name)
    return Judged(outcome, verdict, ending)


def _not_rerun(tool: Tool, segment: int, done: CallOutcome, refused: Refused) -> CallOutcome:
    """The call's outcome when its next segment was refused admission: the segments
    before it ran (the result is an executed one, with what they applied), the action is
    unfinished, and the model reads why it stopped."""
    ran = "segment 1" if segment == 2 else f"segments 1-{segment - 1}"
    text = (
        f"{tool.name} is unfinished: {ran} ran and the evaluator said it was still in "
        f"progress, but segment {segment} was not run: {refused.output.render()}"
    )
    output = ToolOutput.error(
        text, refused.output.error_kind or "blocked", applied=done.output.applied
    )
    return CallOutcome(output, done.duration_s, cancelled=refused.ending is not None)


def _harness_failure(evidence: str) -> Verdict:
    return Verdict(status="failure", evidence=evidence, evaluator="harness")


def _judge_once(
    session: Any,
    evaluator: Any,
    tool: Tool,
    arguments: dict[str, Any],
    output: ToolOutput,
    segment: int,
    _cancelled: Any,
) -> Verdict:
    """One ``evaluate_run`` verdict, on an observation taken now."""
    provider = session.observation_provider
    return evaluator.evaluate(
        tool=tool,
        arguments=arguments,
        output=output,
        observation=provider.observe() if provider else None,
        segment=segment,
    )
