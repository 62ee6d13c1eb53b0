"""How one MCP server's health is judged and acted on, and the status it reports.

Idle checks before a call, the liveness probe of a suspect server, marking a server
suspect or down, and ending the sessions a server leaves behind.

States::

    ready --call timed out or was cancelled--> suspect --probe fails--> down
    ready --transport closed / process gone--> down --next call--> restart --> ready

A slow call is not a reason to kill a healthy server, but a wedged one is restarted.
Restarting itself (and reconnecting a remote server) belongs to the server's lifecycle
in :mod:`harness.mcp.server`, which supplies ``_restart_locked``.
:class:`~harness.mcp.server.ServerConnection` extends :class:`ServerHealth`; both use the
connection's parts: its loop side (``_serving``) and its failure texts (``_replies``).
"""

from __future__ import annotations

import contextlib
import threading
from concurrent import futures
from typing import Any

from harness.config import MCPServerConfig
from harness.mcp.client_session import (
    INVALID_REQUEST,
    Endpoint,
    describe,
    is_connection_error,
    leaf_error,
)
from harness.mcp.loop_thread import LoopThread
from harness.mcp.processes import carries, terminate, terminate_token
from harness.mcp.replies import ServerReplies
from harness.mcp.serving import ServerLoopSide
from harness.mcp.status import (
    MARGIN_S,
    PROBE_TIMEOUT_S,
    STOP_TIMEOUT_S,
    Running,
    ServerState,
    ServerStatus,
    ServerUnavailable,
)
from harness.mcp.stderr_log import RedactedLog

__all__ = ["ServerHealth"]


class ServerHealth:
    """The health state machine of one server (its lock guards every transition)."""

    name: str
    config: MCPServerConfig
    _endpoint: Endpoint
    _lock: threading.RLock
    _state: ServerState
    _last_error: str
    _listing: list[dict[str, Any]]
    _changed: threading.Event
    _restarts_in_a_row: int
    _reconnect_at: float
    _stderr: RedactedLog | None
    _serving: ServerLoopSide
    _replies: ServerReplies
    _loop: LoopThread
    _running: Running | None
    _stopping: list[Running]
    _restarts: int
    _protocol_version: str

    def _restart_locked(self) -> None:
        """Start a server that is down again (see :class:`ServerConnection`)."""
        raise NotImplementedError

    def _ensure_ready(self) -> Running:
        with self._lock:
            running = self._running
            if self._state is ServerState.READY and running and not self._alive(running):
                self._down_locked(running, "the server exited while idle", kill=False)
            elif self._state is ServerState.READY and running and running.broken is not None:
                reason = f"the connection broke while idle ({running.broken})"
                self._down_locked(running, reason, kill=False)
            if self._state is ServerState.SUSPECT and self._running is not None:
                self._probe_locked(self._running)
            if self._state is ServerState.DOWN:
                self._restart_locked()
            if self._state is ServerState.READY and self._running is not None:
                return self._running
            raise ServerUnavailable(self.unavailable_text())

    def _probe_locked(self, running: Running) -> None:
        try:
            tools = self._list_now(running)
        except BaseException as exc:
            reason = (
                f"it did not answer a liveness probe within {self._probe_timeout():g} s "
                f"({describe(exc)}) after: {self._last_error}"
            )
            self._down_locked(running, reason, kill=True)
            return
        if tools != self._listing:
            self._listing = tools
            self._changed.set()
        self._state = ServerState.READY

    def _answered(self) -> None:
        with self._lock:
            self._restarts_in_a_row = 0

    def _mark_suspect(self, running: Running, reason: str) -> None:
        with self._lock:
            if self._running is running and self._state is ServerState.READY:
                self._state = ServerState.SUSPECT
                self._last_error = reason

    def _mark_down(self, running: Running, reason: str) -> None:
        with self._lock:
            self._down_locked(running, reason, kill=False)

    def _mark_failed_call(self, running: Running, exc: BaseException, reason: str) -> None:
        if is_connection_error(exc) or not self._alive(running):
            self._mark_down(running, reason)
        else:
            self._mark_suspect(running, reason)

    def _down_locked(self, running: Running, reason: str, *, kill: bool) -> None:
        if self._running is not running or self._state is ServerState.CLOSED:
            return
        self._state = ServerState.DOWN
        self._running = None
        self._stopping.append(running)
        self._begin_teardown(running, kill=kill)
        self._last_error = reason + self._replies.stderr_tail(self._stderr, 0, last_start_only=True)

    def _list_now(self, running: Running) -> list[dict[str, Any]]:
        """A bounded ``tools/list`` round trip: the liveness probe and the refresh."""
        timeout = self._probe_timeout()
        return self._loop.call(
            self._serving.list_tools, running.session, timeout, timeout_s=timeout + MARGIN_S
        )

    def _alive(self, running: Running) -> bool:
        return running.pid is None or carries(running.pid, running.token)

    def _probe_timeout(self) -> float:
        return min(self.config.call_timeout_s, PROBE_TIMEOUT_S)

    def _session_lost(self, running: Running, exc: BaseException) -> bool:
        """A remote server answered with an error because it no longer knows our session
        (it restarted): the spec's 404 / "Session terminated", or any error that a
        ``tools/list`` on the same session repeats (some servers answer 400)."""
        if self._endpoint.transport == "stdio":
            return False
        error = getattr(leaf_error(exc), "error", None)
        if (
            getattr(error, "code", None) == INVALID_REQUEST
            and "session" in str(getattr(error, "message", "")).lower()
        ):
            return True
        try:
            self._list_now(running)
        except BaseException as probe:
            return not isinstance(leaf_error(probe), TimeoutError)
        return False

    def unavailable_text(self) -> str:
        """Why a call is not sent now (the server's state, last error, next reconnect)."""
        return self._replies.unavailable_text(self._state, self._last_error, self._reconnect_at)

    def failure_detail(self) -> str:
        """The last error and how many restarts are left, for a failed call's text."""
        with self._lock:
            return f"{self._last_error}. {self._replies.restarts_left(self._restarts_in_a_row)}"

    # ================================================================== reports

    def check(self) -> ServerStatus:
        """Probe the server now (a ``tools/list`` round trip) and report its state."""
        with self._lock:
            running = self._running
            if running is not None and self._state in (ServerState.READY, ServerState.SUSPECT):
                try:
                    self._list_now(running)
                except BaseException as exc:
                    self._mark_failed_call(running, exc, f"probe failed: {describe(exc)}")
        return self.status()

    def status(self) -> ServerStatus:
        with self._lock:
            running = self._running
            return ServerStatus(
                name=self.name,
                transport=self.config.transport,
                state=self._state,
                pid=running.pid if running else None,
                protocol_version=self._protocol_version,
                tools=[str(t.get("name")) for t in self._listing],
                restarts=self._restarts,
                last_error=self._last_error,
            )

    # ================================================================== teardown

    def _begin_teardown(self, running: Running, *, kill: bool) -> None:
        if kill and running.pid is not None:
            terminate([running.pid], token=running.token, grace_s=0.5)
        with contextlib.suppress(Exception):
            self._loop.submit(self._serving.set_event, running.stop)

    def _await_teardowns(self) -> None:
        with self._lock:
            stopping, self._stopping = self._stopping, []
        for running in stopping:
            try:
                running.task.result(timeout=STOP_TIMEOUT_S)
            except futures.TimeoutError:
                running.task.cancel()
            except BaseException:  # the session already reported its end
                pass
            terminate_token(running.token, grace_s=1.0)
