"""In PyBullet, joint-space and base motions of the mobile manipulator stay inside its
profile: every physics step of every motion the envelope let through is checked.

The simulator (:mod:`worlds.mobile.simulator`) carries the profile's xArm 6 on a moving
base; after each physics step the test records the end-effector link's world position,
the base pose and the joints, and checks them with plain box tests written here (not the
envelope's geometry): inside the workspace (base frame, at that step's base pose),
outside every world keep-out zone, joints within their limits. A table whose top the
base's clearance sensor passes under stands in front of the robot, so base moves toward
it are only stopped by the envelope's sweep of the gripper.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from harness import Harness, HarnessConfig
from harness.events import ToolResultEvent
from harness.providers import ScriptedModel, call, reply
from harness.world.physical import physical_tools

pytest.importorskip("pybullet", reason="the simulator needs the [sim] extra")
pytestmark = pytest.mark.sim

ROOT = Path(__file__).resolve().parents[2]
TABLE = {"min": [1.0, -0.6, 0.25], "max": [1.6, 0.6, 0.95]}


def table_profile() -> Any:
    data = load_profile(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml").model_dump()
    data["keep_out"].append({"name": "table", "frame": "world", **TABLE})
    return load_profile(data)


PROFILE = table_profile()


def inside(point: Any, low: Any, high: Any) -> bool:
    return all(lo <= v <= hi for v, lo, hi in zip(point, low, high, strict=True))


def local(point: Any, pose: Any) -> tuple[float, float, float]:
    """A world point in the base frame at base pose (x, y, yaw)."""
    x, y, yaw = pose
    dx, dy = point[0] - x, point[1] - y
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * dx + s * dy, -s * dx + c * dy, point[2])


@pytest.fixture(scope="module")
def sim() -> Any:
    from worlds.mobile.simulator import MobileManipulatorSim, Obstacle

    trace: list[tuple[Any, Any, Any]] = []
    robot = MobileManipulatorSim(PROFILE, obstacles=[Obstacle(**TABLE)])
    robot.on_step = lambda: trace.append(
        (robot.ee_position(), tuple(robot.base_pose), robot.joint_positions())
    )
    robot.connect()
    robot.trace = trace  # type: ignore[attr-defined]
    yield robot
    robot.disconnect()


def run(robot: Any, calls: list[Any]) -> list[ToolResultEvent]:
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "failure_budget": 1000, "max_turns": 1000},
            "memory": {"enabled": False},
        }
    )
    with Harness(
        config,
        model=ScriptedModel([*calls, reply("done")]),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(PROFILE, observe=robot.observe),
    ) as harness:
        events = list(harness.run_stream("move the arm and the base"))
    return [e for e in events if isinstance(e, ToolResultEvent)]


def violations(trace: list[Any]) -> list[str]:
    ws = PROFILE.workspace
    limits = PROFILE.limits.joint_limits or []
    zones = [z for z in PROFILE.keep_out if z.frame == "world"]
    found = []
    for ee, pose, joints in trace:
        if not inside(local(ee, pose), ws.min, ws.max):
            found.append(f"outside the workspace at {ee} (base {pose})")
        found += [f"inside {z.name} at {ee}" for z in zones if inside(ee, z.min, z.max)]
        found += [
            f"joint {i} at {q:.3f}"
            for i, (q, (lo, hi)) in enumerate(zip(joints, limits, strict=True))
            if not lo - 0.01 <= q <= hi + 0.01
        ]
    return found


def test_joint_and_base_tasks_never_leave_the_profile(sim: Any) -> None:
    home = list(PROFILE.kinematics.home)  # type: ignore[union-attr]
    results = run(
        sim,
        [
            call("move_joints", joints=[0.4, -0.5, -0.7, 0.0, 0.4, 0.0]),
            call("move_joints", joints=[0.4, -1.9, -0.7, 0.0, 0.4, 0.0]),  # leaves the workspace
            call("move_joints", joints=home),
            call("move_base", direction="forward", distance=1.0),  # sweeps into the table
            call("move_base", direction="forward", distance=0.3),
            call("rotate_base", angle=1.2),
            call("move_base", direction="left", distance=0.8),
            call("rotate_base", angle=-1.2),
        ],
    )
    kinds = [r.error_kind for r in results]
    assert kinds == [None, "blocked", None, "blocked", None, None, None, None], [
        r.text for r in results
    ]
    assert "kinematics" in results[1].text and "keep_out:table" in results[3].text
    assert len(sim.trace) > 1000  # the allowed motions really ran
    assert violations(sim.trace) == []


def test_random_joint_and_base_commands_never_leave_the_profile(sim: Any) -> None:
    rng = random.Random(7)
    limits = PROFILE.limits.joint_limits or []
    calls = []
    for _ in range(40):
        roll = rng.random()
        if roll < 0.5:
            joints = [round(rng.uniform(lo, hi), 3) for lo, hi in limits]
            calls.append(call("move_joints", joints=joints))
        elif roll < 0.8:
            direction = rng.choice(["forward", "backward", "left", "right"])
            calls.append(
                call("move_base", direction=direction, distance=round(rng.uniform(0, 1.5), 3))
            )
        else:
            calls.append(call("rotate_base", angle=round(rng.uniform(-2.0, 2.0), 3)))
    before = len(sim.trace)
    results = run(sim, calls)
    allowed = [r for r in results if r.error_kind is None]
    assert len(allowed) >= 8, [r.text for r in results]  # enough really moved
    assert len(sim.trace) > before
    assert violations(sim.trace) == []
