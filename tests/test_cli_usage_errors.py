"""Bad configuration and bad CLI input are usage errors: exit 2 and one line, never a
traceback, never a task that starts and fails (issue 26, items 12 and 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main


def _config(tmp_path: Path, **model: Any) -> Path:
    data = {
        "model": {
            "provider": "scripted",
            "name": "scripted",
            "options": {"responses": [{"text": "done"}]},
            **model,
        },
        "embodiment": None,
        "driver": None,
        "memory": {"enabled": False},
        "run": {"store": str(tmp_path / "store")},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_window_too_small_for_the_tool_definitions_is_exit_2_before_any_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, context_window=1200)
    assert main(["run", "--config", str(path), "--json", "hello"]) == 2
    captured = capsys.readouterr()
    line = _one_line(captured.err)
    assert line.startswith("configuration error: the tool definitions do not fit")
    assert "capability admission" not in captured.out and '"task_started"' not in captured.out
    assert "larger context window" in line
    assert main(["runs", "--store", str(tmp_path / "store")]) in (0, 2)
    assert "task_" not in capsys.readouterr().out  # no task was recorded
