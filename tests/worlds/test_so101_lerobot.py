"""The ``lerobot.robot`` driver against LeRobot itself, without hardware (issue 46).

A LeRobot ``Robot`` backed by the MuJoCo SO-101 (``worlds.so101.lerobot_sim``, type
``so101_mujoco``, registered with LeRobot's ``RobotConfig`` like any plugin) is driven by
our driver through LeRobot's API only: ``make_robot_from_config``, ``connect``,
``get_observation``, ``send_action`` (which clips and returns what it applied) and
``disconnect``. LeRobot needs Python >= 3.12 and torch, so these tests run in LeRobot's
interpreter; from any other one, with ``HARNESS_LEROBOT_PYTHON`` set, the first test runs
this file there (one command, docs/so101.md):

    HARNESS_LEROBOT_PYTHON=~/venvs/lerobot312/bin/python python -m pytest \
        tests/worlds/test_so101_lerobot.py
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE_HAS_LEROBOT = importlib.util.find_spec("lerobot") is not None
OTHER = os.environ.get("HARNESS_LEROBOT_PYTHON", "")
pytestmark = pytest.mark.long  # LeRobot's interpreter and MuJoCo episodes
inside = pytest.mark.skipif(
    not HERE_HAS_LEROBOT or importlib.util.find_spec("mink") is None,
    reason="needs LeRobot and the so101 extra in this interpreter (or HARNESS_LEROBOT_PYTHON)",
)


@pytest.mark.skipif(
    HERE_HAS_LEROBOT or not OTHER, reason="runs when HARNESS_LEROBOT_PYTHON names LeRobot's Python"
)
def test_in_lerobot_s_interpreter(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            OTHER,
            "-m",
            "pytest",
            str(Path(__file__)),
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-x",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_LEROBOT_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    progress = done.stdout.split()[0]  # one character per test (-q)
    assert set(progress) <= {".", "s"} and progress.count(".") >= 9, done.stdout


def driver(tmp_path: Path, **robot: object):  # type: ignore[no-untyped-def]
    from worlds.registry import build_driver, load_profile

    fields = {"type": "so101_mujoco", "seed": 0, "calibration_dir": str(tmp_path), **robot}
    return build_driver(
        "lerobot.robot",
        profile=load_profile("so101"),
        options={"robot": fields, "plugins": ["worlds.so101.lerobot_sim"], "pace": False},
    )


@inside
def test_observation_maps_to_readings_frames_and_the_model_s_end_effector(tmp_path: Path) -> None:
    arm = driver(tmp_path)
    arm.connect()
    try:
        sim = arm.robot.sim  # the simulator under LeRobot's API, for the oracle only
        observation = arm.observe()
        measured = sim.physics.joints()[:5]
        assert observation.state["joint_positions"] == pytest.approx(measured, abs=1e-3)
        assert observation.state["ee_position"] == pytest.approx(
            sim.physics.ee_position(), abs=2e-3
        )
        assert observation.state["gripper"] == "open"
        assert set(observation.images) == {"front", "wrist"}
        assert observation.images["front"].shape == (240, 320, 3)
    finally:
        arm.disconnect()
    assert arm.robot is None


@inside
def test_an_action_lerobot_clips_is_reported_and_stop_holds(tmp_path: Path) -> None:
    arm = driver(tmp_path, max_relative_target=1.0)  # degrees per action, as on the follower
    arm.options = arm.options.model_copy(update={"max_joint_speed_rad_s": 3.0})
    arm.connect()
    try:
        start = arm.observe().state["joint_positions"]
        target = [start[0] + 0.3, *start[1:]]
        result = arm.execute("move_joints", {"joints": target})
        assert not result.ok and "applied a different action than asked" in result.message
        asked, applied = result.applied["clipped"]["shoulder_pan.pos"]
        assert abs(applied - asked) > 0.5  # clipped by LeRobot's max_relative_target

        arm.robot.config.max_relative_target = None
        sent = []
        original = arm.robot.send_action

        def counting(action):  # type: ignore[no-untyped-def]
            sent.append(dict(action))
            if len(sent) == 3:
                threading.Thread(target=arm.stop).start()
                threading.Event().wait(0.2)
            return original(action)

        arm.robot.send_action = counting
        before = arm.observe().state["joint_positions"]
        stopped = arm.execute("move_joints", {"joints": [before[0] - 0.8, *before[1:]]})
        assert stopped.interrupted and not stopped.ok
        held = sent[-1]  # the hold: the measured position, not the target
        assert held["shoulder_pan.pos"] > (before[0] - 0.8) * 57.29 + 20
        assert len(sent) < 10
    finally:
        arm.disconnect()


SUITE = {
    "place": ("put the red cube in the box", [("red_cube_1", "box_1")]),
    "stack": ("stack the blue cube on the red cube", [("blue_cube_1", "red_cube_1")]),
    "sort": (
        "put all the red cubes in the box",
        [("red_cube_1", "box_1"), ("red_cube_2", "box_1")],
    ),
    "pick": ("pick up the green cube", [("green_cube_1", None)]),
}
"""The tasks of ``so101_tabletop`` (worlds/so101/suites.py): what to carry where."""


@inside
def test_the_jaw_closes_in_steps_with_the_follower_s_gripper_torque(tmp_path: Path) -> None:
    """The driver moves the gripper's target over ``gripper_ramp_s`` (never one jump into
    the object), never more than ``gripper_lead`` from the measured jaw, and the sim
    robot's ``configure()`` gives its gripper motor half the model's torque, as the real
    follower's writes ``Max_Torque_Limit`` 500 of 1000."""
    import mujoco

    from worlds.so101.model import model_path

    arm = driver(tmp_path, cameras_on=False)
    arm.connect()
    try:
        published = mujoco.MjModel.from_xml_path(str(model_path()))
        full = published.actuator_forcerange[published.actuator("gripper").id]
        physics = arm.robot.sim.physics
        ours = physics.model.actuator_forcerange[physics.model.actuator("gripper").id]
        assert list(ours) == pytest.approx([v / 2 for v in full])
        assert list(full) == pytest.approx([-3.35, 3.35])  # the published STS3215's

        sent: list[float] = []
        measured: list[float] = []
        original = arm.robot.send_action

        def recording(action):  # type: ignore[no-untyped-def]
            measured.append(float(arm.robot.get_observation()["gripper.pos"]))
            sent.append(float(action["gripper.pos"]))
            return original(action)

        arm.robot.send_action = recording
        start = arm.observe().state["gripper_position"]
        closing = arm.execute("close_gripper", {})
        assert closing.ok, closing.message
        ramp = round(arm.options.gripper_ramp_s * arm.options.rate_hz)
        lead = arm.options.gripper_lead
        assert ramp > 5 and lead is not None
        for k, (goal, jaw) in enumerate(zip(sent, measured, strict=True), start=1):
            assert goal >= start * (1 - min(k, ramp) / ramp) - 0.01  # never ahead of the ramp
            assert abs(goal - jaw) <= lead + 1e-6  # never more than the lead from the jaw
        assert sent[-1] == 0.0 and measured[-1] < lead
        assert arm.observe().state["gripper"] == "closed"

        arm.options = arm.options.model_copy(update={"gripper_ramp_s": 0.0, "gripper_lead": None})
        sent.clear()
        assert arm.execute("open_gripper", {}).ok
        assert set(sent) == {arm.options.gripper_open}  # one jump, as asked
    finally:
        arm.disconnect()


@inside
@pytest.mark.parametrize(
    ("task", "limit"), [*((task, None) for task in SUITE), ("place", 5.0)], ids=str
)
def test_the_suite_s_tasks_through_lerobot_s_api(
    task: str, limit: float | None, tmp_path: Path
) -> None:
    """Each task of ``so101_tabletop`` (seed 0), sent as joint targets and jaw moves through
    the driver, so through LeRobot's ``send_action`` (planned on the published model by the
    world's skill planner, from the simulator's ground truth: the robot has no camera-based
    object positions), judged by the same ground-truth task check as the direct world.
    Every planned sample is its own ``move_joints`` (the arm stops at each), so a carried
    cube is shaken more than in the direct world's continuous motion. ``limit``: LeRobot's
    ``max_relative_target`` of a first run on a real arm (docs/so101.md); every result
    must be ok, so nothing, the jaw's squeeze on the carried cube included, was clipped."""
    from harness.world.task_check import GroundTruthTaskCheck
    from worlds.so101.model import GRASP_SITE
    from worlds.so101.skills import JawMove, ObjectState, Segment, yaw_of

    instruction, moves = SUITE[task]
    arm = driver(tmp_path, cameras_on=False, layout=task, max_relative_target=limit)
    arm.connect()
    try:
        sim = arm.robot.sim
        truth = sim.truth

        def run(plan) -> None:  # type: ignore[no-untyped-def]
            assert not hasattr(plan, "message"), plan
            for step in plan.steps:
                if isinstance(step, JawMove):
                    name = "close_gripper" if step.gripper < 0.5 else "open_gripper"
                    result = arm.execute(name, {})
                    assert result.ok, result.message
                    continue
                assert isinstance(step, Segment)
                for config in step.configs:  # every sample: a Cartesian line stays straight
                    result = arm.execute("move_joints", {"joints": list(config)})
                    assert result.ok, result.message

        for ref, target in moves:
            joints = arm.observe().state["joint_positions"]
            position, yaw = truth.pose(ref)
            run(sim._planner.pick(ref, "top", ObjectState(position, yaw, "cube"), joints))
            assert truth.held_ref() == ref
            if target is None:
                continue
            joints = arm.observe().state["joint_positions"]
            where, turn = truth.pose(target)
            point, rotation = sim._ik.fk(joints, GRASP_SITE)
            state = ObjectState(where, turn, truth.kind(target))
            run(sim._planner.place(ref, target, state, joints, tuple(point), yaw_of(rotation)))
        verdict = GroundTruthTaskCheck(sim.detections, sim.post_conditions()).check(instruction, [])
        assert verdict.outcome == "achieved", verdict.summary
        assert sim.step_audit()["outside"] == 0
    finally:
        arm.disconnect()


@inside
def test_a_harness_session_connects_checks_and_disconnects_the_robot(tmp_path: Path) -> None:
    from harness import Harness, HarnessConfig
    from harness.events import SafetyCheckEvent
    from harness.providers import ScriptedModel, call, reply
    from harness.store import MemoryRunStore

    config = HarnessConfig.model_validate(
        {
            "embodiment": "so101",
            "driver": {
                "name": "lerobot.robot",
                "robot": {"type": "so101_mujoco", "calibration_dir": str(tmp_path)},
                "plugins": ["worlds.so101.lerobot_sim"],
                "pace": False,
            },
            "run": {"max_turns": 6, "store": None},
            "memory": {"enabled": False},  # the scripted model answers the task alone
        }
    )
    model = ScriptedModel(
        [
            call("move_joints", joints=[0.0, 1.2, -1.2, 0.0, 0.0]),  # the jaw far up and out
            call("move_joints", joints=[0.2, -0.36, 0.415, 1.52, 1.71]),
            reply("done"),
        ]
    )
    with Harness.from_config(config, model=model, store=MemoryRunStore()) as harness:
        robot = harness.driver
        events = list(harness.run_stream("move the arm"))
        assert robot.robot is not None  # connected for the session
    verdicts = [e.outcome for e in events if isinstance(e, SafetyCheckEvent)]
    assert verdicts[:2] == ["block", "allow"], [e.model_dump_json()[:300] for e in events[-6:]]
    assert robot.robot is None  # disconnected with it
