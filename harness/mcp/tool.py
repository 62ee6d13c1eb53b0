"""The tool an MCP server serves, as the Harness sees it: :class:`MCPTool`.

Its JSON Schema is the server's, unchanged, and its call goes through the server's
:class:`~harness.mcp.server.ServerConnection` with the task's cancellation, progress and
deadline; it lives apart from the manager that builds it so that the rules of one call
and the rules of the whole set of servers are read separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.config import MCPServerConfig
from harness.events import NotificationEvent
from harness.mcp.server import ServerConnection
from harness.mcp.status import MARGIN_S, PROBE_TIMEOUT_S, STOP_TIMEOUT_S, ServerState, ServerStatus
from harness.tools import Tool, ToolContext, ToolOutput

__all__ = ["MCPTool", "failed_status"]


class MCPTool(Tool):
    """A tool served by an MCP server: its JSON Schema is the server's, unchanged.

    ``invoke`` is overridden (rather than wrapping a handler) so that a server tool may
    have an argument called ``ctx`` and so that cancellation and progress reach the call.
    """

    def __init__(
        self,
        name: str,
        *,
        server: ServerConnection,
        remote_name: str,
        description: str,
        parameters: Mapping[str, Any],
        physical: bool,
        safety: Mapping[str, str] | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        self.annotations = dict(annotations or {})
        """The server's hints about the tool (``readOnlyHint``, ``destructiveHint``, ...)."""
        if self.annotations.get("destructiveHint") is True and not physical:
            description = f"{description} (its server marks it destructive)"
        super().__init__(
            name,
            description,
            self._call_directly,
            parameters=parameters,
            physical=physical,
            # The Harness's deadline is the authoritative one inside a task: a physical
            # call that runs out of time goes through the harness's interrupt path and is
            # reported as "outcome unknown". A restart before the call counts against it.
            timeout_s=server.config.call_timeout_s,
            safety=safety,
            source=f"mcp:{server.name}",
        )
        self.server = server
        self.remote_name = remote_name
        # The call's own deadline starts when it is sent: a liveness probe and a restart
        # of the server before it have their own bound, and a call that never got sent
        # within that bound is reported as not executed (not as timed out).
        self.setup_timeout_s = (
            min(server.config.call_timeout_s, PROBE_TIMEOUT_S)
            + STOP_TIMEOUT_S
            + server.config.startup_timeout_s
            + MARGIN_S
        )

    def _call_directly(self, **arguments: Any) -> ToolOutput:
        return self.server.call(self.remote_name, arguments, physical=self.physical)

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        """Call through the server; the caller's timeout or cancellation (``ctx``) cancels
        the MCP request, and the server's own deadline is only a guard behind it."""
        return self.server.call(
            self.remote_name,
            dict(arguments),
            physical=self.physical,
            cancelled=lambda: ctx.cancelled,
            on_progress=ctx.report_progress,
            timeout_s=self.server.config.call_timeout_s + MARGIN_S,
            before_send=ctx.mark_sent,
            to_operator=lambda text: ctx.emit(NotificationEvent(message=text)),
        )


def failed_status(config: MCPServerConfig, reason: str) -> ServerStatus:
    """The status of a server that never started."""
    return ServerStatus(
        name=config.name,
        transport=config.transport,
        state=ServerState.FAILED,
        pid=None,
        protocol_version="",
        tools=[],
        restarts=0,
        last_error=reason,
    )
