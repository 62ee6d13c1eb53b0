"""Waiting on a call that may block, without ever making a cancel wait.

A model call, a summarizer call or a memory helper's call can block for seconds inside a
vendor SDK (or for ever, in a model that never looks at its ``cancelled`` callback). The
helpers here run such a call on a short-lived daemon thread and watch it from the caller's
thread on their own timer, every :data:`POLL_S`:

- the operator's ``cancelled`` callback is only ever called from the caller's thread (a
  callback need not be thread-safe);
- when it turns true the caller stops waiting and gets :class:`Cancelled`; the worker is
  told through the callback it was handed (adapters poll it and close their HTTP response),
  and whatever the call produces afterwards is dropped, never delivered;
- without a callback the call simply runs in the caller's thread.

The runtime's tool calls have their own watcher (:mod:`harness.runtime.phases.tool_thread`), which
also interrupts the robot; these are for calls that only compute.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = [
    "CANCEL_LATENCY_S",
    "POLL_S",
    "Cancelled",
    "call_cancellable",
    "never_cancelled",
    "stream_cancellable",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

POLL_S = 0.1
"""How often the caller's thread checks the operator's cancel while a call is in flight."""
CANCEL_LATENCY_S = 0.15
"""What the README promises: a cancel ends the task within about this long whatever is in
flight (plus the driver's stop time). Every watcher's poll plus its grace stays within it
(tests/runtime/test_cancel_promise.py); ``benchmarks/cancel_latency.py`` measures it."""

_ITEM, _END, _ERROR = "item", "end", "error"


class Cancelled(BaseException):
    """The operator cancelled while ``what`` was in flight; the call was abandoned.

    A ``BaseException``, like ``KeyboardInterrupt`` and ``asyncio.CancelledError``: code
    that catches ``Exception`` to fall back to something else (a rule-based consolidator, a
    deterministic checkpoint, a retry) lets it through, because after a cancel nothing more
    should happen. ``usage`` carries what the calls finished before it had cost, when the
    raiser knows.
    """

    def __init__(self, what: str) -> None:
        super().__init__(f"cancelled by the operator during {what}")
        self.what = what
        self.usage: Any = None


def never_cancelled() -> bool:
    return False


def call_cancellable(
    call: Callable[[Callable[[], bool]], T],
    *,
    cancelled: Callable[[], bool] | None,
    what: str,
    poll_s: float = POLL_S,
) -> T:
    """``call(worker_cancelled)``'s result, or :class:`Cancelled` within ``poll_s`` of the
    operator's cancel. Exceptions of the call are raised in the caller's thread."""
    if cancelled is None:
        return call(never_cancelled)
    results = stream_cancellable(
        lambda worker_cancelled: (call(worker_cancelled),),
        cancelled=cancelled,
        what=what,
        poll_s=poll_s,
    )
    try:
        for result in results:
            return result
    finally:
        results.close()
    raise AssertionError("unreachable: a one-item stream yields its item or raises")


def stream_cancellable(
    open_stream: Callable[[Callable[[], bool]], Iterable[T]],
    *,
    cancelled: Callable[[], bool] | None,
    what: str,
    poll_s: float = POLL_S,
    grace_s: float = 0.0,
) -> Iterator[T]:
    """The items of ``open_stream(worker_cancelled)``, iterated on a worker thread.

    Raises :class:`Cancelled` in the caller's thread within ``poll_s`` of the operator's
    cancel. ``grace_s``: once the cancel is seen, items the worker delivers within this
    many seconds are still yielded and a stream that ends within it ends normally (so an
    answer that was complete at the moment of the cancel is not lost; the caller decides
    what to do with it, seeing ``cancelled()`` true).
    """
    if cancelled is None:
        yield from open_stream(never_cancelled)
        return
    if cancelled():
        raise Cancelled(what)
    abandoned = threading.Event()
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()

    def work() -> None:
        try:
            iterator = iter(open_stream(abandoned.is_set))
            try:
                for item in iterator:
                    if abandoned.is_set():
                        logger.debug("%s: dropped an item that arrived after the cancel", what)
                        return
                    inbox.put((_ITEM, item))
            finally:
                close = getattr(iterator, "close", None)
                if callable(close):
                    close()
            inbox.put((_END, None))
        except BaseException as exc:  # delivered to the caller's thread, or dropped
            if abandoned.is_set():
                logger.debug("%s raised after it was abandoned: %r", what, exc)
            inbox.put((_ERROR, exc))

    worker = threading.Thread(target=work, name=f"call:{what}", daemon=True)
    worker.start()
    deadline: float | None = None
    try:
        while True:
            timeout = poll_s if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                kind, payload = inbox.get(timeout=timeout)
            except queue.Empty:
                if deadline is not None:
                    raise Cancelled(what) from None
                if cancelled():
                    if grace_s <= 0:
                        raise Cancelled(what) from None
                    deadline = time.monotonic() + grace_s
                continue
            if kind == _END:
                return
            if kind == _ERROR:
                raise payload
            yield payload
            if deadline is None and cancelled():
                if grace_s <= 0:
                    raise Cancelled(what)
                deadline = time.monotonic() + grace_s
    finally:
        abandoned.set()
