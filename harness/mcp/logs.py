"""Everything one MCP server says outside its results goes to its own ``<name>.log``.

Three sources end up there: the server process's stderr (stdio servers; the SDK hands the
file to the subprocess), the server's log notifications (``notifications/message``), and
the SDK's own warnings about that server's connection ("Session termination failed: 400").
The SDK logs through the standard ``logging`` module without saying which server a record
is about, so each server's tasks run with a context variable naming its log, and one
handler on the ``mcp`` logger routes records by it. Records raised outside any server's
tasks go on to the ``harness.mcp`` logger (so they are not lost, and not printed raw).

Every line is redacted (the session's redactor) before it reaches the file; the stderr of
a stdio server gets there through :class:`harness.mcp.stderr_log.RedactedLog`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from harness.redact import Redactor

__all__ = ["ServerLog", "install_sdk_log_router"]

LOG_LINE_MAX_CHARS = 4000
"""A log notification carrying a huge payload cannot grow the file by more than this."""

_current: ContextVar[ServerLog | None] = ContextVar("harness_mcp_server_log", default=None)
_install_lock = threading.Lock()
_fallback = logging.getLogger("harness.mcp")


class ServerLog:
    """Appends lines to one server's log file (thread-safe; opened per write, because
    writes are rare and the file must stay readable while the server runs), redacted."""

    def __init__(self, path: Path, *, redactor: Redactor | None = None) -> None:
        self.path = path
        self._redactor = redactor or Redactor()
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        text = self._redactor.text(line.rstrip("\n"))
        if len(text) > LOG_LINE_MAX_CHARS:
            text = text[:LOG_LINE_MAX_CHARS] + f"... ({len(line)} characters)"
        with self._lock, contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")

    def notification(self, level: str, logger: str | None, data: Any) -> None:
        """One ``notifications/message`` from the server."""
        body = data if isinstance(data, str) else json.dumps(data, default=str)
        self.write(f"{_stamp()} [{level}] {logger or 'server'}: {body}")

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """SDK log records raised inside this block (and the tasks it starts) go here."""
        token = _current.set(self)
        try:
            yield
        finally:
            _current.reset(token)


class _SdkLogRouter(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        target = _current.get()
        message = record.getMessage()
        if target is None:
            _fallback.log(record.levelno, "mcp sdk (%s): %s", record.name, message)
            return
        target.write(f"{_stamp()} [sdk {record.levelname.lower()}] {record.name}: {message}")


_router = _SdkLogRouter()


def install_sdk_log_router() -> None:
    """Attach the router to the ``mcp`` logger once (idempotent). With a handler there, the
    SDK's warnings no longer fall through to Python's last-resort handler on stderr."""
    with _install_lock:
        sdk = logging.getLogger("mcp")
        if _router not in sdk.handlers:
            sdk.addHandler(_router)


def _stamp() -> str:
    return time.strftime("%H:%M:%S")
