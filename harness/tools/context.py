"""What a running handler can reach: its call, progress, events, cancellation, and the
two ways a handler stops early (:class:`ToolCancelledError`, :class:`EndTask`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, get_args

from harness.events import DoneEvent, Event, EventBase

__all__ = ["EndTask", "ToolCancelledError", "ToolContext"]

_EVENT_TYPES: tuple[type[EventBase], ...] = get_args(get_args(Event)[0])
"""Every event class a stream may carry (the members of :data:`harness.events.Event`)."""


class ToolCancelledError(Exception):
    """Raised inside a tool (by ``ctx.raise_if_cancelled()``) when the task is cancelled."""


class EndTask(Exception):
    """Raised by a handler to end the task after its result is recorded.

    ``query_user`` uses it when the person does not answer in time: the task cannot go on
    without the answer, and the reason must be clear in the ``done`` event.
    """

    def __init__(self, status: str, reason: str, *, result: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.result = result or reason


class ToolContext:
    """Per-call services for a running handler.

    ``cancelled`` turns true when the operator cancels the task or the call times out; a
    long-running handler should poll it (or call ``raise_if_cancelled``) and stop. Physical
    tools are additionally interrupted through the driver's own ``stop()``.
    """

    def __init__(
        self,
        *,
        call_id: str = "",
        task_id: str = "",
        turn: int = 0,
        cancel_event: threading.Event | None = None,
        on_progress: Callable[[str], None] | None = None,
        on_event: Callable[[Any], None] | None = None,
        send_gate: Callable[[], bool] | None = None,
    ) -> None:
        self.call_id = call_id
        self.task_id = task_id
        self.turn = turn
        self._cancel = cancel_event or threading.Event()
        self._on_progress = on_progress
        self._on_event = on_event
        self._send_gate = send_gate

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def raise_if_cancelled(self) -> None:
        if self._cancel.is_set():
            raise ToolCancelledError("cancelled")

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True early if the call was cancelled."""
        return self._cancel.wait(seconds)

    def report_progress(self, text: str) -> None:
        """Surface progress text to the operator (a ``progress`` event) without a turn."""
        if self._on_progress is not None and text:
            self._on_progress(text)

    def emit(self, event: Any) -> None:
        """Emit a harness event from inside a tool (it reaches the stream promptly).

        Raises TypeError (in the handler, which then reports it like any exception) for
        anything that is not one of the harness's events, for a ``done`` event (a task has
        exactly one, and a tool ends its task by raising :class:`EndTask`), and for an
        event that cannot be serialised.
        """
        if not isinstance(event, _EVENT_TYPES) or isinstance(event, DoneEvent):
            what = type(event).__name__
            raise TypeError(
                f"ctx.emit() takes a harness event (harness.events), not {what}"
                + (
                    "; a tool ends its task by raising EndTask"
                    if isinstance(event, DoneEvent)
                    else ""
                )
            )
        try:
            event.model_dump_json()
        except Exception as exc:
            raise TypeError(
                f"ctx.emit(): the {type(event).__name__} cannot be serialised: {exc}"
            ) from None
        if self._on_event is not None:
            self._on_event(event)

    def mark_sent(self) -> bool:
        """Say that the request is about to leave (for a tool with ``setup_timeout_s``).

        The call's own ``timeout_s`` starts now. False means the time allowed for getting
        ready has already run out: the request must not be sent (it is reported as not
        executed).
        """
        return self._send_gate() if self._send_gate is not None else not self.cancelled
