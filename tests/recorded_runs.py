"""A real tabletop task recorded with its control steps (``recording.control``), for the
dataset and bag tests: the offline planner, the PyBullet tabletop, the configured secret of
:mod:`tests.viz_helpers` planted in tool results. The cameras are made 160x120 (a quarter
of the pixels: the frames of every control step are rendered, and this keeps the run to
a few seconds); only the front camera is recorded, at 10 control steps a second instead of
the default 30 (PyBullet's CPU renderer drew four fifths of the run's CPU at 30; a rate
other than the default also shows the dataset's fps is the recorded rate).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from harness import Harness, HarnessConfig
from tests.viz_helpers import INSTRUCTION, demo_config, plant_secret

__all__ = ["CONTROL_HZ", "RecordedRun", "record_task", "stored_steps"]


CONTROL_HZ = 10
"""The recorded run's control rate (the tabletop's default is 30)."""


@dataclass
class RecordedRun:
    store: Path
    task_id: str
    session_id: str


def small_camera_profile() -> dict[str, Any]:
    text = (resources.files("embodiment") / "profiles" / "panda_tabletop.yaml").read_text()
    profile = yaml.safe_load(text)
    for camera in profile["cameras"]:
        camera["width"], camera["height"] = 160, 120
    return profile


def record_task(store: Path, *, instruction: str = INSTRUCTION) -> RecordedRun:
    data = demo_config(store).model_dump(mode="json", exclude={"base_dir"})
    data["embodiment"] = small_camera_profile()
    data["driver"]["control_hz"] = CONTROL_HZ
    data["recording"] = {"control": True, "cameras": ["front"]}
    config = HarnessConfig.model_validate(data)
    with Harness.from_config(config) as harness:
        plant_secret(harness)
        events = list(harness.run_stream(instruction))
        session_id = harness.session_id
    done = events[-1]
    assert getattr(done, "outcome", "") == "achieved", done
    return RecordedRun(store=store, task_id=done.task_id, session_id=session_id)


def stored_steps(store: Path, task_id: str) -> dict[str, Any]:
    """The task's control steps as the store keeps them (SQL and JSON, store order)."""
    conn = sqlite3.connect(store / "runs.db")
    try:
        rows = conn.execute(
            "SELECT data FROM events WHERE task_id = ? AND type = 'control_steps' ORDER BY pos",
            (task_id,),
        ).fetchall()
        instruction = conn.execute(
            "SELECT instruction FROM tasks WHERE id = ?", (task_id,)
        ).fetchone()[0]
    finally:
        conn.close()
    events = [json.loads(row[0]) for row in rows]
    return {
        "instruction": instruction,
        "layout": events[0]["layout"],
        "times": [t for e in events for t in e["times"]],
        "states": [s for e in events for s in e["states"]],
        "actions": [a for e in events for a in e["actions"]],
        "frames": {c: [f for e in events for f in e["frames"][c]] for c in events[0]["frames"]},
        "commands": len(events),
    }
