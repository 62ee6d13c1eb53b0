"""What one MCP server's failures say, to the model and to the operator.

The error results the model reads and the server messages the operator reads (with the
last lines of the server's stderr).

The wording of every refusal, timeout and crash lives here, apart from the state machine
that decides when each one applies (``health``, ``server``): the texts are long and
change for their readers' sake, the decisions for the protocol's.
:class:`~harness.mcp.server.ServerConnection` owns one :class:`ServerReplies` (``_replies``)
and hands it the state each text reports.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from harness.config import MCPServerConfig
from harness.mcp.client_session import Endpoint, describe, leaf_error
from harness.mcp.status import ServerState
from harness.mcp.stderr_log import RedactedLog
from harness.tools import ToolOutput

__all__ = ["ServerReplies", "output_schema"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SDK_INVALID_OUTPUT = "Invalid structured content returned by tool"
_SDK_MISSING_OUTPUT = "has an output schema but did not return structured content"
"""How the SDK (1.x and 2.x) says a result failed its tool's outputSchema."""


class ServerReplies:
    """The texts of one server's failures; given the connection's state, never changing it."""

    def __init__(self, name: str, config: MCPServerConfig, *, endpoint: Endpoint, log_path: Path):
        self.name = name
        self.config = config
        self._endpoint = endpoint
        self._log_path = log_path

    @property
    def remote(self) -> bool:
        return self._endpoint.transport != "stdio"

    def where(self) -> str:
        if self._endpoint.transport == "stdio":
            return " ".join([self._endpoint.command or "", *self._endpoint.args]).strip()
        return self._endpoint.url or ""

    def stderr_tail(
        self, stderr: RedactedLog | None, offset: int, *, last_start_only: bool = False
    ) -> str:
        """The last lines the server wrote to stderr (after ``offset``), for a message."""
        if stderr is not None:
            stderr.sync()  # what the server wrote before it died reaches the file first
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

    def unavailable_text(self, state: ServerState, last_error: str, reconnect_at: float) -> str:
        base = f"mcp server '{self.name}' is unavailable"
        if state is ServerState.FAILED:
            return (
                f"{base}: given up after {self.config.max_restarts} restarts in a row "
                f"(max_restarts={self.config.max_restarts}); last error: {last_error}"
            )
        if state is ServerState.CLOSED:
            return f"{base}: the harness closed it"
        if self.remote and reconnect_at > 0:
            wait = max(reconnect_at - time.monotonic(), 0.0)
            return (
                f"{base} (not sent): {last_error}; the next attempt to reconnect is in {wait:.1f} s"
            )
        return f"{base} (not sent): {last_error}"

    def restarts_left(self, restarts_in_a_row: int) -> str:
        left = self.config.max_restarts - restarts_in_a_row
        if left <= 0:
            return "It will not be restarted again (max_restarts reached)."
        return f"It will be restarted on the next call ({left} restart(s) left)."

    def timeout_output(self, tool: str, timeout: float, *, physical: bool) -> ToolOutput:
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

    def lost_session_output(self, tool: str, *, physical: bool) -> ToolOutput:
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

    def rejected_output(self, tool: str, exc: BaseException) -> ToolOutput:
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

    def unreached_output(self, tool: str, detail: str) -> ToolOutput:
        """A call whose connection could not be opened: it never reached the server
        (``detail``: the last error and the restarts left)."""
        return ToolOutput.error(
            f"{tool} was not executed: mcp server '{self.name}' could not be reached "
            f"(it was already down when the call was made): {detail}",
            "server_unavailable",
            executed=False,
        )

    def crash_output(self, tool: str, detail: str, *, physical: bool) -> ToolOutput:
        if physical:
            return ToolOutput.error(
                f"mcp server '{self.name}' stopped during {tool}; outcome unknown: observe "
                f"before acting again. Cause: {detail}",
                "outcome_unknown",
            )
        return ToolOutput.error(
            f"mcp server '{self.name}' stopped during {tool}: {detail}", "server_crashed"
        )


def output_schema(listing: list[dict[str, Any]], tool: str) -> dict[str, Any] | None:
    """The ``outputSchema`` ``tool`` declares in a ``tools/list`` answer (None: none)."""
    for spec in listing:
        if spec.get("name") == tool:
            schema = spec.get("outputSchema")
            return schema if isinstance(schema, dict) else None
    return None
