"""The vocabulary of one MCP server: its states, status, errors and shared time bounds.

It names the sessions a server runs (:class:`Running`, :class:`Launch`) and the bounds
every part of the server code shares.

These are the words the other server modules (``server``, ``health``, ``serving``,
``replies``) and the manager speak; they live apart so that none of those has to import
another to name a state or a bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent import futures
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import anyio

from harness.errors import HarnessError
from harness.mcp.client_session import Session
from harness.mcp.stderr_log import RedactedLog

__all__ = [
    "MARGIN_S",
    "POLL_S",
    "PROBE_TIMEOUT_S",
    "STOP_TIMEOUT_S",
    "Launch",
    "MCPServerError",
    "Running",
    "ServerState",
    "ServerStatus",
    "ServerUnavailable",
]

POLL_S = 0.02
"""How often a waiting call checks for cancellation."""
MARGIN_S = 2.0
"""Extra wait beyond a loop-side deadline before the caller stops waiting by itself."""
STOP_TIMEOUT_S = 8.0
"""Upper bound of the SDK's own shutdown (stdin closed, SIGTERM, SIGKILL, each bounded)."""
PROBE_TIMEOUT_S = 5.0
"""Longest a liveness probe of a suspect server may take (capped by call_timeout_s)."""


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
class Running:
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
class Launch:
    """One start of the server in progress (several servers start in parallel)."""

    token: str
    ready: futures.Future[tuple[Session, anyio.Event, list[dict[str, Any]]]]
    task: futures.Future[None]
    errlog: RedactedLog
    log_offset: int
    started: float
