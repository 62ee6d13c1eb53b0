"""The tool runner: timeouts versus cancellation."""

from __future__ import annotations

from harness.runtime.execution import CallOutcome, run_tool
from harness.tools import Tool, ToolContext


def _run(tool: Tool, *, cancel: bool = False) -> tuple[CallOutcome, int]:
    interrupts: list[int] = []
    runner = run_tool(
        tool,
        {},
        {"call_id": "call_1", "task_id": "task_1", "turn": 1},
        timeout_s=tool.timeout_s or 5.0,
        should_cancel=lambda: cancel,
        interrupt=(lambda: interrupts.append(1)) if tool.physical else None,  # as the loop does
    )
    while True:
        try:
            next(runner)
        except StopIteration as stop:
            return stop.value, len(interrupts)


def _cooperative(ctx: ToolContext) -> str:
    """Stops as soon as it is told to, the way handlers are asked to."""
    while not ctx.wait(0.01):
        pass
    ctx.raise_if_cancelled()
    return "unreachable"


def test_cooperative_stop_on_timeout_is_a_timeout_not_a_cancellation() -> None:
    tool = Tool("wait", "Wait.", _cooperative, parameters={"type": "object"}, timeout_s=0.1)
    outcome, interrupts = _run(tool)
    assert outcome.timed_out and not outcome.cancelled
    assert outcome.output.error_kind == "timeout"
    assert interrupts == 0  # not physical


def test_cooperative_stop_of_a_physical_tool_on_timeout_is_outcome_unknown() -> None:
    tool = Tool(
        "move", "Move.", _cooperative, parameters={"type": "object"}, timeout_s=0.1, physical=True
    )
    outcome, interrupts = _run(tool)
    assert outcome.timed_out and not outcome.cancelled
    assert outcome.output.error_kind == "outcome_unknown"
    assert interrupts == 1  # the driver's stop path ran


def test_operator_cancellation_is_still_a_cancellation() -> None:
    tool = Tool("wait", "Wait.", _cooperative, parameters={"type": "object"}, timeout_s=5.0)
    outcome, _ = _run(tool, cancel=True)
    assert outcome.cancelled and not outcome.timed_out
    assert outcome.output.error_kind == "cancelled"
