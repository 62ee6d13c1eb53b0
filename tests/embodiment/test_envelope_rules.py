"""Each built-in rule of the envelope, alone: built from a profile, applied to one call.

The envelope runs :func:`~embodiment.envelope.builtin_rules` in order on one verdict; here
each rule is applied by itself, so a rule's behaviour is checked without the others (the
way Gymnasium's ``ClipAction`` is tested without an environment stack). The oracle is the
profile's numbers (``panda_tabletop``: speed 0.005..0.5 m/s, step 0.8 m, joint limits of the
Panda, a ``robot_base`` zone), written here, not read from the rules.
"""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodiment.envelope import Call, SafetyEnvelope, Verdict, builtin_rules
from embodiment.envelope.arguments import CompleteArguments
from embodiment.envelope.base import BaseLimits
from embodiment.envelope.joints import JointLimits
from embodiment.envelope.motion import MotionPath
from embodiment.envelope.positions import PositionLimits
from embodiment.envelope.refs import RefLimits
from embodiment.envelope.scalars import ScalarLimits
from embodiment.profile import load_profile
from embodiment.types import Motion, ObjectInfo, Observation
from tests.tiers import examples

PANDA = load_profile("panda_tabletop")
EE = (0.45, 0.0, 0.9)


def observation(**state: object) -> Observation:
    return Observation(
        state={"ee_position": list(EE), "joint_positions": [0.0] * 7, **state},
        timestamp=time.time(),
    )


def verdict(arguments: dict[str, object], schema: dict[str, object] | None = None) -> Verdict:
    return Verdict(arguments=dict(arguments), ee=EE, schema=schema)


def test_the_builtin_rules_run_in_a_fixed_order_with_names() -> None:
    names = [rule.name for rule in builtin_rules(PANDA)]
    assert names == [
        "arguments",
        "positions",
        "refs",
        "scalars",
        "joints",
        "base",
        "joint_space",
        "base_sweep",
        "motion",
    ]
    rules = builtin_rules(PANDA)
    assert [r.name for r in rules if r.ends_on_block] == ["arguments"]
    assert [r.name for r in rules if r.needs_unblocked] == ["joint_space", "base_sweep", "motion"]
    assert tuple(type(r) for r in SafetyEnvelope(PANDA).builtin) == tuple(type(r) for r in rules)


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=5))
def test_the_scalar_rule_alone_keeps_a_speed_within_the_profile(speed: float) -> None:
    check = verdict({"speed": speed})
    ScalarLimits(PANDA).apply(Call("move", {"speed": "speed"}, observation()), check)
    if speed <= 0 or speed < 0.005:
        assert check.blocks and not check.clamps
    elif speed > 0.5:
        assert check.arguments["speed"] == 0.5 and check.clamps and not check.blocks
    else:
        assert check.arguments["speed"] == speed and not check.clamps and not check.blocks


def test_the_argument_rule_alone_fills_a_default_and_blocks_a_missing_speed() -> None:
    rule = CompleteArguments(PANDA)
    filled = verdict({}, schema={"properties": {"speed": {"default": 0.2}}})
    rule.apply(Call("move", {"speed": "speed"}, observation()), filled)
    assert filled.arguments == {"speed": 0.2} and filled.filled == ["speed"]
    missing = verdict({})
    rule.apply(Call("move", {"speed": "speed"}, observation()), missing)
    assert missing.blocks and missing.blocks[0].startswith("missing_argument:speed")
    assert "between 0.005 and 0.5 m/s" in missing.blocks[0]


@settings(max_examples=examples(200), deadline=None)
@given(st.tuples(*[st.floats(-1.0, 1.5, allow_nan=False)] * 3))
def test_the_position_rule_alone_never_admits_a_target_outside_the_workspace(
    target: tuple[float, float, float],
) -> None:
    check = verdict({"target": list(target)})
    PositionLimits(PANDA).apply(Call("move_to", {"target": "position"}, observation()), check)
    if check.blocks:
        return
    x, y, z = check.arguments["target"]
    assert 0.20 - 1e-9 <= x <= 0.78 + 1e-9 and -0.45 - 1e-9 <= y <= 0.45 + 1e-9
    assert 0.635 - 1e-9 <= z <= 1.20 + 1e-9
    assert math.dist(EE, (x, y, z)) <= 0.8 + 1e-9
    outside_base = x > 0.24 + 1e-9 or abs(y) > 0.15 + 1e-9 or z > 0.80 + 1e-9
    assert outside_base


def test_the_joint_rule_alone_clamps_a_hair_beyond_and_blocks_far_beyond() -> None:
    rule = JointLimits(PANDA)
    near = [2.8973 + 0.01, 0.0, 0.0, -0.1, 0.0, 1.0, 0.0]
    arm = observation(joint_positions=[2.8, 0.0, 0.0, -0.1, 0.0, 1.0, 0.0])
    check = verdict({"joints": near})
    rule.apply(Call("joints", {"joints": "joints"}, arm), check)
    assert not check.blocks and check.arguments["joints"][0] == pytest.approx(2.8973)
    far = list(near)
    far[0] = 3.5
    check = verdict({"joints": far})
    rule.apply(Call("joints", {"joints": "joints"}, arm), check)
    assert check.blocks and check.blocks[0].startswith("joint_limit:0")


def test_the_ref_rule_alone_needs_a_locator_and_weighs_the_object() -> None:
    kinds = {"ref": "object_ref"}
    check = verdict({"ref": "cube"})
    RefLimits(PANDA).apply(Call("pick", kinds, observation()), check)
    assert check.blocks == ["unlocatable:ref: no locator to check where 'cube' is"]

    class Heavy:
        def locate(self, ref: str) -> ObjectInfo:
            return ObjectInfo(position=(0.5, 0.0, 0.66), size=(0.04, 0.04, 0.04), mass_kg=9.0)

    check = verdict({"ref": "cube"})
    RefLimits(PANDA, Heavy()).apply(Call("pick", kinds, observation()), check)
    assert [b.split(":")[0] for b in check.blocks] == ["payload_limit"]


def test_the_base_rule_alone_blocks_a_fixed_base() -> None:
    check = verdict({"distance": 0.2})
    BaseLimits(PANDA).apply(Call("drive", {"distance": "distance"}, observation()), check)
    assert check.blocks and check.blocks[0].startswith("fixed_base: drive moves the base")


def test_the_motion_rule_alone_checks_the_described_path_through_the_base_zone() -> None:
    through = Motion(waypoints=[(0.0, 0.0, 0.7)])
    check = verdict({})
    MotionPath(PANDA).apply(Call("wave", {}, observation(), motion=lambda a: through), check)
    assert check.blocks and check.blocks[0].startswith("workspace_bounds: wave's motion")
    clear = Motion(waypoints=[(0.5, 0.1, 0.9)])
    check = verdict({})
    MotionPath(PANDA).apply(Call("wave", {}, observation(), motion=lambda a: clear), check)
    assert not check.blocks and not check.clamps
