"""The LIBERO world end to end, on LIBERO's own MuJoCo scenes (the ``libero`` extra).

One env is built for the whole module (libero_object task 0, "pick up the alphabet soup and
place it in the basket") and reset to a published initial state per test. Success is only
ever LIBERO's: the oracle of every outcome below is the env's own ``check_success()`` and
BDDL predicates, read here directly from the env, never through our check. The step-level
envelope check records the gripper after every physics step (robosuite runs 25 per
controller step) and tests it against the profile's boxes with plain comparisons written
here, not the envelope's geometry.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from embodiment.profile import load_profile
from harness import Harness, HarnessConfig
from harness.events import DoneEvent, SafetyCheckEvent, ToolResultEvent
from harness.providers import ScriptedModel, call, reply
from worlds.libero import libero_available
from worlds.libero.config import PROFILE as LIBERO_PROFILE
from worlds.libero.env import gl_current

pytestmark = [
    pytest.mark.long,
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]

PROFILE = load_profile(LIBERO_PROFILE)
WS = PROFILE.workspace
ZONE = PROFILE.keep_out[0]
SOUP, BASKET = "alphabet_soup_1", "basket_1_contain_region"


def inside(point: Any, low: Any, high: Any) -> bool:
    return all(lo <= v <= hi for v, lo, hi in zip(point, low, high, strict=True))


@pytest.fixture(scope="module")
def sim() -> Any:
    from worlds.libero.driver import LiberoSim

    world = LiberoSim(suite="libero_object", task=0)
    world.connect()
    world.trace = []  # type: ignore[attr-defined]
    world.add_step_observer(world.trace.append)  # type: ignore[attr-defined]
    yield world
    world.disconnect()


def run(sim: Any, calls: list[Any], instruction: str | None = None) -> list[Any]:
    config = HarnessConfig.model_validate(
        {
            "embodiment": "panda_libero",
            "driver": None,
            "run": {"store": None, "failure_budget": 100, "max_turns": 100},
            "memory": {"enabled": False},
            "evaluation": {"required_tools": ["pick", "place"]},
        }
    )
    model = ScriptedModel([*calls, reply("Done.\nOutcome: achieved")])
    with Harness.from_config(config, model=model, driver=sim) as harness:
        return list(harness.run_stream(instruction or sim.language))


def done_of(events: list[Any]) -> DoneEvent:
    return next(e for e in events if isinstance(e, DoneEvent))


def libero_says(sim: Any) -> tuple[bool, list[bool]]:
    """The oracle: LIBERO's own success check and goal predicates, straight from the env."""
    env = sim.env
    goals = env.env.parsed_problem["goal_state"]
    return bool(env.check_success()), [bool(env.env._eval_predicate(g)) for g in goals]


def test_the_scene_graph_names_libero_objects_and_regions_in_the_base_frame(sim: Any) -> None:
    sim.reset(init_state=0)
    found = {d.ref: d for d in sim.detections()}
    soup, region = found[SOUP], found[BASKET]
    assert (soup.label, soup.category, soup.provenance) == (
        "alphabet soup",
        "object",
        "ground_truth",
    )
    assert region.label == "inside of basket" and "contain" in region.attributes["tags"]
    assert region.attributes["region_of"] == "basket_1"
    # positions: LIBERO's world minus the robot base, read here from MuJoCo directly
    inner = sim.env.env
    base = inner.sim.data.body_xpos[inner.sim.model.body_name2id("robot0_base")]
    body = inner.sim.data.body_xpos[inner.obj_body_id[SOUP]]
    low = np.array(soup.position) - np.array(soup.size) / 2
    high = np.array(soup.position) + np.array(soup.size) / 2
    assert inside(body - base, low, high), (body - base, soup.position, soup.size)
    assert 0.05 < soup.size[2] < 0.12  # a soup can, measured from its collision geoms
    assert "goal" not in " ".join(str(d.attributes) for d in found.values())
    assert found["gripper"].attributes["holding"] is None


def test_frames_are_libero_renders_turned_upright(sim: Any) -> None:
    """In the upright agentview frame the robot is above the objects on the floor: its pixels
    (from MuJoCo's segmentation render of the same camera) sit higher in the image."""
    sim.reset(init_state=0)
    frames = sim.observe().images
    assert set(frames) == {"agentview", "wrist"}
    assert frames["agentview"].shape == (128, 128, 3) and frames["agentview"].dtype == np.uint8
    inner = sim.env.env
    # robosuite's own render, with MuJoCo's GL context made current on this thread (the
    # driver releases it after each of its renders, so any thread can render next)
    with gl_current(sim.env):
        raw = inner.sim.render(camera_name="agentview", width=128, height=128)
        segmentation = inner.sim.render(
            camera_name="agentview", width=128, height=128, segmentation=True
        )[::-1]
    assert np.array_equal(frames["agentview"], raw[::-1])
    model = inner.sim.model
    geoms = segmentation[:, :, 1]  # (object type, object id) per pixel
    body_of = model.geom_bodyid
    names = [model.body_id2name(int(body_of[g])) if g >= 0 else "" for g in range(model.ngeom)]
    robot_rows, object_rows = [], []
    for row in range(128):
        for col in range(128):
            geom = int(geoms[row, col])
            if segmentation[row, col, 0] != 5 or geom < 0:  # 5: mjOBJ_GEOM
                continue
            name = names[geom] or ""
            if name.startswith("robot0_link"):
                robot_rows.append(row)
            elif name.startswith(("alphabet_soup_1", "milk_1", "tomato_sauce_1")):
                object_rows.append(row)
    assert robot_rows and object_rows
    assert np.mean(robot_rows) < np.mean(object_rows)


def test_a_libero_object_episode_is_achieved_by_libero_and_every_step_stays_inside(
    sim: Any,
) -> None:
    sim.reset(init_state=0)
    sim.trace.clear()
    assert libero_says(sim) == (False, [False])
    events = run(sim, [call("pick", ref=SOUP), call("place", ref=SOUP, target=BASKET)])
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.error_kind for r in results] == [None, None], [r.text for r in results]
    checks = [e for e in events if isinstance(e, SafetyCheckEvent)]
    assert [c.outcome for c in checks] == ["allow", "allow"]
    done = done_of(events)
    assert libero_says(sim) == (True, [True])
    assert done.outcome == "achieved"
    assert done.evidence.checked_by == "libero" and done.evidence.check == "programmatic"
    assert [(c.condition, c.held) for c in done.evidence.conditions] == [
        (f"(In {SOUP} {BASKET})", True)
    ]
    # every physics step of the episode inside the workspace and out of the base's zone
    assert len(sim.trace) > 5000
    outside = [p for p in sim.trace if not inside(p, WS.min, WS.max)]
    in_zone = [p for p in sim.trace if inside(p, ZONE.min, ZONE.max)]
    assert outside == [] and in_zone == [], (len(outside), len(in_zone))
    # The driver's own audit (what an eval records per episode) saw the same steps.
    assert sim.step_audit() == {"steps": len(sim.trace), "outside": 0, "first_outside": None}


def test_an_episode_that_misses_the_goal_is_not_achieved_whatever_the_model_claims(
    sim: Any,
) -> None:
    sim.reset(init_state=1)
    events = run(sim, [call("pick", ref="butter_1")])  # the wrong object, and only held
    done = done_of(events)
    success, predicates = libero_says(sim)
    assert (success, predicates) == (False, [False])
    assert done.outcome == "not_achieved"
    assert done.evidence.failed[0].condition == f"(In {SOUP} {BASKET})"
    assert "= false" in done.evidence.failed[0].evidence


def test_refusals_move_nothing_and_read_well(sim: Any) -> None:
    sim.reset(init_state=2)
    before = sim.ee_position()
    steps = len(sim.trace)
    wrong_kind = sim.execute("pick", {"ref": BASKET})
    unknown = sim.execute("pick", {"ref": "alphabet_soup_2"})
    nothing_held = sim.execute("place", {"ref": SOUP, "target": BASKET})
    into_a_plate = sim.execute("open", {"ref": "basket_1"})
    assert not any(r.ok for r in (wrong_kind, unknown, nothing_held, into_a_plate))
    assert "region" in wrong_kind.message
    assert "did you mean alphabet_soup_1" in unknown.message
    assert "pick it first" in nothing_held.message
    assert "not a drawer" in into_a_plate.message
    assert len(sim.trace) == steps and np.allclose(sim.ee_position(), before)
    assert sim.describe_motion("pick", {"ref": BASKET}).waypoints == []


def test_the_driver_keeps_the_driver_contract(sim: Any) -> None:
    """The named checks every driver passes (cameras match the profile, readings present, a
    motion inside the profile runs, stop() interrupts a motion from another thread)."""
    from embodiment.checks import check_driver

    sim.reset(init_state=3)
    report = check_driver(sim, PROFILE)
    assert report.ok, report.render()
    assert report.status("stop_interrupts_motion") == "pass", report.render()


def test_seeded_moves_at_the_limits_never_take_the_gripper_out(sim: Any) -> None:
    """Targets on and just beyond the workspace's faces and around the base's zone, through
    the real loop (the envelope clamps or blocks them): no physics step leaves the box."""
    import random

    sim.reset(init_state=4)
    sim.trace.clear()
    rng = random.Random(27)
    calls = []
    for index in range(10):
        point = [rng.uniform(lo, hi) for lo, hi in zip(WS.min, WS.max, strict=True)]
        if index % 2 == 0:
            axis = rng.randrange(3)
            point[axis] = rng.choice([WS.min[axis], WS.max[axis]]) + rng.uniform(-0.03, 0.03)
        else:  # near the base's keep-out zone
            point = [
                rng.uniform(ZONE.max[0] - 0.02, ZONE.max[0] + 0.08),
                rng.uniform(ZONE.min[1], ZONE.max[1]),
                rng.uniform(WS.min[2], ZONE.max[2] + 0.05),
            ]
        calls.append(call("move_to", x=point[0], y=point[1], z=point[2]))
    events = run(sim, calls, instruction="move near the limits")
    checks = [e for e in events if isinstance(e, SafetyCheckEvent)]
    assert len(checks) == len(calls)
    assert sum(c.outcome in ("allow", "clamp") for c in checks) >= 4  # enough really ran
    assert len(sim.trace) > 1000
    outside = [p for p in sim.trace if not inside(p, WS.min, WS.max)]
    in_zone = [p for p in sim.trace if inside(p, ZONE.min, ZONE.max)]
    assert outside == [] and in_zone == [], (len(outside), len(in_zone), outside[:3])


def test_physics_steps_skip_the_repeated_forward_and_the_physics_is_robosuites(sim: Any) -> None:
    """robosuite's step and the arm's controller both ran MuJoCo's whole forward dynamics on
    the same state before each physics step; the driver computes only what the controller
    reads, once. The oracle is robosuite's own step (both forwards restored): from the same
    full MuJoCo state (warm start included), 6 controller steps (150 physics steps) of a
    moving action end in bit-identical positions, velocities, controls and contact counts.
    A forward called from anywhere else is still the whole one."""
    import mujoco

    from worlds.libero.env import skip_repeated_forward

    sim.reset(init_state=1)
    env = sim.env
    inner = env.env
    model, data = inner.sim.model._model, inner.sim.data._data
    kind = mujoco.mjtState.mjSTATE_INTEGRATION
    start = np.empty(mujoco.mj_stateSize(model, kind))
    mujoco.mj_getState(model, data, start, kind)
    action = np.array([0.3, -0.2, 0.4, 0.0, 0.0, 0.1, -1.0])
    forwards = 0
    sim_class_forward = type(inner.sim).forward

    def counted(self: Any) -> None:
        nonlocal forwards
        forwards += 1
        sim_class_forward(self)

    def run_steps() -> tuple[bytes, int]:
        with gl_current(env):
            for _ in range(6):
                env.step(action)
        return (
            b"".join(np.asarray(a).tobytes() for a in (data.qpos, data.qvel, data.ctrl)),
            int(data.ncon),
        )

    type(inner.sim).forward = counted  # type: ignore[method-assign]
    try:
        lighter = run_steps()
        whole_forwards = forwards
        inner.sim.forward()  # anyone else's forward is the whole one
        called_directly = forwards - whole_forwards
        mujoco.mj_setState(model, data, start, kind)
        del inner._pre_action, inner.sim.forward  # robosuite's own step and forwards
        forwards = 0
        try:
            robosuites = run_steps()
        finally:
            skip_repeated_forward(env)
        robosuite_forwards = forwards
    finally:
        type(inner.sim).forward = sim_class_forward  # type: ignore[method-assign]
    assert whole_forwards == 0 and called_directly == 1
    assert robosuite_forwards == 2 * 6 * 25
    assert lighter == robosuites


def test_robosuites_observables_are_off_and_the_physics_is_the_same_with_them_on(
    sim: Any,
) -> None:
    """Nothing reads robosuite's observation dicts, so the driver switches its observables
    off (robosuite updated every one after each physics step). They stay off across resets,
    and the oracle is the same env with all of them on again: from the same full MuJoCo
    state, 6 controller steps (150 physics steps) end in bit-identical positions,
    velocities, controls and contact counts, while the switched-on observables did sample.
    The step observers' base-frame point is, bit for bit, the arm frame's own conversion."""
    import mujoco

    from worlds.libero.env import disable_observables

    sim.reset(init_state=2)
    env = sim.env
    inner = env.env
    observables = list(inner._observables.values())
    assert observables and not any(o.is_enabled() for o in observables)
    assert "_update_observables" in vars(inner), "robosuite's per-step update not skipped"
    model, data = inner.sim.model._model, inner.sim.data._data
    kind = mujoco.mjtState.mjSTATE_INTEGRATION
    start = np.empty(mujoco.mj_stateSize(model, kind))
    mujoco.mj_getState(model, data, start, kind)
    action = np.array([-0.2, 0.3, 0.3, 0.1, 0.0, -0.1, 1.0])
    gripper = inner.robots[0].gripper
    closing = np.array(gripper.current_action)  # the gripper's command ramps, step by step

    def run_steps() -> tuple[bytes, int]:
        gripper.current_action = closing.copy()
        for _ in range(6):
            env.step(action)
        return (
            b"".join(np.asarray(a).tobytes() for a in (data.qpos, data.qvel, data.ctrl)),
            int(data.ncon),
        )

    del sim.trace[:]
    off = run_steps()
    site = data.site_xpos[inner.robots[0].eef_site_id]
    assert len(sim.trace) == 150 and sim.trace[-1] == sim._arm.frame.from_world(site)
    mujoco.mj_setState(model, data, start, kind)
    del inner._update_observables  # robosuite's own
    for observable in observables:
        observable.set_enabled(True)
    try:
        inner._obs_cache = {}
        on = run_steps()
        sampled = dict(inner._obs_cache)
    finally:
        disable_observables(env)
    assert any(name.endswith("eef_pos") for name in sampled), sorted(sampled)
    assert off == on
