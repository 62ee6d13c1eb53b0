"""The in-process recording MCP server of :mod:`benchmarks.lib.mcp_recording`, for tests
(skipped where the ``mcp`` extra or uvicorn is missing).

A test module marks itself with :data:`needs_mcp_server` and starts the server with
:func:`recording_server`: the MCP SDK and uvicorn are imported when a server starts, not
when the module is collected, so a worker that collects these tests without running them
does not load the SDK."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from benchmarks.lib.mcp_recording import RecordingServer

__all__ = ["needs_mcp_server", "recording_server"]

needs_mcp_server = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None,
    reason="needs the [mcp] extra and uvicorn",
)


def recording_server(schemas: Mapping[str, Mapping[str, Any]]) -> RecordingServer:
    """A new :class:`~benchmarks.lib.mcp_recording.RecordingServer` offering a tool per
    entry of ``schemas`` (start it with ``with``)."""
    from benchmarks.lib.mcp_recording import RecordingServer

    return RecordingServer(schemas)
