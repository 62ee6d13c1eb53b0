"""Issue 25, finding 1: an argument left out is checked at the value the tool will use.

Each tool below has the signature of the MCP tools the attack used; the envelope gets the
tool's JSON schema (as the harness passes it) and a call that leaves the dangerous
argument out. On the old envelope every one of these was allowed unchecked.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from embodiment.types import Observation
from tests.tiers import examples

PANDA = load_profile("panda_tabletop")
READINGS = {
    "ee_position": [0.307, 0.0, 1.11],
    "joint_positions": [0.0, 0.0, 0.0, -1.57, 0, 1.87, 0],
}


def schema(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


NUMBER = {"type": "number"}
MOVE_ARM = schema(x=NUMBER, y=NUMBER, z=NUMBER, speed={"type": "number", "default": 1.5})
MOVE_ARM_KINDS = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}
MOVE_POINT = schema(target={"type": "array", "default": [0.0, 0.0, 0.7]})
SET_JOINTS = schema(joints={"type": "array", "default": [0.0] * 7})
GRIP = schema(width={"type": "number", "default": 0.15}, force={"type": "number", "default": 140})


def check(name: str, arguments: dict[str, Any], kinds: dict[str, str], tool_schema: Any) -> Any:
    envelope = SafetyEnvelope(PANDA)
    observation = Observation(state=dict(READINGS), timestamp=time.time())
    return envelope.check_call(name, arguments, kinds, observation, schema=tool_schema)


def test_move_arm_without_speed_is_checked_at_its_default_of_1_5_m_s() -> None:
    decision = check("move_arm", {"x": 0.5, "y": 0.0, "z": 0.9}, MOVE_ARM_KINDS, MOVE_ARM)
    assert decision.outcome == "clamp"
    assert decision.arguments["speed"] == PANDA.limits.max_speed_m_s  # sent explicitly
    assert "speed_limit" in decision.reason and "default" in decision.reason


def test_move_point_without_target_is_checked_at_its_default_in_the_base_zone() -> None:
    decision = check("move_point", {}, {"target": "position"}, MOVE_POINT)
    assert decision.outcome == "block"
    assert "target=[0.0, 0.0, 0.7]" in decision.reason


def test_set_joints_without_joints_is_checked_at_all_zero_joints() -> None:
    decision = check("set_joints", {}, {"joints": "joints"}, SET_JOINTS)
    assert decision.outcome == "block"
    assert any(v.startswith("joint_limit:3") for v in decision.violations)


def test_grip_without_width_and_force_is_clamped_from_its_defaults() -> None:
    decision = check("grip", {}, {"width": "width", "force": "force"}, GRIP)
    assert decision.outcome == "clamp"
    assert decision.arguments == {"width": 0.08, "force": 70.0}


@pytest.mark.parametrize(
    ("kind", "hint"),
    [
        ("speed", "pass speed between 0.005 and 0.5 m/s"),
        ("force", "pass force between 0.5 and 70 N"),
        ("width", "pass width up to 0.08 m"),
        ("joints", "pass joints as 7 joint positions"),
        ("position", "pass target as a target [x, y, z]"),
        ("object_ref", "pass ref as the scene ref"),
    ],
)
def test_a_needed_argument_with_no_default_is_blocked_with_what_to_send(
    kind: str, hint: str
) -> None:
    arg = {"speed": "speed", "force": "force", "width": "width", "joints": "joints"}.get(
        kind, "target" if kind == "position" else "ref"
    )
    decision = check("tool", {}, {arg: kind}, schema(**{arg: NUMBER}))
    assert decision.outcome == "block"
    assert decision.violations[0].startswith(f"missing_argument:{arg}")
    assert hint in decision.reason
    sent_null = check("tool", {arg: None}, {arg: kind}, schema(**{arg: NUMBER}))
    assert sent_null.outcome == "block" and "sent as null" in sent_null.reason


def test_a_coordinate_left_out_still_means_stay_where_you_are() -> None:
    move = schema(x=NUMBER, y=NUMBER, z=NUMBER)
    kinds = {"x": "position.x", "y": "position.y", "z": "position.z"}
    decision = check("move", {"x": 0.5}, kinds, move)
    assert decision.outcome == "allow"


@settings(max_examples=examples(150), deadline=None)
@given(
    default=st.one_of(
        st.floats(-10, 10), st.sampled_from([0.0, 1e-4, 0.5, 0.50001, 2.0, float("inf")])
    ),
    kind=st.sampled_from(["speed", "force", "width"]),
)
def test_a_default_is_never_let_through_beyond_its_limit(default: float, kind: str) -> None:
    """Whatever a schema's default, the value the tool would use is inside the profile."""
    limits = PANDA.limits
    bounds = {
        "speed": (limits.min_speed_m_s, limits.max_speed_m_s),
        "force": (limits.min_force_n, limits.max_force_n),
        "width": (0.0, PANDA.grippers[0].max_opening_m),
    }
    decision = check("tool", {}, {"v": kind}, schema(v={"type": "number", "default": default}))
    if decision.outcome != "block":
        low, high = bounds[kind]
        assert low <= decision.arguments["v"] <= high
