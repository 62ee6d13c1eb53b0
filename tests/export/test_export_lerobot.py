"""``harness export --format lerobot``: every byte of the dataset read back with pyarrow and
PyAV and compared with what the run store holds.

The stores are written directly (:mod:`tests.dataset_stores`): every state, action and
frame colour is a function of (episode, step) alone, so the oracle never reads the
exporter. Hypothesis draws the episodes (how many, their commands and steps, outcomes),
the dimensions, the cameras and the rate; each example is exported and checked row by row
and frame by frame.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.export.control import ExportError
from harness.export.episodes import EpisodeSource, run_sources
from harness.export.files import export_dataset
from tests.dataset_stores import (
    SynthEpisode,
    expected_action,
    expected_color,
    expected_state,
    write_store,
)
from tests.tiers import examples

# Found, not imported: pyarrow and PyAV are loaded by the tests that read a dataset back.
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("pyarrow", "av")),
    reason="needs the [dataset] extra (pyarrow, PyAV)",
)

COLOR_TOLERANCE = 12
"""Per channel, on a solid colour after the lossy video round trip (measured: at most 3)."""


def _read(root: Path) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    info = json.loads((root / "meta/info.json").read_text())
    data = pa.concat_tables(
        [pq.read_table(p) for p in sorted((root / "data").glob("chunk-*/file-*.parquet"))]
    ).to_pydict()
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    tasks = pq.read_table(root / "meta/tasks.parquet")
    return {"info": info, "data": data, "episodes": episodes, "tasks": tasks}


def _decode(path: Path) -> list[tuple[float, np.ndarray]]:
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [
            (float(frame.pts * stream.time_base), frame.to_ndarray(format="rgb24"))
            for frame in container.decode(stream)
        ]


def check_dataset(
    root: Path,
    kept: list[tuple[int, SynthEpisode]],
    *,
    rate: int,
    state_dims: int,
    action_dims: int,
    cameras: tuple[str, ...],
) -> None:
    """The dataset at ``root`` holds exactly ``kept`` ((store index, episode) in order)."""
    got = _read(root)
    info, data, episodes = got["info"], got["data"], got["episodes"]
    lengths = [sum(e.commands) for _, e in kept]
    total = sum(lengths)
    assert info["codebase_version"] == "v3.0"
    assert info["fps"] == rate
    assert (info["total_episodes"], info["total_frames"]) == (len(kept), total)
    assert info["features"]["observation.state"]["shape"] == [state_dims]
    assert info["features"]["observation.state"]["names"] == [f"s{d}" for d in range(state_dims)]
    assert info["features"]["action"]["names"] == [f"a{d}" for d in range(action_dims)]
    assert sorted(k for k in info["features"] if k.startswith("observation.images.")) == sorted(
        f"observation.images.{c}" for c in cameras
    )
    # tasks: the instruction is the task, pandas reads the task column back as the index
    task_names = got["tasks"].column("task").to_pylist()
    task_index = dict(zip(task_names, got["tasks"].column("task_index").to_pylist(), strict=True))
    pandas_meta = json.loads(got["tasks"].schema.metadata[b"pandas"])
    assert pandas_meta["index_columns"] == ["task"]
    assert sorted(task_index.values()) == list(range(len(task_index)))
    assert set(task_names) == {e.instruction for _, e in kept}
    assert info["total_tasks"] == len(task_names)
    # rows
    assert data["index"] == list(range(total))
    row = 0
    for number, ((store_index, episode), length) in enumerate(zip(kept, lengths, strict=True)):
        meta = episodes[number]
        assert meta["episode_index"] == number
        assert meta["tasks"] == [episode.instruction]
        assert meta["length"] == length
        assert (meta["dataset_from_index"], meta["dataset_to_index"]) == (row, row + length)
        assert meta["outcome"] == episode.outcome and meta["status"] == episode.status
        assert meta["success"] == (episode.status == "completed" and episode.outcome == "achieved")
        assert meta["control/commands"] == len(episode.commands)
        for step in range(length):
            assert data["episode_index"][row + step] == number
            assert data["frame_index"][row + step] == step
            assert data["task_index"][row + step] == task_index[episode.instruction]
            assert data["timestamp"][row + step] == pytest.approx(step / rate, abs=1e-6)
            np.testing.assert_array_equal(
                np.float32(data["observation.state"][row + step]),
                np.float32(expected_state(store_index, step, state_dims)),
            )
            np.testing.assert_array_equal(
                np.float32(data["action"][row + step]),
                np.float32(expected_action(store_index, step, action_dims)),
            )
        row += length
    # videos: every frame where its episode's range says, with the colour the store held
    for c, camera in enumerate(cameras):
        key = f"observation.images.{camera}"
        decoded: dict[Path, list[tuple[float, np.ndarray]]] = {}
        for number, (store_index, _) in enumerate(kept):
            meta = episodes[number]
            path = root / info["video_path"].format(
                video_key=key,
                chunk_index=meta[f"videos/{key}/chunk_index"],
                file_index=meta[f"videos/{key}/file_index"],
            )
            frames = decoded.setdefault(path, _decode(path))
            start = meta[f"videos/{key}/from_timestamp"]
            assert meta[f"videos/{key}/to_timestamp"] == pytest.approx(
                start + lengths[number] / rate
            )
            by_time = {round(t * rate): f for t, f in frames}
            for step in range(lengths[number]):
                frame = by_time[round((start + step / rate) * rate)]
                color = frame.reshape(-1, 3).mean(axis=0)
                want = np.array(expected_color(store_index, step, c))
                assert np.abs(color - want).max() <= COLOR_TOLERANCE, (camera, number, step)
        assert sum(len(f) for f in decoded.values()) == total


episode_strategy = st.builds(
    SynthEpisode,
    instruction=st.sampled_from(["stack the cubes", "open the drawer", "put the red cube away"]),
    commands=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
    outcome=st.sampled_from(["achieved", "achieved", "not_achieved", "unverified"]),
    status=st.sampled_from(["completed", "completed", "failed"]),
)

TRIES = {"examples": 0}


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    episodes=st.lists(episode_strategy, min_size=1, max_size=4),
    rate=st.sampled_from([5, 10, 20, 30]),
    state_dims=st.integers(1, 6),
    action_dims=st.integers(1, 4),
    cameras=st.sampled_from([(), ("cam",), ("front", "wrist")]),
    only_achieved=st.booleans(),
    codec=st.sampled_from(["libsvtav1", "h264"]),
)
def test_every_row_and_frame_is_the_stored_one(
    tmp_path_factory: pytest.TempPathFactory,
    episodes: list[SynthEpisode],
    rate: int,
    state_dims: int,
    action_dims: int,
    cameras: tuple[str, ...],
    only_achieved: bool,
    codec: str,
) -> None:
    TRIES["examples"] += 1
    folder = tmp_path_factory.mktemp("synth")
    synth = write_store(
        folder / "store",
        episodes,
        rate=rate,
        state_dims=state_dims,
        action_dims=action_dims,
        cameras=cameras,
    )
    sources = [EpisodeSource(store=synth.store, task_id=t) for t in synth.task_ids]
    kept = [
        (i, e)
        for i, e in enumerate(episodes)
        if not only_achieved or (e.status == "completed" and e.outcome == "achieved")
    ]
    out = folder / "dataset"
    if not kept:
        with pytest.raises(ExportError, match="nothing to export"):
            export_dataset(sources, out, only_achieved=only_achieved, codec=codec)
        assert not out.exists(), "a failed export leaves nothing behind"
        return
    summary = export_dataset(sources, out, only_achieved=only_achieved, codec=codec)
    assert summary.episodes == len(kept)
    check_dataset(
        out, kept, rate=rate, state_dims=state_dims, action_dims=action_dims, cameras=cameras
    )


def test_files_roll_over_and_episodes_keep_their_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With tiny file limits every episode starts a new data and video file; each still
    points at its own rows and frames. (An encoder holds a few frames back before it emits
    any bytes, so the video's size is made to count frames here.)"""
    import harness.export.lerobot_dataset as module
    from harness.export.video import VideoFile

    monkeypatch.setattr(module, "DATA_FILE_MB", 1e-6)
    monkeypatch.setattr(module, "VIDEO_FILE_MB", 1)
    monkeypatch.setattr(VideoFile, "size_mb", lambda self: float(self.frames))
    episodes = [SynthEpisode("one", (3,)), SynthEpisode("two", (2, 2)), SynthEpisode("one", (4,))]
    synth = write_store(tmp_path / "store", episodes, cameras=("cam",))
    sources = [EpisodeSource(store=synth.store, task_id=t) for t in synth.task_ids]
    export_dataset(sources, tmp_path / "ds")
    rows = _read(tmp_path / "ds")["episodes"]
    assert [r["data/file_index"] for r in rows] == [0, 1, 2]
    assert [r["videos/observation.images.cam/file_index"] for r in rows] == [0, 1, 2]
    assert all(r["videos/observation.images.cam/from_timestamp"] == 0 for r in rows)
    check_dataset(
        tmp_path / "ds",
        list(enumerate(episodes)),
        rate=10,
        state_dims=3,
        action_dims=2,
        cameras=("cam",),
    )


# ====================================================================== refusals


def _two_stores(tmp_path: Path, **second: Any) -> list[EpisodeSource]:
    a = write_store(tmp_path / "a", [SynthEpisode("first", (2,))])
    b = write_store(tmp_path / "b", [SynthEpisode("second", (2,))], **second)
    return [
        EpisodeSource(store=a.store, task_id=a.task_ids[0], name="ep-a"),
        EpisodeSource(store=b.store, task_id=b.task_ids[0], name="ep-b"),
    ]


@pytest.mark.parametrize(
    ("second", "match"),
    [
        ({"rate": 20}, "ep-b: recorded at 20"),
        ({"state_dims": 4}, "ep-b: state_names"),
        ({"cameras": ("other",)}, "ep-b: frames of cameras"),
    ],
)
def test_episodes_that_do_not_fit_one_dataset_are_refused_by_name(
    tmp_path: Path, second: dict[str, Any], match: str
) -> None:
    with pytest.raises(ExportError, match=match):
        export_dataset(_two_stores(tmp_path, **second), tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_a_rate_that_is_not_a_whole_number_is_refused(tmp_path: Path) -> None:
    synth = write_store(tmp_path / "s", [SynthEpisode("x", (2,))], rate=7.5)
    with pytest.raises(ExportError, match=r"7\.5 Hz.*whole number"):
        export_dataset(run_sources(synth.store, synth.task_ids[0]), tmp_path / "ds")


def test_odd_frame_sizes_are_refused(tmp_path: Path) -> None:
    synth = write_store(tmp_path / "s", [SynthEpisode("x", (2,))], size=(33, 24))
    with pytest.raises(ValueError, match="must be even"):
        export_dataset(run_sources(synth.store, synth.task_ids[0]), tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_a_run_without_control_steps_says_how_to_record_them(tmp_path: Path) -> None:
    synth = write_store(tmp_path / "s", [SynthEpisode("x", ())])
    with pytest.raises(ExportError, match=r"recording\.control: true"):
        export_dataset(run_sources(synth.store, synth.task_ids[0]), tmp_path / "ds")


def test_episodes_without_steps_are_left_out_and_named(tmp_path: Path) -> None:
    synth = write_store(tmp_path / "s", [SynthEpisode("x", (2,)), SynthEpisode("y", ())])
    sources = [EpisodeSource(store=synth.store, task_id=t) for t in synth.task_ids]
    summary = export_dataset(sources, tmp_path / "ds")
    assert summary.episodes == 1
    assert summary.skipped == [f"{synth.task_ids[1]}: no control steps recorded"]


def test_a_session_id_exports_each_of_its_tasks(tmp_path: Path) -> None:
    episodes = [SynthEpisode("x", (2,)), SynthEpisode("y", (3,))]
    synth = write_store(tmp_path / "s", episodes)
    sources = run_sources(synth.store, synth.session_id)
    assert [s.task_id for s in sources] == synth.task_ids
    assert [s.task_id for s in run_sources(synth.store, "last")] == synth.task_ids[-1:]


def test_the_cli_writes_a_dataset_and_refuses_bad_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synth = write_store(tmp_path / "s", [SynthEpisode("x", (2,)), SynthEpisode("y", (3,))])
    store = str(synth.store)
    out = tmp_path / "ds"
    assert (
        main(["export", synth.session_id, "--store", store, "--format", "lerobot", "-o", str(out)])
        == 0
    )
    assert "2 episode(s), 5 frames at 10 fps" in capsys.readouterr().err
    cases = [
        (["--format", "lerobot"], "writes a folder"),
        (["--format", "lerobot", "-o", str(out)], "not empty"),
        (["--format", "lerobot", "--what", "items", "-o", str(tmp_path / "n")], "--what works"),
        (
            ["--format", "mcap", "--only-achieved", "-o", str(tmp_path / "x.mcap")],
            "only-achieved",
        ),
        ([str(tmp_path), "--format", "lerobot", "-o", str(tmp_path / "n")], "not an eval"),
        (["--format", "lerobot", "--vcodec", "vp9", "-o", str(tmp_path / "n")], "vcodec"),
    ]
    for extra, message in cases:
        with pytest.raises(SystemExit) as exited:
            code = main(["export", "--store", store, *extra])
            raise SystemExit(code)
        assert exited.value.code == 2, extra
        assert message in capsys.readouterr().err, extra
