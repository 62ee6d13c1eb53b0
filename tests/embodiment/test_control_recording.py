"""Control steps (``embodiment.recording``): the recorder's checks, and the tabletop's steps
against an oracle that watches PyBullet itself.

The oracle wraps the PyBullet module the simulator calls: every motor command
(``setJointMotorControlArray``) is logged with the number of physics steps taken before
it, and at every physics step the joints are read straight from PyBullet. A recorded step
must then hold the joints PyBullet had at its step, the targets PyBullet was last given at
or before it, and no target may change between two recorded steps (else the recorded
action was not the one held for the step). Nothing of the simulator's own recording code
is used to compute what is expected.
"""

from __future__ import annotations

import itertools
import math
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodiment.recording import ControlLayout, ControlRecorder, ControlStep
from tests.tiers import examples

LAYOUT = ControlLayout(
    rate_hz=10,
    state_names=("a", "b"),
    action_names=("u",),
    state_description="two joints (rad)",
    action_description="one target (rad)",
    cameras=("front",),
)


# ====================================================================== the recorder


def test_layout_refuses_repeated_and_empty_names() -> None:
    with pytest.raises(ValueError, match="named more than once"):
        ControlLayout(
            rate_hz=10,
            state_names=("a", "a"),
            action_names=("u",),
            state_description="x",
            action_description="y",
        )
    with pytest.raises(ValueError, match="empty"):
        ControlLayout(
            rate_hz=10,
            state_names=("",),
            action_names=("u",),
            state_description="x",
            action_description="y",
        )
    with pytest.raises(ValueError):
        ControlLayout(
            rate_hz=0,
            state_names=("a",),
            action_names=("u",),
            state_description="x",
            action_description="y",
        )


def test_a_recorder_without_a_sink_sends_nothing_and_renders_nothing() -> None:
    recorder = ControlRecorder(LAYOUT)
    assert not recorder.active and recorder.cameras == ()
    recorder.emit(0.0, [1.0], [2.0, 3.0])  # wrong shapes, but nobody listens: no check needed


def test_unknown_camera_is_refused_naming_the_known_ones() -> None:
    recorder = ControlRecorder(LAYOUT)
    with pytest.raises(ValueError, match=r"'side'.*front"):
        recorder.attach(lambda step: None, ["side"])
    assert not recorder.active


@settings(max_examples=examples(200), deadline=None)
@given(
    state_len=st.integers(0, 4),
    action_len=st.integers(0, 3),
    value=st.floats(allow_nan=True, allow_infinity=True),
    with_frame=st.booleans(),
    back=st.floats(0, 1),
)
def test_every_malformed_step_is_refused_and_none_reaches_the_sink(
    state_len: int, action_len: int, value: float, with_frame: bool, back: float
) -> None:
    got: list[ControlStep] = []
    recorder = ControlRecorder(LAYOUT)
    recorder.attach(got.append, ["front"])
    recorder.emit(1.0, [0.0, 0.0], [0.0], {"front": np.zeros((2, 2, 3), np.uint8)})
    frames = {"front": np.zeros((2, 2, 3), np.uint8)} if with_frame else {}
    state = [value] * state_len
    action = [value] * action_len
    time = 1.0 - back
    well_formed = (
        state_len == 2 and action_len == 1 and math.isfinite(value) and with_frame and time >= 1.0
    )
    if well_formed:
        recorder.emit(time, state, action, frames)
        assert len(got) == 2
    else:
        with pytest.raises(ValueError):
            recorder.emit(time, state, action, frames)
        assert len(got) == 1


# ====================================================================== the tabletop
# Tests on the simulator carry ``sim``, which keeps them out of the fast tier (tests/tiers.py).

pytest.importorskip("pybullet")


class PyBulletSpy:
    """Wraps the module the simulator calls: every target change with the physics step it
    came before, and at every physics step the joints and the targets PyBullet had."""

    JOINTS = (*range(7), 9, 10)

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.pb = sim.state.pb
        self.targets: dict[int, float] = {}
        self.changes: list[tuple[int, dict[int, float]]] = []
        self.joints_at: dict[int, list[float]] = {}
        self.held_at: dict[int, list[float]] = {}
        spy, pb = self, self.pb

        class Wrapped:
            def __getattr__(self, name: str) -> Any:
                return getattr(pb, name)

            def setJointMotorControlArray(
                self, body: int, indices: list[int], mode: int, **kw: Any
            ) -> Any:
                new = dict(zip(indices, map(float, kw["targetPositions"]), strict=True))
                changed = {j: t for j, t in new.items() if spy.targets.get(j) != t}
                spy.targets.update(new)
                if changed:
                    spy.changes.append((sim.state.steps, changed))
                return pb.setJointMotorControlArray(body, indices, mode, **kw)

            def stepSimulation(self, **kw: Any) -> Any:
                cid = kw["physicsClientId"]
                at = sim.state.steps
                spy.joints_at[at] = [
                    pb.getJointState(sim.state.robot, j, physicsClientId=cid)[0] for j in spy.JOINTS
                ]
                spy.held_at[at] = [spy.targets.get(j, math.nan) for j in spy.JOINTS]
                return pb.stepSimulation(**kw)

        sim.state.pb = Wrapped()

    def restore(self) -> None:
        self.sim.state.pb = self.pb


@pytest.fixture(scope="module")
def sim() -> Any:
    from worlds.tabletop.simulator import TabletopSim

    simulator = TabletopSim(seed=3)
    simulator.connect()
    yield simulator
    simulator.disconnect()


def _record(sim: Any, cameras: tuple[str, ...] = ()) -> list[ControlStep]:
    steps: list[ControlStep] = []
    sim.record_control(steps.append, cameras=cameras)
    return steps


@pytest.mark.sim
def test_recorded_steps_are_what_pybullet_measured_and_was_commanded(sim: Any) -> None:
    per = sim.config.physics_per_control
    dt = 1.0 / sim.config.physics_hz
    spy = PyBulletSpy(sim)
    try:
        sim.reset(seed=3)  # the spy sees the targets a reset sends
        steps = _record(sim)
        sim.physics.step(3)  # out of phase: every motion must wait for the next control step
        for action, arguments in (
            ("move_to", {"x": 0.45, "y": 0.1, "z": 0.85}),
            ("pick", {"ref": "red_cube_1"}),
            ("move_joints", {"joints": [0.1, -0.6, 0.0, -2.2, 0.0, 1.6, 0.8]}),
            ("open_gripper", {}),
            ("home", {}),
        ):
            sim.execute(action, arguments)
        sim.record_control(None)
    finally:
        spy.restore()
    assert len(steps) > 100
    assert spy.changes, "the oracle saw no motor command"
    for at, changed in spy.changes:
        assert at % per == 0, f"targets {changed} changed {at % per} physics steps into a period"
    recorded = [round(step.time / dt) for step in steps]
    assert recorded == list(range(recorded[0], recorded[0] + per * len(steps), per))
    for step, at in zip(steps, recorded, strict=True):
        np.testing.assert_allclose(step.state, spy.joints_at[at], atol=1e-12)
        for inside in range(at, at + per):  # held through the whole period that follows
            if inside in spy.held_at:
                np.testing.assert_allclose(step.action, spy.held_at[inside], atol=1e-12)
    layout = sim.control_layout()
    assert layout.rate_hz == sim.config.control_hz == 30
    assert len(layout.state_names) == len(steps[0].state) == 9


@pytest.mark.sim
def test_steps_are_contiguous_across_commands_and_stop_when_recording_stops(sim: Any) -> None:
    sim.reset(seed=3)
    steps = _record(sim)
    sim.execute("move_to", {"x": 0.45, "y": -0.1, "z": 0.85})
    first = len(steps)
    sim.execute("move_to", {"x": 0.5, "y": 0.1, "z": 0.9})
    period = 1 / sim.config.control_hz
    gaps = np.diff([s.time for s in steps])
    np.testing.assert_allclose(gaps, period, atol=1e-9)
    assert 0 < first < len(steps)
    sim.record_control(None)
    count = len(steps)
    sim.execute("move_to", {"x": 0.45, "y": 0.0, "z": 0.85})
    assert len(steps) == count


@pytest.mark.sim
def test_frames_are_rendered_at_each_step_only_for_the_cameras_asked(sim: Any) -> None:
    sim.reset(seed=3)
    steps = _record(sim, cameras=("top",))
    sim.execute("open_gripper", {})
    sim.record_control(None)
    assert steps and all(set(s.frames) == {"top"} for s in steps)
    camera = next(c for c in sim.profile.cameras if c.name == "top")
    assert steps[0].frames["top"].shape == (camera.height, camera.width, 3)


@pytest.mark.sim
def test_a_stop_mid_motion_ends_the_steps_with_the_hold_and_the_clock_goes_on(sim: Any) -> None:
    sim.reset(seed=3)
    steps: list[ControlStep] = []

    def sink(step: ControlStep) -> None:
        steps.append(step)
        if len(steps) == 12:
            threading.Thread(target=sim.stop).start()

    sim.record_control(sink)
    result = sim.execute("move_to", {"x": 0.6, "y": 0.3, "z": 0.8})
    assert result.interrupted
    stopped = len(steps)
    assert stopped >= 12
    held = steps[-1]
    # after the stop the arm holds where it is: the last commanded target is its own joints
    np.testing.assert_allclose(held.action[:7], held.state[:7], atol=0.05)
    sim.execute("move_to", {"x": 0.45, "y": 0.0, "z": 0.85})
    sim.record_control(None)
    times = [s.time for s in steps]
    assert all(b > a for a, b in itertools.pairwise(times))
    np.testing.assert_allclose(np.diff(times), 1 / sim.config.control_hz, atol=1e-9)


def test_control_hz_must_divide_physics_hz() -> None:
    from embodiment.drivers import DriverOptionError
    from embodiment.profile import load_profile
    from worlds.registry import build_driver

    with pytest.raises(DriverOptionError, match="control_hz") as caught:
        build_driver(
            "sim.tabletop",
            profile=load_profile("panda_tabletop"),
            options={"physics_hz": 240, "control_hz": 7},
        )
    assert caught.value.key == "driver.control_hz"
