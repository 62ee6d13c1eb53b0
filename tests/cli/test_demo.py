"""``harness demo`` end to end (a subprocess, offline) and the examples that need no key."""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.cli.demo import DEFAULT_INSTRUCTION, DEMO_DEFAULTS, demo_config

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[2]
HAS_SIM = importlib.util.find_spec("pybullet") is not None
HAS_SCENE = importlib.util.find_spec("scene.brief") is not None


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["demo", *argv])


def test_demo_is_registered_with_its_defaults() -> None:
    args = parse()
    assert args.instruction == DEFAULT_INSTRUCTION and args.func.__name__ == "run_demo"


def test_built_in_defaults_when_no_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = demo_config(parse("--seed", "3", "--drop-first-grasp", "red_cube_1"))
    assert config.model.provider == "planner"
    assert config.embodiment == DEMO_DEFAULTS["embodiment"]
    assert config.driver is not None and config.driver.model_extra == {
        "seed": 3,
        "faults": {"drop_on_lift": {"red_cube_1": 1}},
    }
    assert config.evaluation.required_tools == ["pick", "place"]


def test_checkout_config_is_used_from_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    config = demo_config(parse("--set", "run.max_turns=7"))
    assert config.run.max_turns == 7 and config.model.provider == "planner"


def run_cli(*argv: str, cwd: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            *argv,
            "--set",
            f"run.store={tmp / 'store'}",
            "--set",
            f"memory.path={tmp / 'memory'}",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.sim
@pytest.mark.skipif(not HAS_SIM, reason="needs the [sim] extra")
@pytest.mark.skipif(not HAS_SCENE, reason="needs the scene package (scene graph and Brief)")
def test_harness_demo_end_to_end(tmp_path: Path) -> None:
    done = run_cli("demo", cwd=ROOT, tmp=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "offline planner" in out
    assert "pybullet build time" not in out + done.stderr
    assert "completed in" in out and "evaluator confirmed 6 action(s), reported 0 failure(s)" in out
    assert "run: session sess_" in out and "task task_" in out


@pytest.mark.sim
@pytest.mark.skipif(not HAS_SIM, reason="needs the [sim] extra")
@pytest.mark.skipif(not HAS_SCENE, reason="needs the scene package (scene graph and Brief)")
def test_demo_from_an_installed_package_recovers_a_failed_grasp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """From a folder that is not a checkout (no configs/default.yaml: the built-in
    deployment, as from an installed wheel), in this process: what it prints and its exit
    code are the point, not the process (``test_harness_demo_end_to_end`` starts one)."""
    from harness.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    code = main(
        [
            "demo",
            "put the red cube in the tray",
            "--drop-first-grasp",
            "red_cube_1",
            "--set",
            f"run.store={tmp_path / 'store'}",
            "--set",
            f"memory.path={tmp_path / 'memory'}",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    assert "fail pick: red_cube_1 is not in the gripper" in printed.out
    assert "Recovered from failed grasps: red_cube_1 needed 2 grasps" in printed.out


def test_custom_driver_template_passes_check_driver() -> None:
    done = subprocess.run(
        [sys.executable, "examples/custom_driver.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pass  stop_interrupts_motion" in done.stdout


def test_real_provider_example_needs_a_key() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    done = subprocess.run(
        [sys.executable, "examples/real_provider_demo.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2 and "Set OPENAI_API_KEY" in done.stdout


@pytest.mark.sim
@pytest.mark.skipif(not HAS_SIM, reason="needs the [sim] extra")
@pytest.mark.skipif(not HAS_SCENE, reason="needs the scene package (scene graph and Brief)")
def test_control_script_example_revises_through_its_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example run as ``python examples/control_script.py ...`` from the checkout with
    no terminal on stdin, in this process: what it prints and its exit code are the point,
    not the process (``test_harness_demo_end_to_end`` starts one)."""
    import runpy

    import yaml

    config = tmp_path / "config.yaml"
    data = yaml.safe_load((ROOT / "configs" / "default.yaml").read_text())
    data["run"]["store"] = str(tmp_path / "store")  # never the checkout's store
    data["memory"]["path"] = str(tmp_path / "memory")
    config.write_text(yaml.safe_dump(data))
    example = ROOT / "examples" / "control_script.py"
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # as stdin=DEVNULL: not a terminal
    monkeypatch.setattr(
        "sys.argv",
        [
            str(example),
            "put the red cube in the tray",
            "--config",
            str(config),
            "--revise-after",
            "1",
        ],
    )
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert exit_.value.code == 0, out
    assert "[replan] also put the blue cube in the tray" in out
    assert "Result: 2 of 2 objects" in out


@pytest.mark.sim
@pytest.mark.skipif(not HAS_SIM, reason="needs the [sim] extra")
@pytest.mark.skipif(not HAS_SCENE, reason="needs the scene package (scene graph and Brief)")
def test_two_demos_match_to_the_token_and_say_the_task_time_harness_runs_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run as a user would, twice in the same folder (one store, the built-in deployment):
    the second demo sees what the first saw, token for token (the first one's memory is not
    read: every demo starts from an empty one), and the time it prints is the task's time
    the store recorded (what `harness runs` and the report show)."""
    import re

    from harness.cli import main
    from harness.store.reader import RunLog

    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--json"]) == 0
    assert main(["demo"]) == 0
    printed = capsys.readouterr().out
    with RunLog(tmp_path / ".harness") as log:
        second, first = log.tasks()
        runs = []
        for task in (first, second):
            events = log.events(task_id=task.id)
            runs.append(
                {
                    "usage": [e.usage for e in events if e.type == "model_response"],
                    "results": [
                        re.sub(r"(task|call)_[0-9a-f]{16}", "ID", e.text)
                        for e in events
                        if e.type == "tool_result"
                    ],
                    "tokens": [
                        (e.total_tokens, e.sections) for e in events if e.type == "prompt_snapshot"
                    ],
                }
            )
        assert all(runs[0].values()) and runs[0] == runs[1]
        assert first.usage == second.usage and first.usage.input_tokens > 0
        assert second.duration_s is not None
        assert f"completed in {second.duration_s:.1f} s, 23 turns" in printed
    assert not (tmp_path / ".harness" / "memory").exists()  # the demo's memory was its own
