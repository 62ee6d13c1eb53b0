"""``harness console`` as a user starts it: a real process with the default deployment (the
PyBullet tabletop in real time, the offline planner). A task started from the page runs in
the command's main thread; Ctrl-C in the terminal cancels it while a page is still open;
Ctrl-C while idle leaves with exit code 0. The printed link works once; the next is
printed when it has been used."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.console_support import exchange, http, post_action, sse

pytest.importorskip("pybullet")
ROOT = Path(__file__).resolve().parents[2]


def _lines_until(process: subprocess.Popen[str], wanted: str) -> list[str]:
    """The process's output lines up to the first holding ``wanted`` (read on a thread:
    the hang guard of 120 s fails the test instead of blocking it)."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if wanted in line:
                found.set()
                return

    threading.Thread(target=read, daemon=True).start()
    assert found.wait(120), "".join(lines)
    return lines


def test_the_command_serves_tasks_and_the_terminal_cancels_them(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HARNESS_CONSOLE_TOKEN": ""}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "console",
            "--config",
            str(ROOT / "configs" / "default.yaml"),
            "--port",
            "0",
            "-s",
            f"run.store={tmp_path / 'store'}",
            "-s",
            f"memory.path={tmp_path / 'memory'}",  # never the checkout's
            "-s",
            "driver.real_time_factor=1.0",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("operator console: http://127.0.0.1:"), first
        link = first.split(": ", 1)[1].strip()
        base = link.split("?")[0].rstrip("/")
        assert http(f"{base}/")[0] == 401  # the page needs the link's secret
        status, headers = exchange(link)
        assert status == 303
        session = {"Cookie": headers["set-cookie"].split(";", 1)[0]}
        assert exchange(link)[0] == 401  # spent
        status, _, page = http(f"{base}/", headers=session)
        assert status == 200 and b"STOP" in page
        seen: list[str] = []
        with sse(f"{base}/api/stream?client=cli-op", timeout=30, headers=session) as stream:
            assert next(stream)[1]["role"] == "operator"
            status, body = post_action(
                base,
                "/api/start",
                {"client": "cli-op", "instruction": "put the red cube in the tray"},
                **session,
            )
            assert status == 200, body
            for name, data in stream:
                if name != "event":
                    continue
                seen.append(data["type"])
                if data["type"] == "tool_call" and data["physical"]:
                    process.send_signal(signal.SIGINT)  # Ctrl-C in the terminal, mid-motion
                if data["type"] == "done":
                    assert data["status"] == "cancelled"
                    break
        assert "tool_call" in seen
        # Idle again (waiting for the next task from the page) once the command has said
        # the task ended: Ctrl-C leaves. (A Ctrl-C while the task is still being wound
        # up is a second Ctrl-C during the task, which interrupts: that is not this test.)
        lines = _lines_until(process, "task cancelled from the terminal")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
        out = "".join(lines) + out
        assert process.returncode == 0, err
        assert "task cancelled from the terminal" in out
        assert "link used; the next one-time link: http://127.0.0.1:" in out
        assert "Traceback" not in err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
