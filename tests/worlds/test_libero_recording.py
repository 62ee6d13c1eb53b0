"""LIBERO's control steps (``sim.libero`` with a recording sink) against LIBERO itself.

The oracle wraps the env's own ``step``: the action robosuite received and the joints it
had just before (read from robosuite's robot model, by its own joint indexes) are logged
for every controller step. A recorded step must be exactly that pair, at 20 Hz, with the
names robosuite gives those joints. The motion runs on a worker thread, as a harness runs
a physical tool: its frames must be the scene, not what a GL context current on another
thread reads back (every frame here is compared with the same camera rendered on the
main thread). The pick is recorded without a camera (a frame per control step costs
about a tenth of a second of CPU on Mesa's renderer, and the pick has a few hundred); the
frames are checked on the short motion that lets go of the soup.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from embodiment.recording import ControlStep
from worlds.libero import libero_available

pytestmark = [
    pytest.mark.long,
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]


@pytest.fixture(scope="module")
def sim() -> Any:
    from worlds.libero.driver import LiberoSim

    world = LiberoSim(suite="libero_object", task=0)
    world.connect()
    yield world
    world.disconnect()


def _on_worker(function: Any) -> Any:
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(value=function()))
    thread.start()
    thread.join()
    return result["value"]


def test_the_gl_context_is_made_at_the_first_frame_and_changes_nothing_the_skills_read(
    sim: Any,
) -> None:
    """The env renders nothing until a frame is asked for (this file's first test, so no
    frame has been); the first one, made on a worker thread as a tool would, shows the scene
    and leaves every body pose, velocity and warm start bit for bit as it was."""
    inner = sim.env.env
    assert inner.sim._render_context_offscreen is None, "a GL context before any frame"
    assert not any(name.endswith("image") for name in inner._observables)
    sim.execute("move_to", {"x": 0.0, "y": 0.1, "z": 0.25})  # poses lag the last step
    data = inner.sim.data._data
    fields = ("xpos", "xquat", "geom_xpos", "site_xpos", "qpos", "qvel", "qacc_warmstart")
    before = {name: getattr(data, name).copy() for name in fields}
    frame = _on_worker(lambda: sim.render("agentview"))
    assert frame.shape == (128, 128, 3) and frame.std() > 10
    assert inner.sim._render_context_offscreen is not None
    for name in fields:
        np.testing.assert_array_equal(getattr(data, name), before[name], err_msg=name)
    np.testing.assert_array_equal(sim.render("agentview"), frame)


def test_a_frame_rendered_on_a_worker_thread_is_the_scene(sim: Any) -> None:
    sim.reset(init_state=0)
    for camera in ("agentview", "wrist"):
        main = sim.render(camera)
        assert main.std() > 10, "the main thread's frame shows nothing"
        np.testing.assert_array_equal(_on_worker(lambda c=camera: sim.render(c)), main)
    looked = _on_worker(lambda: sim.execute("look", {"camera": "wrist"}))
    np.testing.assert_array_equal(looked.data["images"]["wrist"], sim.render("wrist"))


def test_recorded_steps_are_what_robosuite_measured_and_received(sim: Any) -> None:
    sim.reset(init_state=0)
    env = sim.env
    robot = env.env.robots[0]
    sent: list[tuple[np.ndarray, np.ndarray]] = []
    original = env.step

    def step(action: Any) -> Any:
        data = env.env.sim.data
        joints = np.concatenate(
            [
                data.qpos[robot._ref_joint_pos_indexes],
                data.qpos[robot._ref_gripper_joint_pos_indexes],
            ]
        )
        sent.append((np.array(action, dtype=float), joints.copy()))
        return original(action)

    env.step = step
    steps: list[ControlStep] = []
    filmed: list[ControlStep] = []
    try:
        sim.record_control(steps.append)
        result = _on_worker(lambda: sim.execute("pick", {"ref": "alphabet_soup_1"}))
        sim.record_control(None)
        after = len(steps)
        sim.execute("open", {"ref": "alphabet_soup_1"})  # not recorded any more
        before = sim.render("agentview").astype(float)
        sim.record_control(filmed.append, cameras=("agentview",))
        released = _on_worker(lambda: sim.execute("open_gripper", {}))
    finally:
        env.step = original
        sim.record_control(None)
    assert result.ok, result.message
    assert released.ok, released.message
    assert len(steps) == after
    assert all(not s.frames for s in steps)  # no camera asked for, none rendered
    assert len(steps) == len(sent[: len(steps)]) > 20
    for step, (action, joints) in zip(steps, sent, strict=False):
        np.testing.assert_array_equal(step.action, action)
        np.testing.assert_allclose(step.state, joints, atol=1e-12)
    np.testing.assert_allclose(np.diff([s.time for s in steps]), 1 / 20, atol=1e-9)
    layout = sim.control_layout()
    gripper_joints = list(robot.gripper.joints)
    assert list(layout.state_names) == [*robot.robot_joints, *gripper_joints]
    assert layout.rate_hz == env.env.control_freq
    # frames of the scene on the worker thread: the first one before the first step moved
    # anything, the last what the camera shows now, give or take the last step's motion
    assert len(filmed) > 1 and all(set(s.frames) == {"agentview"} for s in filmed)
    first, last = (filmed[i].frames["agentview"].astype(float) for i in (0, -1))
    assert np.abs(first - before).mean() < 1
    assert np.abs(last - sim.render("agentview").astype(float)).mean() < 8
