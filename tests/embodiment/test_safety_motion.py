"""The envelope's parts that issue 14 added: exact geometry, declarations, described and
conservative motions, recovery from a reading outside the envelope, minimum speeds,
custom rules re-checked, and drivers whose descriptions match what they execute."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodiment.checks import check_driver
from embodiment.declarations import declaration_problems, schema_arguments
from embodiment.envelope import RuleOutcome, SafetyEnvelope, SafetyRequest
from embodiment.geometry import (
    moves_away_from_box,
    point_box_distance,
    segment_box_distance,
    segment_hits_box,
)
from embodiment.profile import ProfileError, load_profile
from embodiment.types import ActionSpec, Motion, Observation
from tests.tiers import examples
from worlds.fake import FakeRobot

PANDA = load_profile("panda_tabletop")
MOVE = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}
LOW, HIGH = (0.0, 0.0, 0.0), (1.0, 2.0, 0.5)


def readings(ee: list[float], joints: list[float] | None = None) -> Observation:
    joints = joints or [0.0, 0.0, 0.0, -1.5, 0.0, 1.8, 0.0]
    return Observation(state={"ee_position": ee, "joint_positions": joints})


# ---------------------------------------------------------------------- geometry

coordinate = st.floats(-2.0, 3.0, allow_nan=False)
points = st.tuples(coordinate, coordinate, coordinate)


@settings(max_examples=examples(300), deadline=None)
@given(points, points)
def test_segment_distance_is_the_minimum_over_the_segment(a: Any, b: Any) -> None:
    exact = segment_box_distance(a, b, LOW, HIGH)
    samples = min(
        point_box_distance([p + (q - p) * i / 400 for p, q in zip(a, b, strict=True)], LOW, HIGH)
        for i in range(401)
    )
    assert exact <= samples + 1e-9  # never more than any point on the segment
    step = math.dist(a, b) / 400
    assert exact >= samples - step - 1e-9  # and the samples are that close to it
    assert (exact == 0) == segment_hits_box(a, b, LOW, HIGH)


def test_moving_away_from_a_box() -> None:
    inside = (0.5, 0.1, 0.25)  # nearest face: y = 0
    assert moves_away_from_box(inside, (0.5, -0.5, 0.25), LOW, HIGH)
    assert not moves_away_from_box(inside, (0.5, 1.0, 0.25), LOW, HIGH)  # deeper
    assert not moves_away_from_box(inside, (0.9, 0.1, 0.25), LOW, HIGH)  # sliding along
    beside = (1.01, 1.0, 0.25)
    assert moves_away_from_box(beside, (1.5, 1.0, 0.25), LOW, HIGH)
    assert moves_away_from_box(beside, (1.01, 3.0, 0.25), LOW, HIGH)  # parallel, not closer
    assert not moves_away_from_box(beside, (0.9, 1.0, 0.25), LOW, HIGH)


# ---------------------------------------------------------------------- declarations


def test_schemas_that_list_their_arguments_and_those_that_do_not() -> None:
    assert schema_arguments({"type": "object", "properties": {"x": {}}}) == (["x"], "")
    assert schema_arguments({"type": "object"}) == ([], "")
    assert "additionalProperties" in schema_arguments({"additionalProperties": True})[1]
    assert "$ref" in schema_arguments({"$ref": "#/$defs/A"})[1]
    assert "oneOf" in schema_arguments({"oneOf": []})[1]


def test_a_declared_unenumerable_tool_passes_only_declared_keys() -> None:
    schema = {"type": "object", "additionalProperties": True}
    kinds = {"x": "position.x", "y": "position.y", "z": "position.z"}
    assert declaration_problems("move", {"x": 0.5}, kinds, schema) == []
    problems = declaration_problems("move", {"x": 0.5, "speed": 9}, kinds, schema)
    assert problems and problems[0].startswith("undeclared_argument:speed")


def test_free_arguments_are_plain_values_only() -> None:
    kinds = {"label": "free"}
    assert declaration_problems("tag", {"label": "left bin"}, kinds, None) == []
    assert declaration_problems("tag", {"label": 3}, kinds, None) == []
    for value in ([0.5, 0.0, 0.9], {"x": 9}, math.nan):
        assert declaration_problems("tag", {"label": value}, kinds, None)[0].startswith(
            "invalid_argument:label"
        )


def test_a_no_argument_tool_must_be_declared_or_listed() -> None:
    env = SafetyEnvelope(PANDA)
    empty = {"type": "object", "properties": {}}
    undeclared = env.check_call("home", {}, None, readings([0.4, 0.0, 0.9]), schema=empty)
    assert undeclared.outcome == "block" and "without arguments" in undeclared.reason
    assert (
        env.check_call("home", {}, {}, readings([0.4, 0.0, 0.9]), schema=empty).outcome == "allow"
    )
    listed = load_profile(
        {
            **PANDA.model_dump(),
            "safety": {**PANDA.safety.model_dump(), "no_argument_tools": ["home"]},
        }
    )
    env = SafetyEnvelope(listed)
    assert (
        env.check_call("home", {}, None, readings([0.4, 0.0, 0.9]), schema=empty).outcome == "allow"
    )
    loud = env.check_call("home", {"fast": True}, None, readings([0.4, 0.0, 0.9]), schema=empty)
    assert loud.outcome == "block" and "undeclared_argument:fast" in loud.reason


def test_the_removed_unchecked_tools_setting_is_a_named_profile_error() -> None:
    data = PANDA.model_dump()
    data["safety"]["unchecked_tools"] = ["wave"]
    with pytest.raises(ProfileError, match="unchecked_tools is no longer accepted"):
        load_profile(data)


def test_action_specs_declare_every_argument() -> None:
    from pydantic import BaseModel

    class Args(BaseModel):
        x: float
        label: str = ""

    with pytest.raises(ValueError, match="no safety kind for label"):
        ActionSpec(name="mark", description="mark", arguments=Args, safety={"x": "position.x"})
    with pytest.raises(ValueError, match="safety=\\{\\}"):
        ActionSpec(name="home", description="home", arguments=BaseModel)
    ActionSpec(name="home", description="home", arguments=BaseModel, safety={})
    ActionSpec(name="look", description="look", arguments=BaseModel, physical=False)


# ---------------------------------------------------------------------- motions


def test_a_described_motion_is_checked_segment_by_segment() -> None:
    env = SafetyEnvelope(PANDA)
    start = readings([0.5, -0.3, 0.9])

    def through_the_base(arguments: Any) -> Motion:
        return Motion(waypoints=[(0.2, -0.3, 0.7), (0.22, 0.3, 0.7), (0.5, 0.3, 0.9)])

    def around(arguments: Any) -> Motion:
        return Motion(waypoints=[(0.5, -0.3, 0.9), (0.5, 0.3, 0.9)])

    def broken(arguments: Any) -> Motion:
        raise RuntimeError("planner offline")

    kinds = {"ref": "free"}
    blocked = env.check_call("wave", {"ref": "a"}, kinds, start, motion=through_the_base)
    assert blocked.outcome == "block" and blocked.violations[0].startswith("keep_out:robot_base")
    assert env.check_call("wave", {"ref": "a"}, kinds, start, motion=around).outcome == "allow"
    failed = env.check_call("wave", {"ref": "a"}, kinds, start, motion=broken)
    assert failed.outcome == "block" and failed.violations[0].startswith("motion_unknown")


def test_the_margin_around_a_zone_is_kept_along_the_path() -> None:
    env = SafetyEnvelope(PANDA)  # robot_base: x up to 0.24, margin 0.02
    start = readings([0.25, -0.3, 0.7])
    grazing = env.check_call("move_to", {"x": 0.25, "y": 0.3, "z": 0.7, "speed": 0.2}, MOVE, start)
    assert grazing.outcome == "block" and "passes 0.010 m from the zone" in grazing.reason
    clear = readings([0.27, -0.3, 0.7])
    assert (
        env.check_call(
            "move_to", {"x": 0.27, "y": 0.3, "z": 0.7, "speed": 0.2}, MOVE, clear
        ).outcome
        == "allow"
    )


def test_from_inside_a_zone_only_straight_out_is_allowed() -> None:
    env = SafetyEnvelope(PANDA)
    stuck = readings([0.23, 0.0, 0.75])  # 1 cm inside the base zone's x face
    out = env.check_call("move_to", {"x": 0.40, "y": 0.0, "z": 0.75, "speed": 0.2}, MOVE, stuck)
    assert out.outcome == "allow"
    across = env.check_call("move_to", {"x": 0.23, "y": 0.40, "z": 0.75, "speed": 0.2}, MOVE, stuck)
    assert across.outcome == "block" and "straight away from it" in across.reason
    not_far_enough = env.check_call(
        "move_to", {"x": 0.25, "y": 0.0, "z": 0.75, "speed": 0.2}, MOVE, stuck
    )
    assert not_far_enough.outcome == "block"


def test_from_outside_the_workspace_only_a_motion_back_in_is_allowed() -> None:
    env = SafetyEnvelope(PANDA)
    low = readings([0.5, 0.0, 0.62])  # 1.5 cm under the workspace floor
    assert (
        env.check_call("move_to", {"x": 0.5, "y": 0.0, "z": 0.9, "speed": 0.2}, MOVE, low).outcome
        == "allow"
    )
    far_out = readings([1.2, 0.0, 1.0])
    shortened = env.check_call(
        "move_to", {"x": 0.3, "y": 0.0, "z": 1.0, "speed": 0.2}, MOVE, far_out
    )
    assert shortened.outcome == "clamp"
    assert shortened.arguments["x"] == pytest.approx(0.4)  # 0.8 m back in, inside
    too_far = readings([1.7, 0.0, 1.0])  # a 0.8 m step would end outside
    blocked = env.check_call("move_to", {"x": 0.5, "y": 0.0, "z": 1.0, "speed": 0.2}, MOVE, too_far)
    assert blocked.outcome == "block" and "would end outside it too" in blocked.reason


def test_a_left_out_coordinate_takes_the_schemas_default() -> None:
    schema = {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "y": {"type": "number"},
            "z": {"type": "number", "default": 0.0},
        },
    }
    env = SafetyEnvelope(PANDA)
    kinds = {"x": "position.x", "y": "position.y", "z": "position.z"}
    low = env.check_call(
        "move", {"x": 0.5, "y": 0.0}, kinds, readings([0.5, 0.0, 0.9]), schema=schema
    )
    assert low.outcome == "block" and "workspace_bounds" in low.reason  # z = 0, not 0.9
    kept = env.check_call("move", {"x": 0.5, "y": 0.1}, kinds, readings([0.5, 0.0, 0.9]))
    assert kept.outcome == "allow"  # no schema default: z stays where it is
    near = readings([0.5, 0.0, 0.645])
    clamped = env.check_call("move", {"x": 0.79, "y": 0.0, "z": None}, kinds, near)
    assert clamped.outcome == "clamp" and clamped.arguments["x"] == pytest.approx(0.78)


def test_a_joint_past_its_limit_is_brought_back_onto_it_within_one_step() -> None:
    # The joint checks alone (these joints put the gripper above the workspace, which the
    # kinematic check would block: see tests/embodiment/test_envelope_joints.py).
    limits_only = PANDA.model_dump()
    limits_only["kinematics"] = None
    limits_only["safety"]["joint_limits_only"] = True
    env = SafetyEnvelope(load_profile(limits_only))
    joints = [0.0, 0.0, 0.0, 0.2, 0.0, 1.8, 0.0]  # joint 3 is 0.27 rad past -0.0698
    target = [2.5, 0.0, 0.0, -1.0, 0.0, 1.8, 0.0]  # joint 0 needs more than one step
    decision = env.check_call(
        "move_joints", {"joints": target}, {"joints": "joints"}, readings([0.4, 0, 0.9], joints)
    )
    assert decision.outcome == "clamp"
    applied = decision.arguments["joints"]
    assert applied[3] <= -0.0698 and applied[0] == pytest.approx(1.5)
    hopeless = [0.0, 0.0, 0.0, 2.0, 0.0, 1.8, 0.0]  # 2.07 rad past: no single step
    blocked = env.check_call(
        "move_joints", {"joints": target}, {"joints": "joints"}, readings([0.4, 0, 0.9], hopeless)
    )
    assert blocked.outcome == "block" and "by hand" in blocked.reason


def test_speeds_below_the_profile_minimum_are_blocked() -> None:
    env = SafetyEnvelope(PANDA)
    slow = env.check_call(
        "move_to", {"x": 0.5, "y": 0.0, "z": 0.9, "speed": 0.001}, MOVE, readings([0.4, 0, 0.9])
    )
    assert slow.outcome == "block" and "below the profile's minimum" in slow.reason
    with pytest.raises(ProfileError, match="min_speed_m_s"):
        load_profile(
            {**PANDA.model_dump(), "limits": {**PANDA.limits.model_dump(), "min_speed_m_s": 1.0}}
        )


def test_without_a_description_a_ref_is_checked_with_the_approach_box() -> None:
    robot = FakeRobot(PANDA, objects={"cube": (0.5, 0.0, 0.645)}, describes_motion=False)
    env = SafetyEnvelope(PANDA, locator=robot)
    kinds = {"ref": "object_ref"}
    assert (
        env.check_call("pick", {"ref": "cube"}, kinds, readings([0.5, 0.0, 0.9])).outcome == "allow"
    )
    # High above and beside the base: a straight approach would pass 3 cm clear of its
    # zone, but the box from the gripper to above the cube reaches within 1 cm of it.
    beside = readings([0.25, -0.3, 1.0])
    blocked = env.check_call("pick", {"ref": "cube"}, kinds, beside)
    assert blocked.outcome == "block" and "assumed to stay between" in blocked.reason
    high = readings([0.5, 0.0, 1.19])
    assert env.check_call("pick", {"ref": "cube"}, kinds, high).outcome == "allow"


def test_a_refusal_the_driver_foresaw_is_still_checked_and_its_block_says_why() -> None:
    """A driver that says it would refuse a call (``Motion.refused``) is not taken at its
    word: the conservative path is checked as for a driver that says nothing. When that
    check blocks, the model reads the driver's reason too (an unreachable grasp read as a
    bare keep-out box sent the SO-101 planner round in circles), never in place of it."""
    robot = FakeRobot(PANDA, objects={"cube": (0.5, 0.0, 0.645)}, describes_motion=False)
    env = SafetyEnvelope(PANDA, locator=robot)
    kinds = {"ref": "object_ref"}
    why = "cube is beyond the wrist's reach from above"

    def refuses(arguments: dict[str, Any]) -> Motion:
        return Motion(description=f"refused: {why}", refused=why)

    beside = readings([0.25, -0.3, 1.0])  # the approach box nears the base's zone
    blocked = env.check_call("pick", {"ref": "cube"}, kinds, beside, motion=refuses)
    assert blocked.outcome == "block"
    assert "assumed to stay between" in blocked.reason and why in blocked.reason
    silent = env.check_call("pick", {"ref": "cube"}, kinds, beside)
    assert silent.outcome == "block" and why not in silent.reason
    # Where the conservative path is clear the call goes on: the driver answers it.
    above = readings([0.5, 0.0, 0.9])
    assert env.check_call("pick", {"ref": "cube"}, kinds, above, motion=refuses).outcome == (
        "allow"
    )


def test_a_rules_rewrite_passes_every_check_again() -> None:
    class Reckless:
        name = "reckless"

        def __call__(self, request: SafetyRequest) -> RuleOutcome | None:
            return RuleOutcome("clamp", "operator wants it there", {**request.arguments, "x": 2.0})

    env = SafetyEnvelope(PANDA, rules=[Reckless()])
    decision = env.check_call(
        "move_to", {"x": 0.5, "y": 0.0, "z": 0.9, "speed": 0.2}, MOVE, readings([0.4, 0, 0.9])
    )
    assert decision.outcome == "block" and "workspace_bounds" in decision.reason


# ---------------------------------------------------------------------- drivers


def test_the_fake_robot_executes_exactly_what_it_describes() -> None:
    robot = FakeRobot(PANDA, objects={"cube": (0.5, 0.1, 0.645), "base": (0.6, -0.2, 0.645)})
    visited: list[list[float]] = []
    original = robot._travel

    def travel(point: list[float], target: list[float]) -> bool:
        done = original(point, target)
        if point is robot.ee:
            visited.append(list(point))
        return done

    robot._travel = travel  # type: ignore[method-assign]
    for action, arguments in [
        ("pick", {"ref": "cube"}),
        ("place", {"ref": "cube", "target": "base"}),
        ("move_to", {"x": 0.4, "y": 0.0, "z": 1.0, "speed": None}),
        ("home", {}),
    ]:
        described = robot.describe_motion(action, arguments)
        assert described is not None
        visited.clear()
        assert robot.execute(action, arguments).ok
        assert visited == [pytest.approx(list(p)) for p in described.waypoints], action
    assert robot.describe_motion("pick", {"ref": "ghost"}) == Motion()
    assert FakeRobot(PANDA, describes_motion=False).describe_motion("home", {}) is None


def test_check_driver_reports_on_motion_descriptions() -> None:
    assert check_driver(FakeRobot(PANDA), PANDA, motion=False).status("describes_motion") == "pass"
    blind = FakeRobot(PANDA, describes_motion=False)
    assert check_driver(blind, PANDA, motion=False).status("describes_motion") == "warn"

    class Liar(FakeRobot):
        def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
            return Motion(waypoints=[(0.5, 0.0, 0.9)])

    report = check_driver(Liar(PANDA), PANDA, motion=False)
    assert report.status("describes_motion") == "fail" and not report.ok


def test_the_simulator_follows_its_own_description(sim: Any) -> None:
    pytest.importorskip("pybullet")
    described = sim.describe_motion("pick", {"ref": "red_cube_1"})
    assert described is not None and len(described.waypoints) == 3
    approach, grasp, lift = described.waypoints
    assert approach[2] - grasp[2] == pytest.approx(0.12) and lift[2] - grasp[2] == pytest.approx(
        0.15
    )
    before = sim.ee_position()
    assert sim.describe_motion("home", {}).waypoints  # sampled on a twin: nothing moves
    assert sim.ee_position() == pytest.approx(before, abs=1e-9)
    result = sim.execute("pick", {"ref": "red_cube_1"})
    assert result.ok and math.dist(result.applied["grasp_position"], grasp) < 0.002
    assert math.dist(sim.ee_position(), lift) < 0.02
    place = sim.describe_motion("place", {"ref": "red_cube_1", "target": "tray_1"})
    assert place is not None and len(place.waypoints) == 4
    released = sim.execute("place", {"ref": "red_cube_1", "target": "tray_1"})
    assert math.dist(released.applied["release_position"], place.waypoints[2]) < 0.002
    home = sim.describe_motion("home", {})
    assert math.dist(home.waypoints[-1], sim.home_position()) < 0.005
    assert sim.describe_motion("pick", {"ref": "tray_1"}) == Motion(
        description="refused: tray_1 is a tray; it cannot be picked",
        refused="tray_1 is a tray; it cannot be picked",
    )


def test_defaults_written_out_are_one_class_per_model_and_values() -> None:
    """``with_defaults`` keeps the class it made: the same model and values give the same
    class, any other value (``-0.0`` beside ``0.0``, ``1`` beside ``1.0``) its own, whose
    schema and validation carry that value; a value that is not plain is never kept."""
    from pydantic import BaseModel

    from embodiment.declarations import with_defaults

    class Move(BaseModel):
        x: float
        speed: float | None = None
        mode: str | int | None = None

    slow = with_defaults(Move, speed=0.1)
    assert with_defaults(Move, speed=0.1) is slow and with_defaults(Move, speed=None) is Move
    assert slow.model_json_schema()["properties"]["speed"]["default"] == 0.1
    assert slow.model_validate({"x": 1}).speed == 0.1
    variants = [with_defaults(Move, speed=v) for v in (0.2, 0.0, -0.0)]
    assert len({id(v) for v in variants}) == 3
    assert [math.copysign(1, v.model_validate({"x": 0}).speed) for v in variants] == [1, 1, -1]
    one, true = with_defaults(Move, mode=1), with_defaults(Move, mode=True)
    assert one is not true and true.model_validate({"x": 0}).mode is True
    listed = with_defaults(Move, mode=[1])  # type: ignore[arg-type]
    assert with_defaults(Move, mode=[1]) is not listed  # type: ignore[arg-type]
