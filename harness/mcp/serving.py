"""The loop side of one MCP server: the task that owns a session, and bounded requests.

The task owns a session from connect to shutdown; each request is bounded by its
deadline.

Everything here is a coroutine submitted to the :class:`~harness.mcp.loop_thread.LoopThread`;
the rest of the server code runs on the callers' threads and only waits for these. Keeping
the loop side apart keeps it clear which code may block and which must not.
:class:`~harness.mcp.server.ServerConnection` owns one :class:`ServerLoopSide` (``_serving``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any, TextIO

import anyio

from harness.config import MCPServerConfig
from harness.mcp.client_session import Endpoint, Session, open_session
from harness.mcp.logs import ServerLog
from harness.mcp.status import MARGIN_S

__all__ = ["ServerLoopSide"]


class ServerLoopSide:
    """Coroutines of one server's sessions (run on the loop thread, never block it)."""

    def __init__(
        self, name: str, config: MCPServerConfig, *, log: ServerLog, changed: threading.Event
    ) -> None:
        self.name = name
        self.config = config
        self._log = log
        self._changed = changed
        """Set when the server says its tools changed."""

    async def serve(
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
    async def set_event(event: anyio.Event) -> None:
        event.set()

    async def call_tool(
        self,
        session: Session,
        tool: str,
        arguments: dict[str, Any],
        progress: Any,
        timeout_s: float,
    ) -> dict[str, Any]:
        with self._log.active(), anyio.fail_after(timeout_s):
            return await session.call_tool(tool, arguments, progress=progress)

    async def list_tools(self, session: Session, timeout_s: float) -> list[dict[str, Any]]:
        with self._log.active(), anyio.fail_after(timeout_s):
            return await session.list_tools()

    async def read_resource(self, session: Session, uri: str, timeout_s: float) -> dict[str, Any]:
        with self._log.active(), anyio.fail_after(timeout_s):
            return await session.read_resource(uri)

    def progress(self, tool: str, report: Callable[[str], None]) -> Any:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
            report(f"{self.name}.{tool}: {message or 'progress'} ({amount})")

        return on_progress
