"""Issue 25, finding 4: joint targets are checked where they put the gripper.

Each target below is inside the Panda's joint limits and within one joint step of its
home pose, which is all the old envelope checked. Mapped through the Panda's URDF they
leave the workspace, come within the base zone's margin, or pass out of the workspace on
the way. The expected gripper positions are checked against an independent forward
kinematics (``benchmarks.lib.safety_oracle``, numpy over the URDF), not the envelope's.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from benchmarks.lib.oracle_kinematics import UrdfChain
from embodiment.envelope import SafetyEnvelope, kinematics
from embodiment.profile import load_profile
from embodiment.types import Motion, Observation

pytest.importorskip("pybullet", reason="the kinematic model needs the [sim] extra")

PANDA = load_profile("panda_tabletop")
HOME = list(PANDA.kinematics.home)  # type: ignore[union-attr]
KINDS = {"joints": "joints"}
LEAVES_WORKSPACE = [-1.1, 0.26, 0.79, -3.07, -0.01, 1.42, 1.24]
INTO_ZONE_MARGIN = [-1.34, 0.6, 1.4, -3.07, 0.28, 2.99, 1.01]
OUT_ON_THE_WAY = [1.46, -1.37, -0.99, -2.0, 0.09, 1.15, -0.7]
ORACLE = UrdfChain.from_profile(PANDA)


def observation(joints: list[float] | None = None) -> Observation:
    q = HOME if joints is None else joints
    ee = list(ORACLE.world_point(q))
    return Observation(state={"ee_position": ee, "joint_positions": list(q)}, timestamp=time.time())


def check(profile: Any, target: list[float], motion: Any = None, **options: Any) -> Any:
    return SafetyEnvelope(profile).check_call(
        "move_joints", {"joints": target}, KINDS, observation(), motion=motion, **options
    )


@pytest.mark.parametrize(
    ("target", "violation"),
    [
        (LEAVES_WORKSPACE, "workspace_bounds"),
        (INTO_ZONE_MARGIN, "keep_out:robot_base"),
        (OUT_ON_THE_WAY, "workspace_bounds"),
    ],
    ids=["target_outside_workspace", "target_in_zone_margin", "path_leaves_workspace"],
)
def test_a_joint_target_within_limits_and_step_is_checked_through_kinematics(
    target: list[float], violation: str
) -> None:
    decision = check(PANDA, target)
    assert decision.outcome == "block", decision
    assert decision.violations[0].startswith(violation)
    assert "kinematics" in decision.reason


def test_the_oracle_agrees_on_where_the_targets_go() -> None:
    ws, zone = PANDA.workspace, PANDA.keep_out[0]
    assert ORACLE.world_point(LEAVES_WORKSPACE)[0] < ws.min[0]
    assert zone.contains(ORACLE.world_point(INTO_ZONE_MARGIN), 0.02)
    assert ws.contains(ORACLE.world_point(OUT_ON_THE_WAY))
    assert not all(
        ws.contains(ORACLE.world_point(q)) for q in ORACLE.line(HOME, OUT_ON_THE_WAY, 64)
    )


def test_a_safe_joint_target_is_allowed_and_a_step_too_far_in_space_is_blocked() -> None:
    safe = [0.3, -0.6, 0.0, -2.2, 0.0, 1.6, 0.8]
    assert check(PANDA, safe).outcome == "allow"
    short = PANDA.model_dump()
    short["limits"]["max_step_m"] = 0.05
    short["safety"]["clamp_tolerance_m"] = 0.01
    decision = check(load_profile(short), safe)
    assert decision.outcome == "block" and decision.violations[0].startswith("step_limit")


def test_an_empty_motion_description_no_longer_checks_nothing() -> None:
    decision = check(PANDA, LEAVES_WORKSPACE, motion=lambda arguments: Motion())
    assert decision.outcome == "block"
    waypoints = check(PANDA, LEAVES_WORKSPACE, motion=lambda a: Motion(waypoints=[(0.4, 0, 1.0)]))
    assert waypoints.outcome == "block"  # a described path does not replace the kinematics


def test_without_a_kinematic_model_a_joint_tool_is_blocked_unless_the_profile_says_so() -> None:
    data = PANDA.model_dump()
    data["kinematics"] = None
    decision = check(load_profile(data), HOME)
    assert decision.outcome == "block" and "joint_limits_only" in decision.reason
    data["safety"]["joint_limits_only"] = True
    assert check(load_profile(data), LEAVES_WORKSPACE).outcome == "allow"


def test_a_model_that_cannot_be_built_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pybullet() -> Any:
        raise kinematics.KinematicsError("the profile's kinematics need PyBullet (pip install)")

    monkeypatch.setattr(kinematics, "_MODELS", {})
    monkeypatch.setattr(kinematics, "_import_pybullet", no_pybullet)
    decision = check(PANDA, HOME)
    assert decision.outcome == "block" and decision.violations[0].startswith(
        "kinematics_unavailable"
    )
    bad_link = PANDA.model_dump()
    bad_link["kinematics"]["ee_link"] = "no_such_link"
    monkeypatch.undo()
    decision = check(load_profile(bad_link), HOME)
    assert decision.outcome == "block" and "no_such_link" in decision.reason


def test_the_envelopes_kinematics_match_the_independent_urdf_chain() -> None:
    model = SafetyEnvelope(PANDA).kinematics()
    assert model is not None
    for target in (HOME, LEAVES_WORKSPACE, INTO_ZONE_MARGIN, OUT_ON_THE_WAY):
        ours = PANDA.to_world(model.ee_point(target), "base")
        assert ours == pytest.approx(ORACLE.world_point(target), abs=1e-5)
