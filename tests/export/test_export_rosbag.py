"""``harness export --format rosbag2``: the bag read back with ``rosbags``' own reader and
type store, against the run store (written directly: :mod:`tests.dataset_stores`).

Checked: the topics and their ROS 2 types, message counts (one per control step on
``/joint_states``, ``/harness/action`` and each camera; one per stored event on
``/rosout``...), every message deserialised with the type store of its distro, the joint
states and actions equal to the stored steps, timestamps never decreasing and the control
steps of a command exactly one period apart, and ``metadata.yaml`` as rosbag2's own
decoder reads it (version 8: every field it requires, with the types it converts them to).
The replay clock is checked on its own with hypothesis.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.export.replay_clock import CommandSpan, ReplayClock
from tests.tiers import examples

# ====================================================================== the replay clock


@st.composite
def spans(draw: Any) -> list[CommandSpan]:
    count = draw(st.integers(0, 6))
    at = draw(st.floats(0, 1e6))
    out = []
    for _ in range(count):
        at += draw(st.floats(0.001, 100))  # commands never end and start at one instant
        length = draw(st.floats(0, 50))
        out.append(CommandSpan(at, at + length, draw(st.floats(0, 80))))
        at += length
    return out


@settings(max_examples=examples(500), deadline=None)
@given(spans=spans(), probes=st.lists(st.floats(-10, 2e6), min_size=2, max_size=20))
def test_the_replay_clock_never_runs_backwards_and_keeps_each_command_s_length(
    spans: list[CommandSpan], probes: list[float]
) -> None:
    clock = ReplayClock(spans)
    times = sorted(probes)
    mapped = [clock.at(t) for t in times]
    assert all(b >= a - 1e-6 for a, b in itertools.pairwise(mapped))
    for index, span in enumerate(spans):
        # a command lasts as long as its steps span, and ends where its end event is
        start = clock.command_start(index)
        assert clock.at(span.wall_end) - start == pytest.approx(span.duration, abs=1e-6)
        assert clock.at(span.wall_start) >= start
    if spans:
        first = spans[0].wall_start
        assert clock.at(first - 5) == first - 5  # before any command: the wall clock
        # between commands, real pauses last as long as they did
        for index, (a, b) in enumerate(itertools.pairwise(spans)):
            assert clock.command_start(index + 1) - clock.at(a.wall_end) == pytest.approx(
                b.wall_start - a.wall_end, abs=1e-6
            )
    else:
        assert mapped == times


# ====================================================================== bags

pytest.importorskip("rosbags")
from rosbags.rosbag2 import Reader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

from harness.cli import main  # noqa: E402
from tests.dataset_stores import (  # noqa: E402
    SynthEpisode,
    expected_action,
    expected_state,
    write_store,
)

TYPES = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/harness/action": "std_msgs/msg/Float64MultiArray",
    "/harness/camera/front/compressed": "sensor_msgs/msg/CompressedImage",
    "/harness/camera/wrist/compressed": "sensor_msgs/msg/CompressedImage",
    "/rosout": "rcl_interfaces/msg/Log",
    "/tf_static": "tf2_msgs/msg/TFMessage",
    "/harness/zones": "visualization_msgs/msg/MarkerArray",
}


def read_bag(path: Path, distro: str) -> tuple[dict[str, str], list[tuple[str, int, Any]]]:
    store = get_typestore(getattr(Stores, f"ROS2_{distro.upper()}"))
    with Reader(path) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        messages = [
            (c.topic, t, store.deserialize_cdr(raw, c.msgtype)) for c, t, raw in reader.messages()
        ]
    return topics, messages


def check_metadata(path: Path, counts: dict[str, int]) -> dict[str, Any]:
    """``metadata.yaml`` as rosbag2's decoder reads version 8 (rosbag2_storage/yaml.hpp)."""
    info = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["version"] == 8
    assert info["storage_identifier"] == "mcap"
    assert isinstance(info["duration"]["nanoseconds"], int)
    assert isinstance(info["starting_time"]["nanoseconds_since_epoch"], int)
    assert info["message_count"] == sum(counts.values())
    for entry in info["topics_with_message_count"]:
        meta = entry["topic_metadata"]
        for key in ("name", "type", "serialization_format", "offered_qos_profiles"):
            assert isinstance(meta[key], str), key  # as<std::string>() in version 8
        assert meta["type_description_hash"].startswith("RIHS01_")
        assert entry["message_count"] == counts[meta["name"]]
    assert all(isinstance(p, str) for p in info["relative_file_paths"])
    assert (path / info["relative_file_paths"][0]).is_file()
    assert isinstance(info["compression_format"], str)
    assert isinstance(info["compression_mode"], str)
    for entry in info["files"]:
        assert {"path", "starting_time", "duration", "message_count"} <= set(entry)
    custom = info["custom_data"]
    assert isinstance(custom, dict) and custom  # as<unordered_map<string, string>>()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in custom.items())
    assert isinstance(info["ros_distro"], str)
    return info


@pytest.mark.parametrize("distro", ["jazzy", "humble"])
def test_a_bag_holds_every_control_step_and_event_at_its_time(tmp_path: Path, distro: str) -> None:
    commands = (3, 5, 2)
    synth = write_store(
        tmp_path / "store",
        [SynthEpisode("stack the cubes", commands)],
        rate=20,
        cameras=("front", "wrist"),
    )
    bag = tmp_path / "bag"
    code = main(
        [
            "export",
            synth.task_ids[0],
            "--store",
            str(synth.store),
            "--format",
            "rosbag2",
            "--ros-distro",
            distro,
            "-o",
            str(bag),
        ]
    )
    assert code == 0
    topics, messages = read_bag(bag, distro)
    for topic, msgtype in TYPES.items():
        assert topics[topic] == msgtype, topic
    by_topic: dict[str, list[tuple[int, Any]]] = {}
    for topic, stamp, message in messages:
        by_topic.setdefault(topic, []).append((stamp, message))
    steps = sum(commands)
    for topic in ("/joint_states", "/harness/action", *(t for t in TYPES if "/camera/" in t)):
        assert len(by_topic[topic]) == steps, topic
    stamps = [stamp for _, stamp, _ in messages]
    assert stamps == sorted(stamps)
    conn = sqlite3.connect(synth.store / "runs.db")
    events = conn.execute(
        "SELECT type FROM events WHERE task_id = ?", (synth.task_ids[0],)
    ).fetchall()
    conn.close()
    assert len(by_topic["/rosout"]) == len(events)  # every event in words
    for step, (stamp, state) in enumerate(by_topic["/joint_states"]):
        assert list(state.name) == ["s0", "s1", "s2"]
        np.testing.assert_allclose(state.position, expected_state(0, step, 3))
        assert state.header.stamp.sec * 10**9 + state.header.stamp.nanosec == stamp
        np.testing.assert_allclose(
            by_topic["/harness/action"][step][1].data, expected_action(0, step, 2)
        )
    # within a command the steps are one period (50 ms) apart, exactly
    first = 0
    for count in commands:
        gaps = np.diff([s for s, _ in by_topic["/joint_states"][first : first + count]])
        assert all(abs(g - 50_000_000) <= 1 for g in gaps)
        first += count
    image = by_topic["/harness/camera/front/compressed"][0][1]
    assert image.format == "png" and bytes(image.data[:4]) == b"\x89PNG"
    zones = by_topic["/harness/zones"][0][1]
    assert {m.ns for m in zones.markers} == {"zones"} and len(zones.markers) >= 2
    counts = {topic: len(items) for topic, items in by_topic.items()}
    info = check_metadata(bag, counts)
    custom = info["custom_data"]
    assert custom["harness.instruction"] == "stack the cubes"
    assert custom["harness.outcome"] == "achieved"
    assert json.loads(custom["harness.action_names"]) == ["a0", "a1"]
    assert custom["harness.ros_distro"] == distro


def test_a_run_without_control_steps_still_makes_a_bag(tmp_path: Path) -> None:
    synth = write_store(tmp_path / "store", [SynthEpisode("look around", ())])
    bag = tmp_path / "bag"
    assert main(["export", "--store", str(synth.store), "--format", "rosbag2", "-o", str(bag)]) == 0
    topics, messages = read_bag(bag, "jazzy")
    assert "/harness/action" not in topics
    assert "/rosout" in topics
    info = check_metadata(bag, {t: sum(1 for m in messages if m[0] == t) for t in topics})
    assert "harness.action_names" not in info["custom_data"]


def test_an_eval_folder_gives_one_bag_per_episode(tmp_path: Path) -> None:
    """Built as ``harness eval`` writes it: a manifest, one record per line, one run store
    per episode."""
    from harness.fleet.episode import EpisodeRecord
    from harness.fleet.journal import EvalFolder, Manifest

    folder = tmp_path / "eval"
    evaluation = EvalFolder(folder)
    keys = ["pick/red/s0", "pick/green/s0"]
    evaluation.create(
        Manifest(suite="synthetic", suite_path="synthetic", model_label="planner", episodes=keys)
    )
    for number, key in enumerate(keys):
        slug = key.replace("/", ".")
        synth = write_store(
            folder / "runs" / slug / "store",
            [
                SynthEpisode(
                    f"pick the cube {number}", (2,), outcome=["achieved", "not_achieved"][number]
                )
            ],
        )
        evaluation.append(
            EpisodeRecord(
                key=key,
                task="pick",
                family="pick",
                variant="v",
                seed=0,
                instruction=f"pick the cube {number}",
                status="completed",
                outcome=["achieved", "not_achieved"][number],
                success=number == 0,
                run_id=synth.task_ids[0],
                store=f"runs/{slug}/store",
            )
        )
    out = tmp_path / "bags"
    assert main(["export", str(folder), "--format", "rosbag2", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["pick_green_s0", "pick_red_s0"]
    out2 = tmp_path / "achieved"
    assert (
        main(["export", str(folder), "--format", "rosbag2", "--only-achieved", "-o", str(out2)])
        == 0
    )
    assert [p.name for p in out2.iterdir()] == ["pick_red_s0"]
    dataset = tmp_path / "dataset"
    assert main(["export", str(folder), "--format", "lerobot", "-o", str(dataset)]) == 0
    import pyarrow.parquet as pq

    rows = pq.read_table(dataset / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [r["source/episode"] for r in rows] == keys
    assert [r["success"] for r in rows] == [True, False]  # the eval's verdict
