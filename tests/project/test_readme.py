"""The README's control script runs as written (from the repository root)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("pybullet", reason="the default config drives the [sim] simulator")
pytestmark = pytest.mark.sim


def test_readme_control_script_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    script = next(block for block in blocks if "run_stream(" in block)
    # run from a copy of the repository root layout so the relative config path holds,
    # with the run store and memory in a temporary folder
    script = script.replace(
        'Harness.from_config("configs/default.yaml")',
        'Harness.from_config("configs/default.yaml", overrides=['
        f'"run.store={tmp_path / "store"}", "memory.path={tmp_path / "memory"}"])',
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "t0 task_started"
    done = lines.index(next(line for line in lines if line.endswith(" done")))
    assert lines[done + 1] == "completed"
