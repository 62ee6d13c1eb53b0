"""Issue 25's attack classes, bounded: no command outside the profile reaches the hardware.

Omitted arguments with unsafe defaults, joint targets (judged through the oracle's own
numpy forward kinematics of the URDF), base moves and turns (the carried gripper swept by
the oracle's own geometry), and profiles with infinite or null limits. ``python -m
benchmarks.safety_fuzz_body`` runs the same classes at 20,000 calls each.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from benchmarks.safety_fuzz_body import BodyCampaign, body_scenarios
from harness.providers import call
from tests.tiers import examples

pytest.importorskip("pybullet", reason="the kinematic model needs the [sim] extra")

RUNNER = BodyCampaign()
BOUNDED = settings(
    max_examples=examples(25),
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def attack(kind: str, scenario: Any) -> None:
    tally = RUNNER.run(kind, scenario)
    assert tally.escaped == 0, "\n".join(tally.escapes)


@BOUNDED
@given(body_scenarios("defaults"))
def test_left_out_arguments_never_run_at_an_unsafe_default(scenario: Any) -> None:
    attack("defaults", scenario)


@BOUNDED
@given(body_scenarios("joints"))
def test_joint_targets_never_take_the_gripper_out_of_the_profile(scenario: Any) -> None:
    attack("joints", scenario)


@BOUNDED
@given(body_scenarios("base"))
def test_base_motions_never_sweep_the_gripper_out_of_the_profile(scenario: Any) -> None:
    attack("base", scenario)


@settings(max_examples=examples(200), deadline=None, database=None, derandomize=True)
@given(body_scenarios("profiles"))
def test_a_profile_with_a_limit_switched_off_never_loads(scenario: Any) -> None:
    attack("profiles", scenario)


def test_the_attack_really_executes_commands() -> None:
    """Zero escapes must not mean zero work: a safe call of each class reaches the arm."""
    home = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
    arm_home = [0.0, -0.8, -0.45, 0.0, 0.0, 0.0]
    safe = {
        "defaults": (None, [call("move_gently", x=0.5, y=0.0), call("grip")]),
        "joints": (
            {"joints": home},
            [call("move_joints", joints=[0.2, -0.6, 0.1, -2.2, 0.1, 1.7, 0.8])],
        ),
        "base": (
            {"joints": arm_home, "base": (0.0, 0.0, 0.0)},
            [call("move_base", direction="left", distance=0.3), call("rotate_base", angle=0.5)],
        ),
    }
    for kind, scenario in safe.items():
        tally = RUNNER.run(kind, scenario)
        assert tally.executed >= 1 and tally.escaped == 0, (kind, tally)
