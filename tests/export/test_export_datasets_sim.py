"""A real tabletop run recorded with its control steps, exported through the CLI as a
LeRobot dataset and a ROS 2 bag from a store the secret was written back into.

The oracle is the run store read with SQL (:func:`tests.recorded_runs.stored_steps`): the
dataset's rows are the stored steps (states and actions to float32, one row per step, at
the control rate), its task is the instruction, the bag has one joint state, one action
and one frame per step. No byte of any exported file may hold the planted secret: raw
bytes, every Parquet column decoded, every MCAP record decompressed (the oracle is the
10-character-window scan of :mod:`tests.viz_helpers`; it finds the secret when the export
reads the store without redaction, so it can fail).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("av")
pytest.importorskip("rosbags")

from harness.cli import main  # noqa: E402
from harness.redact import REDACTED  # noqa: E402
from tests.recorded_runs import CONTROL_HZ, RecordedRun, record_task, stored_steps  # noqa: E402
from tests.viz_helpers import leaky_copy, secret_fragments  # noqa: E402

pytestmark = [pytest.mark.sim, pytest.mark.long]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RecordedRun:
    return record_task(tmp_path_factory.mktemp("sim") / "store")


@pytest.fixture(scope="module")
def exported(run: RecordedRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    leaky = leaky_copy(run.store, tmp_path_factory.mktemp("leaky") / "store")
    out = tmp_path_factory.mktemp("out")
    paths = {"lerobot": out / "dataset", "rosbag2": out / "bag", "leaky": leaky}
    for fmt in ("lerobot", "rosbag2"):
        args = [
            "export",
            run.task_id,
            "--store",
            str(leaky),
            "--format",
            fmt,
            "-o",
            str(paths[fmt]),
        ]
        assert main(args) == 0
    return paths


def _decoded_texts(root: Path) -> list[bytes]:
    """Every file's bytes, and what compression may hide: each Parquet column's values,
    each MCAP record's decompressed content."""
    from mcap.reader import make_reader

    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        found.append(path.read_bytes())
        if path.suffix == ".parquet":
            found.append(json.dumps(pq.read_table(path).to_pylist(), default=str).encode())
        if path.suffix == ".mcap":
            with path.open("rb") as handle:
                reader = make_reader(handle)
                for schema, channel, message in reader.iter_messages():
                    found.append(message.data)
                    found.append(schema.data if schema else b"")
                    found.append(channel.topic.encode())
                for metadata in reader.iter_metadata():
                    found.append(json.dumps(metadata.metadata).encode())
    return found


def test_no_byte_of_the_dataset_or_the_bag_holds_the_secret(exported: dict[str, Path]) -> None:
    for fmt in ("lerobot", "rosbag2"):
        data = b"".join(_decoded_texts(exported[fmt]))
        assert secret_fragments(data) == 0, fmt
    bag_meta = (exported["rosbag2"] / "metadata.yaml").read_bytes()
    tasks = json.dumps(pq.read_table(exported["lerobot"] / "meta/tasks.parquet").to_pylist())
    assert REDACTED.encode() in bag_meta, "the instruction carried the secret: it must be redacted"
    assert REDACTED in tasks


def test_the_scan_finds_the_secret_when_the_export_does_not_redact(
    run: RecordedRun, exported: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.export.episodes as episodes
    from harness.store.reader import RunLog

    monkeypatch.setattr(episodes, "RunLog", lambda folder, redact=True: RunLog(folder))
    out = tmp_path / "unredacted"
    args = ["export", run.task_id, "--store", str(exported["leaky"]), "--format", "lerobot"]
    assert main([*args, "-o", str(out)]) == 0
    assert secret_fragments(b"".join(_decoded_texts(out))) > 0


def test_the_dataset_is_the_stored_steps(run: RecordedRun, exported: dict[str, Path]) -> None:
    stored = stored_steps(run.store, run.task_id)
    root = exported["lerobot"]
    info = json.loads((root / "meta/info.json").read_text())
    assert info["fps"] == stored["layout"]["rate_hz"] == CONTROL_HZ
    assert info["robot_type"] == "panda_tabletop"
    assert info["total_frames"] == len(stored["times"]) > 100
    assert info["features"]["observation.state"]["names"] == stored["layout"]["state_names"]
    assert info["features"]["observation.images.front"]["shape"] == [120, 160, 3]
    assert "observation.images.top" not in info["features"]  # not recorded
    rows = pq.read_table(root / "data/chunk-000/file-000.parquet").to_pydict()
    np.testing.assert_array_equal(
        np.float32(rows["observation.state"]), np.float32(stored["states"])
    )
    np.testing.assert_array_equal(np.float32(rows["action"]), np.float32(stored["actions"]))
    # the stored clock is the control rate: the dataset's timestamps say the same
    np.testing.assert_allclose(
        np.asarray(stored["times"]) - stored["times"][0], rows["timestamp"], atol=1e-5
    )
    episode = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()[0]
    assert episode["outcome"] == "achieved" and episode["success"] is True
    assert episode["evidence/checked_by"] == "simulator"
    assert episode["control/commands"] == stored["commands"] == 2
    # exported from the leaky copy: the instruction with the secret written back, redacted
    assert episode["tasks"] == [f"{stored['instruction']} badge {REDACTED}"]


def test_the_bag_has_one_message_per_step_on_the_control_topics(
    run: RecordedRun, exported: dict[str, Path]
) -> None:
    from rosbags.rosbag2 import Reader

    stored = stored_steps(run.store, run.task_id)
    with Reader(exported["rosbag2"]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        types = {c.topic: c.msgtype for c in reader.connections}
    steps = len(stored["times"])
    assert counts["/joint_states"] == counts["/harness/action"] == steps
    assert counts["/harness/camera/front/compressed"] == steps
    assert types["/tf"] == "tf2_msgs/msg/TFMessage"
    assert types["/harness/objects"] == "visualization_msgs/msg/MarkerArray"
    assert counts["/harness/observation/front/compressed"] >= 2  # one per turn
