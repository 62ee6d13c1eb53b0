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


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A store with one task that called a tool whose name is longer than the column."""
    path = _config(
        tmp_path,
        options={
            "responses": [
                {"tool": {"name": "update_task_notes", "arguments": {"phase": "looking"}}},
                {"text": "done"},
            ]
        },
    )
    assert main(["run", "--config", str(path), "--json", "look"]) == 0
    return tmp_path / "store"


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "last", "-o", "/dev/null/x.html"],
        ["export", "last", "-o", "/dev/null/x.jsonl"],
        ["report", "last", "-o", "{store}"],
    ],
    ids=["report under a file", "export under a file", "report onto a folder"],
)
def test_an_unwritable_output_is_a_usage_error_in_one_line(
    recorded: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    capsys.readouterr()
    argv = [a.replace("{store}", str(recorded)) for a in argv]
    assert main([*argv, "--store", str(recorded)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"harness {argv[0]}: error: --output ")


def test_an_eval_folder_that_cannot_be_created_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = Path(__file__).resolve().parents[2] / "configs" / "suites" / "tabletop.yaml"
    assert main(["eval", str(suite), "--out", "/dev/null/x"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert (
        line
        == "harness eval: error: --out /dev/null/x: cannot be created: /dev/null is not a folder"
    )


def test_a_typo_in_a_suite_key_leads_with_the_unknown_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        yaml.safe_dump(
            {"suite": "typo", "tasks": [{"name": "pick", "instrucion": "pick it", "seeds": [0]}]}
        ),
        encoding="utf-8",
    )
    assert main(["eval", str(suite), "--out", str(tmp_path / "eval")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert "Traceback" not in "\n".join(lines)
    assert len(lines) == 1  # one problem, one line
    assert "tasks.0.instrucion: unknown key" in lines[0] and "check the spelling" in lines[0]
    assert "did you mean 'instruction'?" in lines[0]
    assert not [line for line in lines if "instruction: required key is missing" in line]


def test_show_never_cuts_a_tool_name(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["show", "last", "--store", str(recorded)]) == 0
    out = capsys.readouterr().out
    results = [line.split() for line in out.splitlines() if "Task Notes updated" in line]
    assert results and results[0][1] == "update_task_notes", out
