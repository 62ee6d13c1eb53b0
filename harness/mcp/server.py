"""One MCP server owned by a manager: its sessions' lifecycle, restarts, calls and reads.

States::

    ready --call timed out or was cancelled--> suspect --probe fails--> down
    ready --transport closed / process gone--> down --next call--> restart --> ready
    down  --max_restarts in a row reached--> failed (its tools answer with errors)

A *suspect* server is probed (``tools/list``) before its next call: a slow call is not a
reason to kill a healthy server, but a wedged one is restarted. A call is never sent
twice: the call that found the server crashed reports it (as "outcome unknown" when the
tool is physical), and only the next call starts the server again.

:class:`ServerConnection` is the public face; it extends ``health`` (judging and marking
health, teardown) and owns two parts: its loop side (``serving``) and the texts of its
failures (``replies``); ``status`` holds the states, errors and time bounds. The names
other code imports from here are re-exported.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO, cast

from harness.config import MCPServerConfig, ObservationConfig
from harness.mcp.client_session import (
    Endpoint,
    describe,
    is_connection_error,
)
from harness.mcp.convert import to_tool_output
from harness.mcp.health import ServerHealth
from harness.mcp.logs import ServerLog
from harness.mcp.loop_thread import LoopThread
from harness.mcp.processes import TOKEN_ENV, OwnedProcesses, leader_pid, terminate_token
from harness.mcp.processes import new_token as _new_token
from harness.mcp.replies import ServerReplies, output_schema
from harness.mcp.resources import MAX_REMEMBERED_LINKS, ResourceLinks
from harness.mcp.serving import ServerLoopSide
from harness.mcp.status import (
    MARGIN_S,
    POLL_S,
    PROBE_TIMEOUT_S,
    STOP_TIMEOUT_S,
    Launch,
    MCPServerError,
    Running,
    ServerState,
    ServerStatus,
    ServerUnavailable,
)
from harness.mcp.stderr_log import RedactedLog
from harness.redact import Redactor
from harness.tools import ToolCancelledError, ToolOutput

__all__ = [
    "MARGIN_S",
    "MAX_REMEMBERED_LINKS",
    "POLL_S",
    "PROBE_TIMEOUT_S",
    "RECONNECT_FIRST_DELAY_S",
    "RECONNECT_MAX_DELAY_S",
    "STOP_TIMEOUT_S",
    "MCPServerError",
    "ServerConnection",
    "ServerState",
    "ServerStatus",
    "ServerUnavailable",
]

RECONNECT_FIRST_DELAY_S = 1.0
RECONNECT_MAX_DELAY_S = 30.0
"""After a failed reconnect to a remote server, calls within the delay are not sent; the
delay doubles from the first to the largest value and resets once connected."""


class ServerConnection(ServerHealth):
    """Owns one server for a manager; thread-safe (calls come from tool worker threads).

    Its health checks are :class:`ServerHealth`'s; its loop side and failure texts are
    parts it owns (``_serving``, ``_replies``); restarting is here.
    """

    def __init__(
        self,
        config: MCPServerConfig,
        *,
        endpoint: Endpoint,
        loop: LoopThread,
        owned: OwnedProcesses,
        log_path: Path,
        images: ObservationConfig,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self._endpoint = endpoint
        self._loop = loop
        self._owned = owned
        self._log_path = log_path
        self._log = ServerLog(log_path, redactor=redactor)
        self._stderr: RedactedLog | None = None
        """The current start's stderr (redacted on its way to the same file)."""
        self._redactor = redactor
        self._images = images
        self._lock = threading.RLock()
        self._state = ServerState.STARTING
        self._running: Running | None = None
        self._stopping: list[Running] = []
        self._listing: list[dict[str, Any]] = []
        self._changed = threading.Event()
        self._restarts = 0
        self._restarts_in_a_row = 0
        self._starts = 0
        self._last_error = ""
        self._protocol_version = ""
        self._instructions = ""
        self._reconnect_delay_s = 0.0
        self._reconnect_at = 0.0
        self._links = ResourceLinks()
        self._serving = ServerLoopSide(self.name, config, log=self._log, changed=self._changed)
        self._replies = ServerReplies(self.name, config, endpoint=endpoint, log_path=log_path)

    # ================================================================== lifecycle

    def launch(self) -> Launch:
        """Begin starting the server (several servers start in parallel)."""
        token = _new_token(self.name)
        self._owned.add(token)
        endpoint = self._endpoint
        if endpoint.transport == "stdio":
            endpoint = replace(endpoint, env={**endpoint.env, TOKEN_ENV: token})
        self._starts += 1
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        errlog = self._stderr = RedactedLog(self._log_path, self._redactor)  # closed in finish
        errlog.write(f"--- {self.name} start {self._starts} at {time.strftime('%H:%M:%S')}\n")
        errlog.flush()
        ready: futures.Future[Any] = futures.Future()
        task = self._loop.submit(self._serving.serve, endpoint, cast(TextIO, errlog), ready)
        return Launch(token, ready, task, errlog, errlog.tell(), time.monotonic())

    def finish_launch(self, launch: Launch) -> None:
        """Wait for a launch; raises :class:`MCPServerError` (everything it started is
        ended first)."""
        try:
            remaining = launch.started + self.config.startup_timeout_s - time.monotonic()
            session, stop, tools = launch.ready.result(timeout=max(remaining, 0.0))
        except BaseException as exc:
            reason = describe(exc)
            if isinstance(exc, TimeoutError):
                reason = f"no answer within startup_timeout_s={self.config.startup_timeout_s:g}"
            # End the process first: a server that never answered will not exit when its
            # stdin closes, and the SDK would wait out its grace period before signalling.
            terminate_token(launch.token, grace_s=1.0)
            launch.task.cancel()
            with contextlib.suppress(BaseException):
                launch.task.result(timeout=STOP_TIMEOUT_S)
            terminate_token(launch.token, grace_s=1.0)
            launch.errlog.close()
            self._last_error = (
                f"{reason}{self._replies.stderr_tail(self._stderr, launch.log_offset)}"
            )
            with self._lock:
                if self._state is not ServerState.CLOSED:
                    self._state = ServerState.DOWN
            raise MCPServerError(
                f"mcp server '{self.name}' ({self._replies.where()}) failed to start: "
                f"{self._last_error}"
            ) from None
        launch.errlog.close()
        pid = leader_pid(launch.token) if self._endpoint.transport == "stdio" else None
        running = Running(launch.token, session, stop, launch.task, pid, session.protocol_version)
        with self._lock:
            if self._state is ServerState.CLOSED:  # closed while starting
                self._stopping.append(running)
                self._begin_teardown(running, kill=False)
                return
            if self._listing and tools != self._listing:
                self._changed.set()
            self._listing = tools
            self._running = running
            self._protocol_version = session.protocol_version
            self._instructions = session.instructions
            self._state = ServerState.READY

    def start(self) -> None:
        self.finish_launch(self.launch())

    def begin_close(self) -> None:
        """Ask the session to end (the SDK closes stdin, the server exits)."""
        with self._lock:
            running, state = self._running, self._state
            self._state = ServerState.CLOSED
            self._running = None
            if running is not None:
                self._stopping.append(running)
                kill = state in (ServerState.SUSPECT, ServerState.DOWN)
                self._begin_teardown(running, kill=kill)

    def finish_close(self) -> None:
        """Wait for every session of this server to end; end any survivor by pid."""
        self._await_teardowns()
        if self._stderr is not None:
            self._stderr.sync()  # the log is complete once the manager is closed

    def close(self) -> None:
        self.begin_close()
        self.finish_close()

    def restart(self) -> None:
        """Restart now and forget earlier failures (for control scripts)."""
        with self._lock:
            if self._state is ServerState.CLOSED:
                raise MCPServerError(f"mcp server '{self.name}' is closed")
            if self._running is not None:
                self._stopping.append(self._running)
                self._begin_teardown(self._running, kill=False)
                self._running = None
            self._await_teardowns()
            self._restarts_in_a_row = 0
            self._restarts += 1
            self.start()

    # ================================================================== tools

    @property
    def listing(self) -> list[dict[str, Any]]:
        """The server's tools (wire format) as last listed."""
        return list(self._listing)

    def changed(self) -> bool:
        return self._changed.is_set()

    def refresh_listing(self) -> None:
        """List the tools again after a ``list_changed`` (called between turns)."""
        self._changed.clear()
        with self._lock:
            running = self._running
            if self._state is not ServerState.READY or running is None:
                return  # a restart lists them again
            try:
                tools = self._list_now(running)
            except BaseException as exc:
                self._mark_failed_call(running, exc, f"listing its tools failed: {describe(exc)}")
                return
            self._listing = tools

    # ================================================================== calls

    def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        physical: bool,
        cancelled: Callable[[], bool] = lambda: False,
        on_progress: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
        before_send: Callable[[], bool] | None = None,
        to_operator: Callable[[str], None] | None = None,
    ) -> ToolOutput:
        """Call ``tool`` and convert its result; failures of the server become error
        results. Raises :class:`ToolCancelledError` when ``cancelled()`` turns true (the
        request is cancelled on the server too).

        ``timeout_s`` bounds the call itself (default ``call_timeout_s``); a restart or a
        liveness probe before it has its own bound. ``before_send`` is asked right before
        the request leaves (False: do not send it; see ``ToolContext.mark_sent``).
        ``to_operator`` receives content meant for the user only (see ``to_tool_output``).

        A remote server that lost the session (it restarted) is reconnected and, for a
        tool that is not physical, the call is sent once more on the new session; a
        physical call is reported as not executed instead, for the model to decide.
        """
        timeout = self.config.call_timeout_s if timeout_s is None else timeout_s
        resent = False
        while True:
            try:
                running = self._ensure_ready()
            except ServerUnavailable as exc:
                return ToolOutput.error(str(exc), "server_unavailable", executed=False)
            if cancelled() or (before_send is not None and not before_send()):
                raise ToolCancelledError(f"{tool} was not sent: the task was cancelled")
            unsent = running.session.unsent_calls
            try:
                result = self._send(running, tool, arguments, timeout, cancelled, on_progress)
            except (TimeoutError, futures.CancelledError):
                if running.session.unsent_calls > unsent:  # it never reached the server
                    self._mark_down(running, "the server could not be reached")
                    return self._replies.unreached_output(tool, self.failure_detail())
                if running.broken is not None:
                    self._mark_down(running, f"the connection broke ({running.broken})")
                    return self._replies.crash_output(
                        tool, self.failure_detail(), physical=physical
                    )
                self._mark_suspect(running, f"{tool} did not answer within {timeout:g} s")
                return self._replies.timeout_output(tool, timeout, physical=physical)
            except ToolCancelledError:
                raise
            except Exception as exc:
                if running.session.unsent_calls > unsent:  # it never reached the server
                    self._mark_down(running, f"the server could not be reached ({describe(exc)})")
                    return self._replies.unreached_output(tool, self.failure_detail())
                if is_connection_error(exc) or not self._alive(running):
                    self._mark_down(running, f"the connection closed ({describe(exc)})")
                    return self._replies.crash_output(
                        tool, self.failure_detail(), physical=physical
                    )
                if self._session_lost(running, exc):
                    self._mark_down(running, f"the server lost the session ({describe(exc)})")
                    if physical or resent:
                        return self._replies.lost_session_output(tool, physical=physical)
                    resent = True
                    continue
                self._answered()
                return self._replies.rejected_output(tool, exc)
            self._answered()
            self._links.remember(result)
            return to_tool_output(
                result,
                label=f"{self.name}.{tool}",
                images=self._images,
                output_schema=output_schema(self._listing, tool),
                to_operator=to_operator,
                readable_links=running.session.resources,
            )

    def _send(
        self,
        running: Running,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        cancelled: Callable[[], bool],
        on_progress: Callable[[str], None] | None,
    ) -> dict[str, Any]:
        """One ``tools/call`` on ``running``, waited for here so cancellation is seen."""
        progress = self._serving.progress(tool, on_progress) if on_progress is not None else None
        future = self._loop.submit(
            self._serving.call_tool, running.session, tool, arguments, progress, timeout
        )
        deadline = time.monotonic() + timeout + MARGIN_S
        while not future.done():
            futures.wait([future], timeout=POLL_S)
            if future.done():
                break
            if cancelled():
                future.cancel()
                self._mark_suspect(running, f"a call to {tool} was stopped while it ran")
                raise ToolCancelledError(f"{tool} was stopped while it ran")
            if running.broken is not None or time.monotonic() >= deadline:
                future.cancel()  # the transport is gone: no answer will come
                break
        return future.result(timeout=0)

    def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read`` (wire format); raises :class:`ServerUnavailable` when the
        server cannot take requests, or the SDK's error when it refuses."""
        running = self._ensure_ready()
        timeout = self.config.call_timeout_s
        try:
            return self._loop.call(
                self._serving.read_resource,
                running.session,
                uri,
                timeout,
                timeout_s=timeout + MARGIN_S,
            )
        except BaseException as exc:
            if is_connection_error(exc) or not self._alive(running):
                self._mark_down(running, f"the connection closed ({describe(exc)})")
            raise

    def has_links(self) -> bool:
        return bool(self._links)

    def linked(self, uri: str) -> int:
        """How recently this server returned a link to ``uri`` (0: never; larger: later)."""
        return self._links.recency(uri)

    @property
    def instructions(self) -> str:
        """What the server asked clients to tell the model (empty when nothing)."""
        return self._instructions

    @property
    def serves_resources(self) -> bool:
        with self._lock:
            running = self._running
        return running is not None and running.session.resources

    # ================================================================== restarts

    def _restart_locked(self) -> None:
        if self._replies.remote:
            self._reconnect_locked()
            return
        limit = self.config.max_restarts
        if self._restarts_in_a_row >= limit:
            self._state = ServerState.FAILED
            return
        self._restarts_in_a_row += 1
        self._restarts += 1
        self._await_teardowns()
        try:
            self.start()
        except MCPServerError as exc:
            reason = str(exc).split(": ", 1)[-1]
            self._last_error = f"restart {self._restarts_in_a_row} of {limit} failed: {reason}"

    def _reconnect_locked(self) -> None:
        """Connect to a remote server again. A server that is not there yet is tried again
        later, with a growing delay, for as long as the session lasts: failed attempts do
        not use up ``max_restarts``, which counts only reconnects that then failed again
        before a call succeeded (a server that accepts connections but keeps breaking)."""
        limit = self.config.max_restarts
        if self._restarts_in_a_row >= limit:
            self._state = ServerState.FAILED
            return
        now = time.monotonic()
        if now < self._reconnect_at:
            return  # still DOWN: the caller reports when the next attempt is
        self._await_teardowns()
        try:
            self.start()
        except MCPServerError as exc:
            reason = str(exc).split(": ", 1)[-1]
            self._reconnect_delay_s = min(
                max(self._reconnect_delay_s * 2, RECONNECT_FIRST_DELAY_S), RECONNECT_MAX_DELAY_S
            )
            self._reconnect_at = time.monotonic() + self._reconnect_delay_s
            self._last_error = f"reconnecting failed: {reason}"
            return
        self._restarts_in_a_row += 1
        self._restarts += 1
        self._reconnect_delay_s = 0.0
        self._reconnect_at = 0.0
