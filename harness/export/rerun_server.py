"""Rerun's web viewer and gRPC server, bound to the address we choose.

``rerun-sdk``'s in-process servers (``serve_grpc``, ``serve_web_viewer``) take a port but no
address and listen on every interface, so a live task's camera frames and events would be
reachable from other hosts. The ``rerun`` program bundled in the same wheel takes
``--bind``: :class:`RerunServer` runs it (``--serve-web``: a gRPC proxy that buffers the
recording for late viewers, up to a memory limit, plus the viewer's HTTP server; offline)
and the recording connects to it like to any running viewer.

The process is ours alone: it is stopped by :meth:`RerunServer.close`, and on Linux the
kernel stops it too if this process dies first (``PR_SET_PDEATHSIG``; the kernel watches
the thread that started it, so start it from a thread that lives as long as the viewer,
as the CLI's main thread does).
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

__all__ = ["LOOPBACK", "RerunServer", "is_loopback_address", "rerun_program"]

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 20.0
"""How long the program gets to listen on both ports (a busy machine: a few seconds)."""
STOP_TIMEOUT_S = 5.0
SERVER_MEMORY_LIMIT = "1GiB"
"""What the gRPC proxy keeps for viewers that connect late (the oldest is dropped first)."""
_PR_SET_PDEATHSIG = 1


def is_loopback_address(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def rerun_program() -> Path:
    """The ``rerun`` executable shipped inside ``rerun-sdk`` (its ``rerun_cli`` package)."""
    import rerun_cli

    folder = Path(rerun_cli.__file__).parent
    suffix = ".exe" if sys.platform.startswith("win") else ""
    candidates = [folder / "Rerun.app" / "Contents" / "MacOS" / "Rerun", folder / "rerun"]
    for candidate in candidates:
        path = candidate.with_name(candidate.name + suffix)
        if path.exists():
            return path
    raise RuntimeError(f"rerun-sdk's bundled rerun program is missing from {folder}")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class RerunServer:
    """The bundled ``rerun --serve-web`` listening on ``host`` (127.0.0.1 by default)."""

    def __init__(self, *, web_port: int, grpc_port: int, host: str = LOOPBACK) -> None:
        self.host = host
        self.web_port = web_port
        self.grpc_port = grpc_port
        command = [
            str(rerun_program()),
            "--serve-web",
            "--bind",
            host,
            "--port",
            str(grpc_port),
            "--web-viewer-port",
            str(web_port),
            "--server-memory-limit",
            SERVER_MEMORY_LIMIT,
        ]
        # Its log goes to a file (a pipe nobody reads would fill and stall it); read back
        # only to say why it failed to start.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "RERUN_TELEMETRY_ENABLED": "false"},
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        try:
            self._wait_listening()
        except BaseException:
            self.close()
            raise

    @property
    def reach_host(self) -> str:
        """The address a client on this machine connects to."""
        if self.host in ("0.0.0.0", "::", ""):
            return LOOPBACK
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def grpc_url(self) -> str:
        return f"rerun+http://{self.reach_host}:{self.grpc_port}/proxy"

    @property
    def viewer_url(self) -> str:
        """The web viewer, told to connect to the gRPC proxy."""
        return f"http://{self.reach_host}:{self.web_port}/?url={quote(self.grpc_url, safe='')}"

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        pending = {self.web_port, self.grpc_port}
        while pending:
            if self.process.poll() is not None:
                self._log.seek(0)
                error = self._log.read().decode(errors="replace")
                last = (error.strip().splitlines() or ["(no message)"])[-1]
                raise RuntimeError(f"the Rerun viewer exited at start: {last}")
            for port in list(pending):
                with socket.socket() as probe:
                    probe.settimeout(0.2)
                    if probe.connect_ex((self.reach_host.strip("[]"), port)) == 0:
                        pending.discard(port)
            if pending and time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Rerun viewer did not listen on port(s) {sorted(pending)} within "
                    f"{START_TIMEOUT_S:.0f} s"
                )
            if pending:
                time.sleep(0.05)

    def close(self) -> None:
        process = self.process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._log.close()
