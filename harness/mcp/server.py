"""One MCP server owned by a manager: its session, its health, its restarts.

States::

    ready --call timed out or was cancelled--> suspect --probe fails--> down
    ready --transport closed / process gone--> down --next call--> restart --> ready
    down  --max_restarts in a row reached--> failed (its tools answer with errors)

A *suspect* server is probed (``tools/list``) before its next call: a slow call is not a
reason to kill a healthy server, but a wedged one is restarted. A call is never sent
twice: the call that found the server crashed reports it (as "outcome unknown" when the
tool is physical), and only the next call starts the server again.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, TextIO, cast

import anyio

from harness.config import MCPServerConfig, ObservationConfig
from harness.errors import HarnessError
from harness.mcp.convert import to_tool_output
from harness.mcp.logs import ServerLog
from harness.mcp.loop_thread import LoopThread
from harness.mcp.processes import TOKEN_ENV, OwnedProcesses, find_processes, is_alive, leader_pid
from harness.mcp.processes import new_token as _new_token
from harness.mcp.processes import terminate as _terminate
from harness.mcp.session import (
    INVALID_REQUEST,
    Endpoint,
    Session,
    describe,
    is_connection_error,
    leaf_error,
    open_session,
)
from harness.mcp.stderr_log import RedactedLog
from harness.redact import Redactor
from harness.tools import ToolCancelledError, ToolOutput

__all__ = ["MCPServerError", "ServerConnection", "ServerState", "ServerStatus"]

POLL_S = 0.02
"""How often a waiting call checks for cancellation."""
MARGIN_S = 2.0
"""Extra wait beyond a loop-side deadline before the caller stops waiting by itself."""
STOP_TIMEOUT_S = 8.0
"""Upper bound of the SDK's own shutdown (stdin closed, SIGTERM, SIGKILL, each bounded)."""
PROBE_TIMEOUT_S = 5.0
"""Longest a liveness probe of a suspect server may take (capped by call_timeout_s)."""
MAX_REMEMBERED_LINKS = 1000
"""Resource links remembered per server (so read_resource knows whom to ask)."""
RECONNECT_FIRST_DELAY_S = 1.0
RECONNECT_MAX_DELAY_S = 30.0
"""After a failed reconnect to a remote server, calls within the delay are not sent; the
delay doubles from the first to the largest value and resets once connected."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SDK_INVALID_OUTPUT = "Invalid structured content returned by tool"
_SDK_MISSING_OUTPUT = "has an output schema but did not return structured content"
"""How the SDK (1.x and 2.x) says a result failed its tool's outputSchema."""


class MCPServerError(HarnessError):
    """An MCP server could not be started or reached; the message names the server, its
    command and the last lines of its stderr.

    When a manager's start fails, ``failures`` maps each server that failed to why, and
    ``started`` each server that did start (and was closed again) to its tool count.
    """

    def __init__(
        self,
        message: str,
        *,
        failures: Mapping[str, str] | None = None,
        started: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.failures = dict(failures or {})
        self.started = dict(started or {})


class ServerUnavailable(Exception):
    """The server cannot take calls now; the message is written for the model."""


class ServerState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    SUSPECT = "suspect"
    DOWN = "down"
    FAILED = "failed"
    CLOSED = "closed"


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server for ``harness check`` and control scripts."""

    name: str
    transport: str
    state: ServerState
    pid: int | None
    protocol_version: str
    tools: list[str]
    restarts: int
    last_error: str

    @property
    def ok(self) -> bool:
        return self.state in (ServerState.READY, ServerState.SUSPECT)


@dataclass
class _Running:
    """One started session of the server."""

    token: str
    session: Session
    stop: anyio.Event
    task: futures.Future[None]
    pid: int | None
    protocol_version: str

    @property
    def broken(self) -> str | None:
        """Why the transport failed under this session, or None while it works."""
        return self.session.broken


@dataclass
class _Launch:
    token: str
    ready: futures.Future[tuple[Session, anyio.Event, list[dict[str, Any]]]]
    task: futures.Future[None]
    errlog: RedactedLog
    log_offset: int
    started: float


class ServerConnection:
    """Owns one server for a manager; thread-safe (calls come from tool worker threads)."""

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
        self._running: _Running | None = None
        self._stopping: list[_Running] = []
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
        self._links: OrderedDict[str, int] = OrderedDict()
        self._link_count = 0

    # ================================================================== lifecycle

    def launch(self) -> _Launch:
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
        task = self._loop.submit(self._serve, endpoint, cast(TextIO, errlog), ready)
        return _Launch(token, ready, task, errlog, errlog.tell(), time.monotonic())

    def finish_launch(self, launch: _Launch) -> None:
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
            _terminate(find_processes([launch.token]), grace_s=1.0)
            launch.task.cancel()
            with contextlib.suppress(BaseException):
                launch.task.result(timeout=STOP_TIMEOUT_S)
            _terminate(find_processes([launch.token]), grace_s=1.0)
            launch.errlog.close()
            self._last_error = f"{reason}{self._stderr_tail(launch.log_offset)}"
            with self._lock:
                if self._state is not ServerState.CLOSED:
                    self._state = ServerState.DOWN
            raise MCPServerError(
                f"mcp server '{self.name}' ({self._where()}) failed to start: {self._last_error}"
            ) from None
        launch.errlog.close()
        pid = leader_pid(launch.token) if self._endpoint.transport == "stdio" else None
        running = _Running(launch.token, session, stop, launch.task, pid, session.protocol_version)
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
                    return self._unreached_output(tool)
                if running.broken is not None:
                    self._mark_down(running, f"the connection broke ({running.broken})")
                    return self._crash_output(tool, physical=physical)
                self._mark_suspect(running, f"{tool} did not answer within {timeout:g} s")
                return self._timeout_output(tool, timeout, physical=physical)
            except ToolCancelledError:
                raise
            except Exception as exc:
                if running.session.unsent_calls > unsent:  # it never reached the server
                    self._mark_down(running, f"the server could not be reached ({describe(exc)})")
                    return self._unreached_output(tool)
                if is_connection_error(exc) or not self._alive(running):
                    self._mark_down(running, f"the connection closed ({describe(exc)})")
                    return self._crash_output(tool, physical=physical)
                if self._session_lost(running, exc):
                    self._mark_down(running, f"the server lost the session ({describe(exc)})")
                    if physical or resent:
                        return self._lost_session_output(tool, physical=physical)
                    resent = True
                    continue
                self._answered()
                return self._rejected_output(tool, exc)
            self._answered()
            self._remember_links(result)
            return to_tool_output(
                result,
                label=f"{self.name}.{tool}",
                images=self._images,
                output_schema=self._output_schema(tool),
                to_operator=to_operator,
                readable_links=running.session.resources,
            )

    def _send(
        self,
        running: _Running,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        cancelled: Callable[[], bool],
        on_progress: Callable[[str], None] | None,
    ) -> dict[str, Any]:
        """One ``tools/call`` on ``running``, waited for here so cancellation is seen."""
        progress = self._progress(tool, on_progress) if on_progress is not None else None
        future = self._loop.submit(
            self._call_async, running.session, tool, arguments, progress, timeout
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

    def _session_lost(self, running: _Running, exc: BaseException) -> bool:
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

    def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read`` (wire format); raises :class:`ServerUnavailable` when the
        server cannot take requests, or the SDK's error when it refuses."""
        running = self._ensure_ready()
        timeout = self.config.call_timeout_s
        try:
            return self._loop.call(
                self._read_async, running.session, uri, timeout, timeout_s=timeout + MARGIN_S
            )
        except BaseException as exc:
            if is_connection_error(exc) or not self._alive(running):
                self._mark_down(running, f"the connection closed ({describe(exc)})")
            raise

    def has_links(self) -> bool:
        with self._lock:
            return bool(self._links)

    def linked(self, uri: str) -> int:
        """How recently this server returned a link to ``uri`` (0: never; larger: later)."""
        with self._lock:
            return self._links.get(uri, 0)

    def _remember_links(self, result: Mapping[str, Any]) -> None:
        uris = [
            str(block.get("uri"))
            for block in result.get("content") or []
            if block.get("type") == "resource_link" and block.get("uri")
        ]
        with self._lock:
            for uri in uris:
                self._link_count += 1
                self._links[uri] = self._link_count
                self._links.move_to_end(uri)
            while len(self._links) > MAX_REMEMBERED_LINKS:
                self._links.popitem(last=False)

    @property
    def instructions(self) -> str:
        """What the server asked clients to tell the model (empty when nothing)."""
        return self._instructions

    @property
    def serves_resources(self) -> bool:
        with self._lock:
            running = self._running
        return running is not None and running.session.resources

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

    # ================================================================== health

    def _ensure_ready(self) -> _Running:
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
            raise ServerUnavailable(self._unavailable_text())

    def _probe_locked(self, running: _Running) -> None:
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

    def _restart_locked(self) -> None:
        if self._remote:
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

    @property
    def _remote(self) -> bool:
        return self._endpoint.transport != "stdio"

    def _answered(self) -> None:
        with self._lock:
            self._restarts_in_a_row = 0

    def _mark_suspect(self, running: _Running, reason: str) -> None:
        with self._lock:
            if self._running is running and self._state is ServerState.READY:
                self._state = ServerState.SUSPECT
                self._last_error = reason

    def _mark_down(self, running: _Running, reason: str) -> None:
        with self._lock:
            self._down_locked(running, reason, kill=False)

    def _mark_failed_call(self, running: _Running, exc: BaseException, reason: str) -> None:
        if is_connection_error(exc) or not self._alive(running):
            self._mark_down(running, reason)
        else:
            self._mark_suspect(running, reason)

    def _down_locked(self, running: _Running, reason: str, *, kill: bool) -> None:
        if self._running is not running or self._state is ServerState.CLOSED:
            return
        self._state = ServerState.DOWN
        self._running = None
        self._stopping.append(running)
        self._begin_teardown(running, kill=kill)
        self._last_error = reason + self._stderr_tail(0, last_start_only=True)

    def _list_now(self, running: _Running) -> list[dict[str, Any]]:
        """A bounded ``tools/list`` round trip: the liveness probe and the refresh."""
        timeout = self._probe_timeout()
        return self._loop.call(
            self._list_async, running.session, timeout, timeout_s=timeout + MARGIN_S
        )

    def _alive(self, running: _Running) -> bool:
        return running.pid is None or is_alive(running.pid)

    def _probe_timeout(self) -> float:
        return min(self.config.call_timeout_s, PROBE_TIMEOUT_S)

    # ================================================================== teardown

    def _begin_teardown(self, running: _Running, *, kill: bool) -> None:
        if kill and running.pid is not None:
            _terminate([running.pid], grace_s=0.5)
        with contextlib.suppress(Exception):
            self._loop.submit(self._set_event, running.stop)

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
            _terminate(find_processes([running.token]), grace_s=1.0)

    # ================================================================== loop side

    async def _serve(
        self,
        endpoint: Endpoint,
        errlog: TextIO,
        ready: futures.Future[tuple[Session, anyio.Event, list[dict[str, Any]]]],
    ) -> None:
        """The task that owns one session from connect to shutdown."""
        stop = anyio.Event()
        try:
            # The caller's wait (startup_timeout_s) is the authoritative deadline: it ends
            # the process first, then cancels this task. This one only guards the loop.
            deadline = anyio.current_time() + self.config.startup_timeout_s + MARGIN_S
            with anyio.CancelScope(deadline=deadline) as scope:
                async with open_session(
                    endpoint, errlog=errlog, log=self._log, on_tools_changed=self._changed.set
                ) as session:
                    tools = await session.list_tools()
                    scope.deadline = math.inf
                    ready.set_result((session, stop, tools))
                    await stop.wait()
            if not ready.done():
                limit = self.config.startup_timeout_s
                ready.set_exception(TimeoutError(f"no answer within startup_timeout_s={limit:g}"))
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)

    @staticmethod
    async def _set_event(event: anyio.Event) -> None:
        event.set()

    async def _call_async(
        self,
        session: Session,
        tool: str,
        arguments: dict[str, Any],
        progress: Any,
        timeout_s: float,
    ) -> dict[str, Any]:
        with self._log.active(), anyio.fail_after(timeout_s):
            return await session.call_tool(tool, arguments, progress=progress)

    async def _list_async(self, session: Session, timeout_s: float) -> list[dict[str, Any]]:
        with self._log.active(), anyio.fail_after(timeout_s):
            return await session.list_tools()

    async def _read_async(self, session: Session, uri: str, timeout_s: float) -> dict[str, Any]:
        with self._log.active(), anyio.fail_after(timeout_s):
            return await session.read_resource(uri)

    def _progress(self, tool: str, report: Callable[[str], None]) -> Any:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
            report(f"{self.name}.{tool}: {message or 'progress'} ({amount})")

        return on_progress

    # ================================================================== messages

    def _where(self) -> str:
        if self._endpoint.transport == "stdio":
            return " ".join([self._endpoint.command or "", *self._endpoint.args]).strip()
        return self._endpoint.url or ""

    def _stderr_tail(self, offset: int, *, last_start_only: bool = False) -> str:
        if self._stderr is not None:
            self._stderr.sync()  # what the server wrote before it died reaches the file first
        try:
            with open(self._log_path, "rb") as log:
                size = log.seek(0, 2)
                log.seek(max(offset, size - 4096))
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        if last_start_only and "\n--- " in text:
            text = text.rsplit("\n--- ", 1)[1].split("\n", 1)[-1]
        lines = [_ANSI.sub("", line).strip() for line in text.splitlines()]
        lines = [line for line in lines if line and not line.startswith("--- ")][-6:]
        if not lines:
            return ""
        tail = " | ".join(lines)
        return f"; stderr: {tail[-600:]}"

    def _unavailable_text(self) -> str:
        base = f"mcp server '{self.name}' is unavailable"
        if self._state is ServerState.FAILED:
            return (
                f"{base}: given up after {self.config.max_restarts} restarts in a row "
                f"(max_restarts={self.config.max_restarts}); last error: {self._last_error}"
            )
        if self._state is ServerState.CLOSED:
            return f"{base}: the harness closed it"
        if self._remote and self._reconnect_at > 0:
            wait = max(self._reconnect_at - time.monotonic(), 0.0)
            return (
                f"{base} (not sent): {self._last_error}; the next attempt to reconnect is in "
                f"{wait:.1f} s"
            )
        return f"{base} (not sent): {self._last_error}"

    def _restarts_left(self) -> str:
        left = self.config.max_restarts - self._restarts_in_a_row
        if left <= 0:
            return "It will not be restarted again (max_restarts reached)."
        return f"It will be restarted on the next call ({left} restart(s) left)."

    def _timeout_output(self, tool: str, timeout: float, *, physical: bool) -> ToolOutput:
        if physical:
            return ToolOutput.error(
                f"{tool} on mcp server '{self.name}' timed out after {timeout:g} s and was "
                "cancelled; outcome unknown: observe before acting again",
                "outcome_unknown",
            )
        return ToolOutput.error(
            f"{tool} on mcp server '{self.name}' timed out after {timeout:g} s and was "
            "cancelled; the server is checked before its next call",
            "timeout",
        )

    def _lost_session_output(self, tool: str, *, physical: bool) -> ToolOutput:
        why = (
            "a physical call is not sent again by the harness: observe, then call it again "
            "if it is still needed"
            if physical
            else "it was sent again on a new session and that failed too"
        )
        return ToolOutput.error(
            f"{tool} was not executed: mcp server '{self.name}' no longer knew the session "
            f"(it restarted) and refused the call; it is reconnected on the next call, {why}",
            "server_unavailable",
            executed=False,
        )

    def _rejected_output(self, tool: str, exc: BaseException) -> ToolOutput:
        message = str(leaf_error(exc))
        if message.startswith(_SDK_INVALID_OUTPUT):
            return ToolOutput.error(
                f"{tool} ran, but mcp server '{self.name}' returned a structured result that "
                f"does not match the tool's declared outputSchema: "
                f"{message[len(_SDK_INVALID_OUTPUT) :].split(': ', 1)[-1]}",
                "invalid_output",
            )
        if _SDK_MISSING_OUTPUT in message:
            return ToolOutput.error(
                f"{tool} ran, but mcp server '{self.name}' returned no structured result "
                "although the tool declares an outputSchema",
                "invalid_output",
            )
        return ToolOutput.error(
            f"mcp server '{self.name}' rejected {tool}: {describe(exc)}", "tool_error"
        )

    def _output_schema(self, tool: str) -> dict[str, Any] | None:
        for spec in self._listing:
            if spec.get("name") == tool:
                schema = spec.get("outputSchema")
                return schema if isinstance(schema, dict) else None
        return None

    def _unreached_output(self, tool: str) -> ToolOutput:
        """A call whose connection could not be opened: it never reached the server."""
        with self._lock:
            detail = f"{self._last_error}. {self._restarts_left()}"
        return ToolOutput.error(
            f"{tool} was not executed: mcp server '{self.name}' could not be reached "
            f"(it was already down when the call was made): {detail}",
            "server_unavailable",
            executed=False,
        )

    def _crash_output(self, tool: str, *, physical: bool) -> ToolOutput:
        with self._lock:
            detail = f"{self._last_error}. {self._restarts_left()}"
        if physical:
            return ToolOutput.error(
                f"mcp server '{self.name}' stopped during {tool}; outcome unknown: observe "
                f"before acting again. Cause: {detail}",
                "outcome_unknown",
            )
        return ToolOutput.error(
            f"mcp server '{self.name}' stopped during {tool}: {detail}", "server_crashed"
        )
