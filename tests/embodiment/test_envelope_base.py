"""Issue 25, finding 3: a base move or turn is checked as the motion of the arm it carries.

The gripper's path in the world frame (a line for a translation, an arc for a turn) must
keep the margin from every zone that does not move with the base, whatever the clearance
readings say; and a turn never swings the gripper farther than one base step.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.oracle_kinematics import base_sweep_problems
from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from embodiment.types import Observation

ROOT = Path(__file__).resolve().parents[2]
MOBILE = load_profile(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml")
MOVE = {"direction": "direction", "distance": "distance"}
TURN = {"angle": "angle"}
GRIPPER = MOBILE.to_world(MOBILE.grippers[0].initial_position, "base")


def with_zone(name: str, low: list[float], high: list[float], **base: Any) -> Any:
    data = MOBILE.model_dump()
    data["keep_out"].append({"name": name, "frame": "world", "min": low, "max": high})
    data["base"].update(base)
    return load_profile(data)


COUNTER = with_zone("counter", [0.9, -1.0, 0.0], [1.5, 1.0, 0.95])
"""A counter whose top overhangs the base's lidar: 2.5 m clear at bumper height."""
CORNER_POST = with_zone("post", [0.22, 0.22, 0.0], [0.34, 0.34, 1.5])
"""A post at 45 degrees: clear of the gripper before and after a quarter turn, not during."""


def observation(ee: Any = GRIPPER, pose: Any = (0.0, 0.0, 0.0), clear: float = 2.5) -> Any:
    return Observation(
        state={
            "ee_position": list(ee),
            "joint_positions": list(MOBILE.kinematics.home),  # type: ignore[union-attr]
            "base_pose": list(pose),
        },
        safety={f"clearance.{d}": clear for d in ("forward", "backward", "left", "right")},
        timestamp=time.time(),
    )


def test_move_base_forward_into_the_counter_is_blocked_with_how_far_is_clear() -> None:
    decision = SafetyEnvelope(COUNTER).check_call(
        "move_base", {"direction": "forward", "distance": 0.6}, MOVE, observation()
    )
    assert decision.outcome == "block"
    assert decision.violations[0].startswith("keep_out:counter")
    assert "at most 0.47" in decision.reason  # 0.9 - 0.399 - 0.02 margin, 1 % short
    assert base_sweep_problems(COUNTER, "move_base", GRIPPER, (0, 0, 0), (0.6, 0, 0))
    short = SafetyEnvelope(COUNTER).check_call(
        "move_base", {"direction": "forward", "distance": 0.45}, MOVE, observation()
    )
    assert short.outcome == "allow"
    assert not base_sweep_problems(COUNTER, "move_base", GRIPPER, (0, 0, 0), (0.45, 0, 0))


def test_a_yawed_base_moving_left_is_swept_in_the_world_frame() -> None:
    # Facing -y, "left" is +x in the world: straight toward the counter.
    pose = (0.0, 0.0, -math.pi / 2)
    ee = MOBILE.to_world(MOBILE.grippers[0].initial_position, "base", base_pose=pose)
    decision = SafetyEnvelope(COUNTER).check_call(
        "move_base", {"direction": "left", "distance": 1.0}, MOVE, observation(ee, pose)
    )
    assert decision.outcome == "block" and decision.violations[0].startswith("keep_out:counter")


def test_a_turn_that_swings_the_gripper_through_a_post_is_blocked() -> None:
    assert not CORNER_POST.keep_out[-1].contains(GRIPPER)
    decision = SafetyEnvelope(CORNER_POST).check_call(
        "rotate_base", {"angle": 1.5}, TURN, observation()
    )
    assert decision.outcome == "block" and decision.violations[0].startswith("keep_out:post")
    assert "arc" in decision.reason
    other_way = SafetyEnvelope(CORNER_POST).check_call(
        "rotate_base", {"angle": -1.5}, TURN, observation()
    )
    assert other_way.outcome == "allow"


def test_a_turn_never_swings_the_gripper_farther_than_one_base_step() -> None:
    profile = with_zone("far", [5.0, 5.0, 0.0], [6.0, 6.0, 1.0], max_step_m=0.5)
    decision = SafetyEnvelope(profile).check_call(
        "rotate_base", {"angle": 1.5}, TURN, observation()
    )
    assert decision.outcome == "clamp"
    radius = math.hypot(GRIPPER[0], GRIPPER[1])
    assert decision.arguments["angle"] * radius == pytest.approx(0.5)
    assert "base_sweep_step" in decision.reason


def test_zones_that_move_with_the_base_do_not_block_a_base_move() -> None:
    data = MOBILE.model_dump()
    data["keep_out"].append(
        {"name": "own_mast", "frame": "base", "min": [-0.1, -0.1, 0.0], "max": [0.1, 0.1, 1.5]}
    )
    decision = SafetyEnvelope(load_profile(data)).check_call(
        "move_base", {"direction": "forward", "distance": 0.5}, MOVE, observation()
    )
    assert decision.outcome == "allow"


def test_a_base_move_without_a_gripper_reading_is_blocked() -> None:
    obs = observation()
    state = dict(obs.state)
    state.pop("ee_position")
    data = MOBILE.model_dump()
    data["safety"]["required_readings"] = ["joint_positions"]
    decision = SafetyEnvelope(load_profile(data)).check_call(
        "move_base",
        {"direction": "forward", "distance": 0.3},
        MOVE,
        obs.model_copy(update={"state": state}),
    )
    assert decision.outcome == "block" and "ee_position" in decision.reason
