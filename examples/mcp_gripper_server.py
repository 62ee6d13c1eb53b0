"""A stand-in for a robot's MCP server (e.g. a ROS bridge): a gripper and a status query.

Run by examples/mcp_tools.py over stdio; needs the `mcp` extra (SDK 2.x or 1.x).
"""

from __future__ import annotations

try:
    from mcp.server import MCPServer
except ImportError:  # SDK 1.x calls it FastMCP
    from mcp.server.fastmcp import FastMCP as MCPServer

server = MCPServer("gripper")
state = {"width_m": 0.08}


@server.tool()
def set_gripper(width_m: float) -> dict[str, float]:
    """Open or close the gripper to a width in metres (0 = closed, 0.08 = fully open)."""
    state["width_m"] = width_m
    return {"width_m": width_m}


@server.tool()
def gripper_status() -> dict[str, float]:
    """The gripper's current opening in metres."""
    return dict(state)


if __name__ == "__main__":
    server.run()
