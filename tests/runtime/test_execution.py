"""The tool runner: timeouts versus cancellation."""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.runtime.phases.tool_thread import CallOutcome, run_tool
from harness.tools import Tool, ToolCancelledError, ToolContext, ToolOutput


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


# ============================================================================ send gate


class _Preparing(Tool):
    """A tool that spends ``prepare_s`` getting ready (an MCP server restarting) before it
    sends its request, then takes ``work_s``; it records whether it sent anything."""

    def __init__(self, *, prepare_s: float, work_s: float, setup_s: float, physical: bool) -> None:
        super().__init__(
            "prep", "Prepares, then works.", lambda: None, physical=physical, timeout_s=0.5
        )
        self.setup_timeout_s = setup_s
        self.prepare_s = prepare_s
        self.work_s = work_s
        self.sent: list[bool] = []
        self.asked = threading.Event()
        """Set once the handler has asked whether it may send."""

    def invoke(self, arguments: Any, ctx: ToolContext) -> ToolOutput:
        time.sleep(self.prepare_s)
        allowed = ctx.mark_sent()
        self.sent.append(allowed)
        self.asked.set()
        if not allowed:
            raise ToolCancelledError("not sent")
        if ctx.wait(self.work_s):
            raise ToolCancelledError("stopped")
        return ToolOutput(text="worked")


def _run_prepared(tool: Tool, *, cancel_after_s: float | None = None) -> tuple[Any, list[int]]:
    interrupts: list[int] = []
    started = time.monotonic()
    runner = run_tool(
        tool,
        {},
        {"call_id": "c", "task_id": "t", "turn": 1},
        timeout_s=tool.timeout_s or 1.0,
        should_cancel=lambda: (
            cancel_after_s is not None and time.monotonic() - started > cancel_after_s
        ),
        interrupt=lambda: interrupts.append(1),
    )
    while True:
        try:
            next(runner)
        except StopIteration as stop:
            return stop.value, interrupts


def test_the_call_deadline_starts_when_the_request_is_sent() -> None:
    """Getting ready for 0.8 s does not use up a 0.5 s call timeout. The work after the
    send takes no time: the whole 0.5 s is margin for a loaded machine (with 0.2 s of work
    a full-suite run at a load of 10 on 2 cores overran it once)."""
    tool = _Preparing(prepare_s=0.8, work_s=0.0, setup_s=3.0, physical=True)
    outcome, interrupts = _run_prepared(tool)
    assert outcome.output.text == "worked" and not outcome.timed_out
    assert interrupts == [] and tool.sent == [True]


def test_a_request_not_sent_within_the_setup_time_is_not_executed() -> None:
    tool = _Preparing(prepare_s=0.8, work_s=0.1, setup_s=0.3, physical=True)
    outcome, interrupts = _run_prepared(tool)
    assert outcome.output.error_kind == "not_sent" and not outcome.output.executed
    assert interrupts == []  # nothing moved, so nothing is interrupted
    assert tool.asked.wait(60)  # the late handler, however late, ...
    assert tool.sent == [False]  # ... was told not to send


def test_a_sent_request_that_overruns_is_timed_out_and_interrupted() -> None:
    tool = _Preparing(prepare_s=0.1, work_s=5.0, setup_s=3.0, physical=True)
    outcome, interrupts = _run_prepared(tool)
    assert outcome.timed_out and outcome.output.error_kind == "outcome_unknown"
    assert outcome.output.executed and interrupts == [1]


def test_cancelling_before_the_request_is_sent_is_not_executed() -> None:
    tool = _Preparing(prepare_s=0.8, work_s=0.1, setup_s=3.0, physical=True)
    outcome, interrupts = _run_prepared(tool, cancel_after_s=0.2)
    assert outcome.cancelled and not outcome.output.executed
    assert interrupts == [] and "not sent" in outcome.output.text


def test_the_send_gate_never_reports_a_sent_request_as_not_sent() -> None:
    """Attack the race: getting ready takes as long as the setup bound, so the handler's
    mark_sent and the watcher's deadline meet. Whatever wins, the result and what the
    handler was allowed to do agree: "not sent" only when the request never left."""
    outcomes = {"sent": 0, "not_sent": 0}
    for _ in range(40):
        tool = _Preparing(prepare_s=0.05, work_s=0.0, setup_s=0.05, physical=True)
        outcome, interrupts = _run_prepared(tool)
        deadline = time.monotonic() + 2.0
        while not tool.sent and time.monotonic() < deadline:
            time.sleep(0.005)
        (allowed,) = tool.sent
        if outcome.output.error_kind == "not_sent":
            assert not allowed and not outcome.output.executed and interrupts == []
            outcomes["not_sent"] += 1
        else:
            assert allowed and outcome.output.text == "worked", outcome.output
            outcomes["sent"] += 1
    assert sum(outcomes.values()) == 40
