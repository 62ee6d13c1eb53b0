"""LIBERO's control steps (``sim.libero`` with a recording sink) against LIBERO itself.

The oracle wraps the env's own ``step``: the action robosuite received and the joints it
had just before (read from robosuite's robot model, by its own joint indexes) are logged
for every controller step. A recorded step must be exactly that pair, at 20 Hz, with the
names robosuite gives those joints. The motion runs on a worker thread, as a harness runs
a physical tool: its frames must be the scene, not what a GL context current on another
thread reads back (every frame here is compared with the same camera rendered on the
main thread).
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
    try:
        sim.record_control(steps.append, cameras=("agentview",))
        result = _on_worker(lambda: sim.execute("pick", {"ref": "alphabet_soup_1"}))
        sim.record_control(None)
        after = len(steps)
        sim.execute("open", {"ref": "alphabet_soup_1"})  # not recorded any more
    finally:
        env.step = original
        sim.record_control(None)
    assert result.ok, result.message
    assert len(steps) == after
    assert len(steps) == len(sent[: len(steps)]) > 20
    for step, (action, joints) in zip(steps, sent, strict=False):
        np.testing.assert_array_equal(step.action, action)
        np.testing.assert_allclose(step.state, joints, atol=1e-12)
    np.testing.assert_allclose(np.diff([s.time for s in steps]), 1 / 20, atol=1e-9)
    layout = sim.control_layout()
    gripper_joints = list(robot.gripper.joints)
    assert list(layout.state_names) == [*robot.robot_joints, *gripper_joints]
    assert layout.rate_hz == env.env.control_freq
    # the last frame shows what the camera shows now, give or take the last step's motion
    last = steps[-1].frames["agentview"].astype(float)
    assert np.abs(last - sim.render("agentview").astype(float)).mean() < 8
