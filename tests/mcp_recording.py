"""The in-process recording MCP server of :mod:`benchmarks.lib.mcp_recording`, for tests
(skipped where the ``mcp`` extra or uvicorn is missing)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp.server.lowlevel")
pytest.importorskip("uvicorn")

from benchmarks.lib.mcp_recording import RecordingServer

__all__ = ["RecordingServer"]
