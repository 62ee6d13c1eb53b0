"""The command line skeleton: run (timeline and --json), check, and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main

SCRIPTED = """
model:
  provider: scripted
  name: scripted
  options:
    responses:
      - tool: {name: update_task_notes, arguments: {phase: working}}
      - text: "all done"
embodiment: null
driver: null
run: {store: null, max_turns: 5}
memory: {enabled: false}
"""


@pytest.fixture
def scripted_config(tmp_path: Path) -> Path:
    path = tmp_path / "scripted.yaml"
    path.write_text(SCRIPTED)
    return path


def test_run_json_prints_one_event_per_line(
    scripted_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(scripted_config), "--json", "tidy up"])
    lines = capsys.readouterr().out.strip().splitlines()
    events = [json.loads(line) for line in lines]
    assert code == 0
    assert events[0]["type"] == "task_started" and events[-1]["type"] == "done"
    assert events[-1]["status"] == "completed" and events[-1]["report"] == "all done"
    assert sum(1 for e in events if e["type"] == "done") == 1


def test_run_timeline_is_readable(
    scripted_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--config", str(scripted_config), "tidy up"]) == 0
    out = capsys.readouterr().out
    assert "tidy up" in out and "update_task_notes" in out and "all done" in out


def test_not_completed_exits_1(scripted_config: Path) -> None:
    code = main(["run", "--config", str(scripted_config), "--max-turns", "1", "--json", "x"])
    assert code == 1


def test_config_error_exits_2_and_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("run:\n  max_turnz: 3\n")
    assert main(["run", "--config", str(bad), "x"]) == 2
    assert "run.max_turnz: unknown key" in capsys.readouterr().err
    assert main(["run", "--config", str(bad), "--model", "nosuch:thing", "x"]) == 2


def test_check_reports_what_it_found(
    scripted_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--config", str(scripted_config)]) == 0
    out = capsys.readouterr().out
    assert "context window" in out and "update_task_notes" in out
