"""MCP tool servers owned by the Harness (the ``mcp`` extra; SDK 2.x, or 1.x from 1.20).

Many robot stacks expose their capabilities as MCP servers (ROS bridges, perception
services). The Harness starts the servers its config lists, offers their tools to the
model with their JSON Schemas unchanged, converts their results (text, structured
content, images, errors), keeps one server's crash or hang from affecting the others,
restarts a crashed server on its next call (bounded), follows ``tools/list_changed``
between turns, and ends every subprocess it started when it closes.

Modules: ``manager`` (the tool source the Harness owns), ``offering`` (what a listing
becomes: tools, Resident text), ``tool`` (one MCP tool), ``endpoints`` (how a configured
server is reached), ``server`` (one server's lifecycle, restarts and calls), ``health``
(judging and marking its health), ``serving`` (its loop side), ``replies`` (the texts of
its failures), ``status`` (states, errors, time bounds), ``session`` (the SDK adapter),
``loop_thread`` (the one background event loop), ``processes`` (finding owned processes
by pid), ``convert`` (results), ``resources`` (``read_resource`` and remembered links),
``logs`` and ``stderr_log`` (each server's log) and ``naming`` (names, allow/deny,
physical).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodiment.lazy_names import lazy_names

if TYPE_CHECKING:
    from harness.mcp.convert import to_tool_output
    from harness.mcp.manager import MCPManager, MCPTool
    from harness.mcp.server import MCPServerError, ServerState, ServerStatus

_HOMES = {
    "to_tool_output": "harness.mcp.convert",
    "MCPManager": "harness.mcp.manager",
    "MCPTool": "harness.mcp.manager",
    "MCPServerError": "harness.mcp.server",
    "ServerState": "harness.mcp.server",
    "ServerStatus": "harness.mcp.server",
}
"""Where each name lives: imported on first use, so the run store, which only needs
:mod:`harness.mcp.processes` (the standard library), does not load the manager, the
result conversion or JSON Schema."""

__all__ = [
    "MCPManager",
    "MCPServerError",
    "MCPTool",
    "ServerState",
    "ServerStatus",
    "to_tool_output",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
