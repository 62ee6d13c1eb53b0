"""One HTTP attempt that a cancel or a deadline can always cut short.

A blocking SDK call cannot be interrupted from the thread that makes it: while the server
thinks before its first byte, or trickles SSE comments, the caller's thread sits in a
socket read and never gets to ask ``cancelled()``. So :func:`run_abortable` moves the SDK
call to a worker thread and lets the caller wait on a queue with a short timeout: every
:data:`~harness.providers.retry.CANCEL_POLL_S` it asks ``cancelled()`` and checks the
deadline, whatever the server is (or is not) sending.

On cancel or deadline the caller returns at once and the attempt is *aborted*: the sockets
the attempt opened are shut down (which wakes a blocked read and tells the server to stop
generating; a plain ``close()`` does neither while another thread reads) and the SDK's
stream is closed. The worker then ends on its own; anything it still produces is dropped.

Sockets are found through httpx's ``trace`` request extension, which reports each new
connection. :func:`abortable_http_client` builds the client that installs it; it keeps no
idle connections, so every model call opens its own connection and a cancel closes exactly
that one, never a neighbour's.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from harness.providers.retry import CANCEL_POLL_S
from harness.providers.tls import shared_tls_context

__all__ = ["Abort", "Cancelled", "DeadlineExceeded", "abortable_http_client", "run_abortable"]

log = logging.getLogger("harness")

T = TypeVar("T")

_current = threading.local()
"""The :class:`Abort` of the attempt running in this (worker) thread, if any."""

CONNECT_EVENTS = frozenset({"connection.connect_tcp.complete", "connection.start_tls.complete"})


class Cancelled(Exception):
    """The caller's ``cancelled()`` said stop; the attempt was aborted."""


class DeadlineExceeded(Exception):
    """The whole response did not arrive within the deadline; the attempt was aborted."""


class Abort:
    """What aborting one attempt has to close: its sockets and its SDK stream."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closers: list[Callable[[], object]] = []
        self.aborted = False

    def add_socket(self, sock: socket.socket) -> None:
        with self._lock:
            if not self.aborted:
                self._sockets.append(sock)
                return
        _shutdown(sock)  # opened after the abort: close it now

    def add_socket_of(self, response: Any) -> None:
        """The socket under an httpx response (its ``network_stream`` extension), for
        clients built without :func:`abortable_http_client`."""
        extensions = getattr(response, "extensions", None) or {}
        stream = extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            self.add_socket(sock)

    def add_closer(self, close: Callable[[], object]) -> None:
        with self._lock:
            if not self.aborted:
                self._closers.append(close)
                return
        _quietly(close)

    def abort(self) -> None:
        with self._lock:
            if self.aborted:
                return
            self.aborted = True
            sockets, closers = list(self._sockets), list(self._closers)
        for sock in sockets:
            _shutdown(sock)
        for close in closers:
            _quietly(close)

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx ``trace`` extension: remember each connection's socket."""
        if event not in CONNECT_EVENTS:
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            self.add_socket(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _quietly(close: Callable[[], object]) -> None:
    try:
        close()
    except Exception:  # the worker may be mid-read on it; it fails there, not here
        log.debug("closing an aborted model stream raised", exc_info=True)


def _install_trace(request: Any) -> None:
    """httpx ``request`` event hook: the attempt running in this thread traces its sockets."""
    abort: Abort | None = getattr(_current, "abort", None)
    if abort is not None:
        request.extensions["trace"] = abort.trace


def abortable_http_client(sdk: Any) -> Any:
    """The SDK's own default httpx client, set up so :func:`run_abortable` can abort a call.

    ``sdk`` is the imported ``openai`` or ``anthropic`` module; both export
    ``DefaultHttpxClient`` and ``DEFAULT_CONNECTION_LIMITS``. The limits are the SDK's,
    minus idle connections (each call connects: see the module docstring); the TLS context
    is the process's shared one (:mod:`harness.providers.tls`).
    """
    defaults = sdk.DEFAULT_CONNECTION_LIMITS
    limits = type(defaults)(max_connections=defaults.max_connections, max_keepalive_connections=0)
    options: dict[str, Any] = {"limits": limits, "event_hooks": {"request": [_install_trace]}}
    context = shared_tls_context(sdk.DefaultHttpxClient)
    if context is not None:
        options["verify"] = context
    return sdk.DefaultHttpxClient(**options)


def run_abortable(
    produce: Callable[[Abort], Iterator[T]],
    *,
    cancelled: Callable[[], bool],
    deadline_s: float,
    poll_s: float = CANCEL_POLL_S,
) -> Iterator[T]:
    """Run ``produce`` in a worker thread and yield what it yields, in order.

    ``produce`` receives the attempt's :class:`Abort` to register its SDK stream with.
    Raises :class:`Cancelled` as soon as ``cancelled()`` is true (polled every ``poll_s``
    while waiting, and before each item is handed over), :class:`DeadlineExceeded` when
    the whole of it takes longer than ``deadline_s``, and whatever ``produce`` raised.
    ``cancelled()`` is only ever called in the caller's thread. If the consumer stops
    early (the generator is closed), the attempt is aborted too.
    """
    abort = Abort()
    inbox: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()

    def work() -> None:
        _current.abort = abort
        try:
            for item in produce(abort):
                if abort.aborted:
                    return
                inbox.put(("item", item))
            inbox.put(("end", None))
        except BaseException as exc:  # handed to the caller, who re-raises it
            inbox.put(("error", exc))
        finally:
            _current.abort = None

    worker = threading.Thread(target=work, name="harness-model-call", daemon=True)
    deadline = time.monotonic() + deadline_s
    finished = False
    worker.start()
    try:
        while True:
            if cancelled():
                raise Cancelled
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded
            try:
                kind, value = inbox.get(timeout=min(poll_s, remaining))
            except queue.Empty:
                continue
            if kind == "end":
                finished = True
                return
            if kind == "error":
                finished = True
                raise value
            if cancelled():
                raise Cancelled
            yield value
    finally:
        if not finished:
            abort.abort()
