"""An SO-101 run as a LeRobot dataset and a ROS 2 bag (issue 42, the SO-101 half).

A real episode of the SO-101 world (the offline planner puts the red cube in the box)
records its control steps; the dataset holds every step's six joint readings and targets
under LeRobot's follower names, and, with ``HARNESS_LEROBOT_PYTHON`` naming LeRobot's
interpreter, LeRobot 0.6 loads it back frame for frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from worlds.registry import load_world

WORLD = load_world("so101")
pytestmark = [
    pytest.mark.long,  # MuJoCo episodes: out of the fast tier
    pytest.mark.skipif(bool(WORLD.missing()), reason=f"needs {WORLD.install}"),
]
pytest.importorskip("pyarrow")
pytest.importorskip("av")
pytest.importorskip("rosbags")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from harness import Harness, HarnessConfig

    store = tmp_path_factory.mktemp("so101-store")
    data = WORLD.config_data()
    data["run"] = {**data.get("run", {}), "store": str(store)}
    data["driver"] = {**data["driver"], "width": 64, "height": 48}  # cheap turn observations
    # no camera: on Mesa's CPU renderer a frame per control step was three quarters of the
    # episode's CPU (test_so101_world checks the recorded frames on a short motion)
    data["recording"] = {"control": True, "cameras": []}
    data["memory"] = {"enabled": False}
    with Harness.from_config(HarnessConfig.model_validate(data)) as harness:
        events = list(harness.run_stream("put the red cube in the box"))
    done = events[-1]
    assert getattr(done, "outcome", "") == "achieved", done
    return store, done.task_id


def test_the_run_exports_as_a_lerobot_dataset_with_the_follower_s_names(run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from harness.export.episodes import EpisodeSource
    from harness.export.files import export_dataset
    from tests.recorded_runs import stored_steps

    store, task_id = run
    steps = stored_steps(store, task_id)
    export_dataset([EpisodeSource(store=store, task_id=task_id)], tmp_path / "ds")
    info = json.loads((tmp_path / "ds" / "meta" / "info.json").read_text())
    names = info["features"]["observation.state"]["names"]
    assert names == [
        f"{j}.pos"
        for j in (
            "shoulder_pan",
            "shoulder_lift",
            "elbow_flex",
            "wrist_flex",
            "wrist_roll",
            "gripper",
        )
    ]
    assert info["fps"] == 25 and info["total_frames"] == len(steps["times"]) > 100
    times = np.asarray(steps["times"])
    assert np.all(np.diff(times) > 0)  # the driver's clock only goes forward

    from tests.export.test_export_lerobot_load import PYTHON, lerobot_ready, load_with_lerobot

    if not lerobot_ready():
        pytest.skip("set HARNESS_LEROBOT_PYTHON to load it with LeRobot (docs/export.md)")
    assert PYTHON
    got = load_with_lerobot(tmp_path / "ds", tmp_path, every=11)
    assert got["episodes"] == 1 and got["frames"] == len(times) and got["fps"] == 25
    assert got["tasks"] == ["put the red cube in the box"]
    for row in got["items"]:
        np.testing.assert_allclose(row["state"], np.float32(steps["states"][row["index"]]))
        np.testing.assert_allclose(row["action"], np.float32(steps["actions"][row["index"]]))
    assert got["meta"][0]["outcome"] == "achieved"


def test_the_run_exports_as_a_ros2_bag(run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from harness.export.files import export_task
    from harness.store.reader import RunLog

    store, task_id = run
    with RunLog(store, redact=True) as log:
        count = export_task(log, log.task(task_id), format="rosbag2", output=tmp_path / "bag")
    assert count > 100
    assert (tmp_path / "bag" / "metadata.yaml").is_file()
    assert any(p.suffix == ".mcap" for p in (tmp_path / "bag").iterdir())
