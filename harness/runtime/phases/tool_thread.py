"""Running one tool call: on a worker thread, watched from the caller's thread.

The loop itself never leaves the caller's thread. A handler runs on a short-lived daemon
thread so that the caller can keep watching: it streams the handler's progress and events
as they happen, enforces the timeout, and notices the operator's cancellation while a
blocking physical action is in flight, interrupting it through the driver's own ``stop()``.
Nothing a handler does can end the loop: an exception, a return value the harness cannot
record (:func:`harness.tools.checked_output`) or a bad ``ctx.emit`` argument becomes an
error result the model reads.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.events import EventBase, ProgressEvent
from harness.tools import (
    EndTask,
    Tool,
    ToolCancelledError,
    ToolContext,
    ToolOutput,
    checked_output,
)

__all__ = ["CallOutcome", "run_tool"]

logger = logging.getLogger(__name__)

POLL_S = 0.02
"""How often the watcher checks cancellation and the deadline while a tool runs."""
GRACE_S = 5.0
"""How long a timed-out handler, or a cancelled physical one (the driver is stopping the
motion), gets to return before it is abandoned."""
CANCEL_GRACE_S = 0.1
"""How long a cancelled handler that moves nothing gets to return (a cancel wins: the
task ends within POLL_S + this, inside :data:`harness.cancel.CANCEL_LATENCY_S`; the
handler's late result is dropped). A tool may declare
its own ``cancel_grace_s``: ``delegate`` waits for its sub-agent, which stops under the
same rules (a physical call of its own gets GRACE_S), to hand back."""


@dataclass
class CallOutcome:
    output: ToolOutput
    duration_s: float
    cancelled: bool = False
    timed_out: bool = False
    end_task: EndTask | None = None
    pending: threading.Thread | None = None
    """The handler's thread when it had not returned by the end of the grace period: the
    call was abandoned, but its tool may still be running."""


def run_tool(
    tool: Tool,
    arguments: Mapping[str, Any],
    ctx_fields: Mapping[str, Any],
    *,
    timeout_s: float,
    should_cancel: Callable[[], bool],
    interrupt: Callable[[], None] | None,
) -> Generator[EventBase, None, CallOutcome]:
    """Run ``tool`` and yield the events it emits; return its :class:`CallOutcome`."""
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
    cancel_event = threading.Event()
    setup_s = getattr(tool, "setup_timeout_s", None)
    gate = _SendGate() if setup_s is not None else None
    ctx = ToolContext(
        cancel_event=cancel_event,
        on_progress=lambda text: inbox.put(("event", ProgressEvent(text=text, source="tool"))),
        on_event=lambda event: inbox.put(("event", event)),
        send_gate=gate.mark_sent if gate is not None else None,
        **ctx_fields,
    )

    def work() -> None:
        try:
            inbox.put(("done", tool.invoke(arguments, ctx)))
        except BaseException as exc:  # reported to the model, never raised in the loop
            inbox.put(("error", exc))

    started = time.monotonic()
    deadline = started + (setup_s if setup_s is not None else timeout_s)
    not_sent = False
    worker = threading.Thread(target=work, name=f"tool:{tool.name}", daemon=True)
    worker.start()

    cancelled = False
    timed_out = False
    abandon_at: float | None = None
    while True:
        try:
            kind, payload = inbox.get(timeout=POLL_S)
        except queue.Empty:
            now = time.monotonic()
            if not cancelled and not timed_out:
                if gate is not None and gate.sent_at is not None:
                    deadline = gate.sent_at + timeout_s  # the call's own time starts here
                if should_cancel():
                    cancelled = True
                elif now >= deadline:
                    timed_out = True
                if cancelled or timed_out:
                    not_sent = gate is not None and gate.expire()
                    cancel_event.set()
                    if interrupt is not None and not not_sent:
                        _safe_interrupt(interrupt)
                    physical = interrupt is not None
                    grace = GRACE_S if timed_out or physical else CANCEL_GRACE_S
                    abandon_at = now + (getattr(tool, "cancel_grace_s", None) or grace)
            elif abandon_at is not None and now >= abandon_at:
                return CallOutcome(
                    output=_abandoned(
                        tool, cancelled=cancelled, timeout_s=timeout_s, not_sent=not_sent
                    ),
                    duration_s=now - started,
                    cancelled=cancelled,
                    timed_out=timed_out,
                    pending=worker,
                )
            continue
        if kind == "event":
            try:
                yield payload
            except GeneratorExit:  # the consumer closed the stream: that is a cancel too
                cancel_event.set()
                raise
            continue
        duration = time.monotonic() - started
        if not_sent:  # whatever the handler says now, its request never left
            return CallOutcome(
                _abandoned(tool, cancelled=cancelled, timeout_s=timeout_s, not_sent=True),
                duration,
                cancelled=cancelled,
                timed_out=timed_out,
            )
        if kind == "done":
            # Whatever the handler returned: a value the store or the model cannot take
            # (tuple keys, a cycle, no JSON form) becomes an error result, never a crash.
            output = checked_output(tool.name, payload)
            if timed_out:
                output = _abandoned(tool, cancelled=False, timeout_s=timeout_s, late=output)
            return CallOutcome(output, duration, cancelled=cancelled, timed_out=timed_out)
        exc: BaseException = payload
        if isinstance(exc, EndTask):
            return CallOutcome(ToolOutput.error(exc.result, "task_ended"), duration, end_task=exc)
        if timed_out:
            # Checked first: a handler that stops cooperatively on its timeout (it raises
            # ToolCancelledError, as ctx.raise_if_cancelled() does) timed out; the
            # operator did not cancel the task.
            return CallOutcome(
                _abandoned(tool, cancelled=False, timeout_s=timeout_s), duration, timed_out=True
            )
        if isinstance(exc, ToolCancelledError) or (cancelled and isinstance(exc, Exception)):
            return CallOutcome(
                ToolOutput.error(
                    f"{tool.name} was interrupted: the task was cancelled", "cancelled"
                ),
                duration,
                cancelled=True,
            )
        return CallOutcome(_exception_output(tool, exc), duration)


def _safe_interrupt(interrupt: Callable[[], None]) -> None:
    try:
        interrupt()
    except Exception:  # the interrupt path must never take the loop down
        logger.exception("interrupting the robot (driver.stop()) failed")


class _SendGate:
    """Decides, once, whether a tool with ``setup_timeout_s`` sent its request in time.

    The handler's ``ctx.mark_sent()`` and the watcher's setup deadline race; the lock makes
    the outcome one of two truths: sent (the call's own deadline starts then), or expired
    (the handler must not send, and the result says it was never executed).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expired = False
        self.sent_at: float | None = None

    def mark_sent(self) -> bool:
        with self._lock:
            if self._expired:
                return False
            if self.sent_at is None:
                self.sent_at = time.monotonic()
            return True

    def expire(self) -> bool:
        """True when the request was not sent before the setup deadline (now it never is)."""
        with self._lock:
            if self.sent_at is not None:
                return False
            self._expired = True
            return True


def _abandoned(
    tool: Tool,
    *,
    cancelled: bool,
    timeout_s: float,
    late: ToolOutput | None = None,
    not_sent: bool = False,
) -> ToolOutput:
    if cancelled and not_sent:
        return ToolOutput.error(
            f"{tool.name} was not sent: the task was cancelled", "cancelled", executed=False
        )
    if cancelled:
        return ToolOutput.error(f"{tool.name} was interrupted: the task was cancelled", "cancelled")
    if not_sent:
        return ToolOutput.error(
            f"{tool.name} was not sent: what runs it was not ready within "
            f"{tool.setup_timeout_s:g} s (nothing was executed)",
            "not_sent",
            executed=False,
        )
    if tool.physical:
        text = (
            f"{tool.name} timed out after {timeout_s:g} s and was stopped; "
            "outcome unknown: observe before acting again"
        )
        return ToolOutput.error(text, "outcome_unknown")
    text = f"{tool.name} timed out after {timeout_s:g} s"
    if late is not None:
        text += f" (it returned late: {late.render()[:200]})"
    return ToolOutput.error(text, "timeout")


def _exception_output(tool: Tool, exc: BaseException) -> ToolOutput:
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {last.name}, line {last.lineno})"
    return ToolOutput.error(f"{tool.name} raised {type(exc).__name__}: {exc}{where}", "exception")
