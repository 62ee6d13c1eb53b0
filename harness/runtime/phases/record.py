"""The record phase: one tool result into the archive, Accumulated, Task Notes and events.

Every result, whether the tool ran or a gate refused it, is recorded here and only here:

- the output is redacted first (before any bound, note or summary is taken of it, so no
  bound can keep half a secret that a redactor matching the whole one would miss);
- the exact output (with what was applied and the evaluator's verdict) is archived at
  ``archive://<task>/<call>`` before anything else, so nothing is ever lost;
- a bounded copy (head and tail, with the address) enters Accumulated (a sub-agent's copy
  always names its address: it cites it as evidence in its handoff);
- the task's rules (:mod:`harness.runtime.rules`) update the failure budget, Task Notes and
  the tool-experience record;
- a ``tool_result`` event goes out.
"""

from __future__ import annotations

import dataclasses
import json

from harness.context import bounded_text
from harness.context.compaction.archive import archive_address
from harness.events import ToolResultEvent
from harness.messages import ToolCall, ToolResultItem, Verdict
from harness.redact import Redactor
from harness.runtime.lane import Lane, Steps
from harness.runtime.rules import RecordedResult
from harness.tools import Tool, ToolOutput, to_jsonable

__all__ = ["record_result", "redacted_output"]

EVENT_TEXT_MAX_CHARS = 2000
"""A ``tool_result`` event carries at most this much of the recorded text."""


def record_result(
    lane: Lane,
    call: ToolCall,
    tool: Tool | None,
    output: ToolOutput,
    *,
    executed: bool,
    duration_s: float = 0.0,
    verdict: Verdict | None = None,
) -> Steps[None]:
    session = lane.session
    state = lane.state
    output = redacted_output(output, session.redactor)
    full_text = _full_text(output, verdict)
    address = archive_address(state.task_id, call.id)
    session.store.archive_put(
        address,
        full_text,
        task_id=state.task_id,
        call_id=call.id,
        tool=call.name,
        arguments=json.dumps(to_jsonable(call.arguments), sort_keys=True, ensure_ascii=False),
    )
    text, truncated = bounded_text(
        full_text, session.config.context.record_max_chars, address=address
    )
    if lane.lane_id and not truncated:  # a sub-agent cites its evidence by this address
        text += f"\n[archived at {address}]"
    for image in output.images:
        session.store.put_image(image)
    item = lane.record(
        ToolResultItem(
            call_id=call.id,
            name=call.name,
            text=text,
            is_error=output.is_error,
            error_kind=output.error_kind,
            archive=address,
            images=[image.ref() for image in output.images],
            evaluation=verdict,
            physical=bool(tool and tool.physical),
        )
    )
    if truncated:
        lane.set_item_state(
            item.id, "truncated", f"output of {len(full_text)} chars exceeds record_max_chars"
        )
    lane.context.add_transient_images(output.images)

    result = RecordedResult.of_output(
        output, turn=state.turn, tool=call.name, executed=executed, verdict=verdict
    )
    outcome = state.account(result)
    physical = bool(tool and tool.physical)
    state.refused.note(call, output, turn=state.turn, physical=physical, executed=executed)
    if outcome is not None:
        session.memory_link.record_tool_outcome(outcome)
    yield lane.emit(
        ToolResultEvent(
            call_id=call.id,
            name=call.name,
            is_error=output.is_error,
            error_kind=output.error_kind,
            text=text if len(text) <= EVENT_TEXT_MAX_CHARS else text[:EVENT_TEXT_MAX_CHARS] + "...",
            archive=address,
            images=[image.sha256 for image in output.images],
            duration_s=round(duration_s, 4),
            evaluation=verdict,
            executed=executed,
        )
    )


def redacted_output(output: ToolOutput, redactor: Redactor) -> ToolOutput:
    """``output`` with its text and structured data redacted (the output itself when it held
    no secret)."""
    text = redactor.text(output.text)
    data = output.data
    if isinstance(data, (str, dict, list, tuple)):  # JSON-like: strings inside are redacted
        clean = redactor.value(data)
        if _differs(clean, data):
            data = clean
    if text == output.text and data is output.data:
        return output
    return dataclasses.replace(output, text=text, data=data)


def _differs(a: object, b: object) -> bool:
    try:
        return bool(a != b)
    except Exception:  # values whose comparison is not a bool (arrays inside)
        return True


def _full_text(output: ToolOutput, verdict: Verdict | None) -> str:
    """The exact output as archived: text, what was applied, the evaluator's verdict."""
    text = output.render()
    if output.applied is not None:
        text += "\napplied: " + json.dumps(to_jsonable(output.applied), sort_keys=True)
    if verdict is not None:
        text += f"\nevaluation: {verdict.status}" + (
            f" - {verdict.evidence}" if verdict.evidence else ""
        )
    return text
