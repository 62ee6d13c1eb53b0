"""The harness's side of control steps (:class:`harness.world.control_log.ControlLog`):
what a command's ``control_steps`` event holds, and that a store which cannot keep a frame
never reaches into the driver's motion.

Faults are injected at every position of a run of steps (hypothesis draws which
``put_image`` calls fail); the oracle is the list of steps handed in, minus those whose
frame failed: the event holds exactly those, in order, counts the rest as dropped, and
the sink raised nothing. A dataset then leaves such a task out, naming why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodiment.recording import ControlLayout, ControlRecorder, ControlSink
from harness.config import RecordingConfig
from harness.world.control_log import ControlLog, start_control_log
from tests.tiers import examples

LAYOUT = ControlLayout(
    rate_hz=10,
    state_names=("j1", "j2"),
    action_names=("t1",),
    state_description="two joints (rad)",
    action_description="one target (rad)",
    cameras=("front", "top"),
)


class RecordingDriver:
    """Just the ControlRecording side of a driver."""

    def __init__(self) -> None:
        self.recorder = ControlRecorder(LAYOUT)
        self.detached = False

    def control_layout(self) -> ControlLayout:
        return LAYOUT

    def record_control(self, sink: ControlSink | None, *, cameras: Sequence[str] = ()) -> None:
        self.recorder.attach(sink, cameras)
        self.detached = sink is None

    def move(self, start: int, count: int) -> None:
        for k in range(start, start + count):
            frames = {c: np.full((4, 6, 3), k % 250, np.uint8) for c in self.recorder.cameras}
            self.recorder.emit(k / 10, [k, -k], [k * 2], frames)


class FlakyStore:
    """Keeps images, except the calls whose number is in ``fail``."""

    def __init__(self, fail: set[int]) -> None:
        self.fail = fail
        self.calls = 0
        self.images: dict[str, Any] = {}

    def put_image(self, image: Any) -> None:
        self.calls += 1
        if self.calls in self.fail:
            raise OSError("disk full")
        self.images[image.sha256] = image


@settings(max_examples=examples(200), deadline=None)
@given(
    commands=st.lists(st.integers(0, 6), min_size=1, max_size=4),
    cameras=st.sampled_from([(), ("front",), ("front", "top")]),
    fail=st.sets(st.integers(1, 60), max_size=8),
)
def test_a_step_the_store_cannot_keep_is_dropped_and_counted_never_raised(
    commands: list[int], cameras: tuple[str, ...], fail: set[int]
) -> None:
    driver = RecordingDriver()
    store = FlakyStore(fail)
    log = ControlLog(driver, store, RecordingConfig(control=True, cameras=list(cameras)))  # type: ignore[arg-type]
    step = 0
    for number, count in enumerate(commands):
        calls_before = store.calls
        driver.move(step, count)  # would raise out of the motion if the sink did
        # which of this command's steps kept all their frames (the oracle)
        kept, dropped = [], 0
        for k in range(count):
            per = len(cameras)
            calls = range(calls_before + 1, calls_before + 1 + per)
            if any(c in fail for c in calls):
                dropped += 1
                calls_before = calls_before + next(
                    i + 1 for i, c in enumerate(calls) if c in fail
                )  # frames after the failing one are not attempted
            else:
                kept.append(step + k)
                calls_before += per
        event = log.take(call_id=f"c{number}", tool="move")
        step += count
        if not kept and not dropped:
            assert event is None
            continue
        assert event is not None
        assert event.times == [k / 10 for k in kept]
        assert event.states == [[k, -k] for k in kept]
        assert event.actions == [[k * 2] for k in kept]
        assert event.dropped == dropped
        assert list(event.frames) == list(cameras)
        for name in cameras:
            assert len(event.frames[name]) == len(kept)
            assert all(sha in store.images for sha in event.frames[name])
    log.close()
    assert driver.detached and not driver.recorder.active


def test_frames_are_kept_at_the_camera_s_size_not_the_model_s() -> None:
    driver = RecordingDriver()
    store = FlakyStore(set())
    log = ControlLog(driver, store, RecordingConfig(control=True, cameras=["front"]))  # type: ignore[arg-type]
    driver.recorder.emit(0.0, [0, 0], [0], {"front": np.zeros((900, 1200, 3), np.uint8)})
    event = log.take(call_id="c", tool="t")
    assert event is not None
    image = store.images[event.frames["front"][0]]
    assert (image.width, image.height) == (1200, 900)  # observation.max_image_side is 640


def test_recording_is_off_by_default_and_refused_cameras_are_named() -> None:
    driver = RecordingDriver()
    assert start_control_log(driver, FlakyStore(set()), RecordingConfig()) is None  # type: ignore[arg-type]
    assert start_control_log(object(), FlakyStore(set()), RecordingConfig(control=True)) is None  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'side'"):
        ControlLog(driver, FlakyStore(set()), RecordingConfig(control=True, cameras=["side"]))  # type: ignore[arg-type]


def test_a_task_with_dropped_steps_is_left_out_of_a_dataset(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    pytest.importorskip("av")
    import sqlite3

    from harness.export.episodes import EpisodeSource
    from harness.export.files import export_dataset
    from tests.dataset_stores import SynthEpisode, write_store

    synth = write_store(tmp_path / "s", [SynthEpisode("x", (3,)), SynthEpisode("y", (2, 2))])
    conn = sqlite3.connect(synth.store / "runs.db")
    conn.execute(
        "UPDATE events SET data = json_set(data, '$.dropped', 1) WHERE task_id = ? AND "
        "type = 'control_steps'",
        (synth.task_ids[1],),
    )
    conn.commit()
    conn.close()
    sources = [EpisodeSource(store=synth.store, task_id=t) for t in synth.task_ids]
    summary = export_dataset(sources, tmp_path / "ds")
    assert summary.episodes == 1
    assert summary.skipped == [f"{synth.task_ids[1]}: 2 control step(s) could not be recorded"]
