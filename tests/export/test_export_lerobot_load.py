"""The exported dataset loaded by LeRobot itself: ``LeRobotDataset(repo_id, root=DIR)`` in
LeRobot's own interpreter (Python >= 3.12 with torch; the harness does not need either).

Skipped unless ``HARNESS_LEROBOT_PYTHON`` names a Python that imports ``lerobot``; run it
with (docs/export.md says how that interpreter was made)::

    HARNESS_LEROBOT_PYTHON=/path/to/venv/bin/python \
        python -m pytest tests/export/test_export_lerobot_load.py

LeRobot reads every item (decoding the frames with PyAV, its fallback decoder) and prints
them as JSON; they are compared with the run store: the number of episodes and frames, the
fps, each row's state and action, each frame's task string, each frame's colour, and what
each episode says about its outcome.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("av")

from harness.export.episodes import EpisodeSource
from harness.export.files import export_dataset
from tests.dataset_stores import (
    SynthEpisode,
    expected_action,
    expected_color,
    expected_state,
    write_store,
)

PYTHON = os.environ.get("HARNESS_LEROBOT_PYTHON", "")


def lerobot_ready() -> bool:
    if not PYTHON or not Path(PYTHON).exists():
        return False
    probe = subprocess.run(
        [PYTHON, "-c", "import lerobot.datasets.lerobot_dataset"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not lerobot_ready(),
    reason="set HARNESS_LEROBOT_PYTHON to a Python with lerobot installed (docs/export.md)",
)

LOADER = """
import json, sys
from lerobot.datasets.lerobot_dataset import LeRobotDataset

root, every = sys.argv[1], int(sys.argv[2])
ds = LeRobotDataset("harness/export-test", root=root, video_backend="pyav")
out = {
    "episodes": ds.num_episodes,
    "frames": ds.num_frames,
    "fps": ds.fps,
    "tasks": [str(t) for t in ds.meta.tasks.index],
    "video_keys": list(ds.meta.video_keys),
    "items": [],
    "meta": [],
}
for i in range(0, len(ds), every):
    item = ds[i]
    row = {
        "index": int(item["index"]),
        "episode": int(item["episode_index"]),
        "frame": int(item["frame_index"]),
        "task": item["task"],
        "timestamp": float(item["timestamp"]),
        "state": item["observation.state"].tolist(),
        "action": item["action"].tolist(),
    }
    for key in ds.meta.video_keys:
        row[key] = (item[key].mean(dim=(1, 2)) * 255).tolist()
    out["items"].append(row)
for e in range(ds.meta.total_episodes):
    episode = ds.meta.episodes[e]
    out["meta"].append({k: episode[k] for k in ("length", "success", "outcome", "tasks")})
print("RESULT " + json.dumps(out))
"""


def load_with_lerobot(root: Path, tmp_path: Path, *, every: int = 1) -> dict[str, Any]:
    script = tmp_path / "load_with_lerobot.py"
    script.write_text(LOADER)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_LEROBOT_HOME": str(tmp_path / "lerobot-home"),
        "HF_HOME": str(tmp_path / "hf-home"),
    }
    done = subprocess.run(
        [PYTHON, str(script), str(root), str(every)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def test_lerobot_loads_every_frame_of_a_dataset_as_the_store_holds_it(tmp_path: Path) -> None:
    episodes = [
        SynthEpisode("stack the cubes", (3, 4)),
        SynthEpisode("open the drawer", (5,), outcome="not_achieved"),
        SynthEpisode("stack the cubes", (2,)),
    ]
    cameras = ("front", "wrist")
    synth = write_store(tmp_path / "store", episodes, rate=10, cameras=cameras, size=(64, 48))
    sources = [EpisodeSource(store=synth.store, task_id=t) for t in synth.task_ids]
    export_dataset(sources, tmp_path / "dataset")
    got = load_with_lerobot(tmp_path / "dataset", tmp_path)
    lengths = [sum(e.commands) for e in episodes]
    assert got["episodes"] == 3 and got["frames"] == sum(lengths) and got["fps"] == 10
    assert got["tasks"] == ["stack the cubes", "open the drawer"]
    assert got["video_keys"] == [f"observation.images.{c}" for c in cameras]
    assert [m["length"] for m in got["meta"]] == lengths
    assert [m["outcome"] for m in got["meta"]] == [e.outcome for e in episodes]
    assert [m["success"] for m in got["meta"]] == [True, False, True]
    assert len(got["items"]) == sum(lengths)
    for row in got["items"]:
        e, step = row["episode"], row["frame"]
        assert row["task"] == episodes[e].instruction
        assert row["timestamp"] == pytest.approx(step / 10, abs=1e-5)
        np.testing.assert_allclose(row["state"], np.float32(expected_state(e, step, 3)))
        np.testing.assert_allclose(row["action"], np.float32(expected_action(e, step, 2)))
        for c, camera in enumerate(cameras):
            color = np.asarray(row[f"observation.images.{camera}"])
            assert np.abs(color - expected_color(e, step, c)).max() <= 12, (e, step, camera)


def test_lerobot_loads_a_real_tabletop_run(tmp_path: Path) -> None:
    pytest.importorskip("pybullet")
    from tests.recorded_runs import CONTROL_HZ, record_task, stored_steps

    run = record_task(tmp_path / "store")
    stored = stored_steps(run.store, run.task_id)
    sources = [EpisodeSource(store=run.store, task_id=run.task_id)]
    export_dataset(sources, tmp_path / "dataset")
    got = load_with_lerobot(tmp_path / "dataset", tmp_path, every=7)
    assert got["episodes"] == 1 and got["frames"] == len(stored["times"])
    assert got["fps"] == CONTROL_HZ
    assert got["tasks"] == [stored["instruction"]]
    for row in got["items"]:
        assert row["task"] == stored["instruction"]
        np.testing.assert_allclose(row["state"], np.float32(stored["states"][row["index"]]))
        np.testing.assert_allclose(row["action"], np.float32(stored["actions"][row["index"]]))
