"""The safety envelope: allow / clamp / block, fail closed, and no command outside the
envelope ever reaches the driver (hypothesis over random tool calls through the loop)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embodiment.envelope import RuleOutcome, SafetyEnvelope, SafetyRequest, segment_hits_box
from embodiment.profile import load_profile
from embodiment.types import Observation
from harness import Harness, HarnessConfig
from harness.events import SafetyCheckEvent, ToolResultEvent
from harness.providers import ScriptedModel, call, reply
from harness.world.physical import physical_tools
from tests.tiers import examples
from worlds.fake import FakeRobot

ROOT = Path(__file__).resolve().parents[2]
MOBILE = load_profile(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml")
PANDA = load_profile("panda_tabletop")
MOVE_KINDS = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}
ARM_STATE = {"ee_position": [0.307, 0.0, 1.11], "joint_positions": [0.0] * 7}

OBJECTS = {
    "near_cube": (0.6, 0.1, 0.8),
    "far_cube": (2.5, 0.0, 0.8),
    "heavy_box": (0.5, -0.2, 0.7),
    "dock_cube": (-1.6, 2.0, 0.5),
}
WAYPOINTS = {"kitchen": (2.0, 0.0), "dock": (-1.6, 2.0)}
OBSTACLE = (0.8, -0.4, 1.2, 0.4)


def fresh(state: dict[str, Any] | None = None, **safety: float | None) -> Observation:
    return Observation(state=dict(ARM_STATE if state is None else state), safety=safety)


class RecordingRobot(FakeRobot):
    """Remembers each executed command and the state it started from (``started``)."""

    def __init__(self, profile: Any, **options: Any) -> None:
        super().__init__(profile, **options)
        self.started: list[dict[str, Any]] = []

    def execute(self, action: str, arguments: dict[str, Any]) -> Any:
        before = {
            "ee": list(self.ee),
            "joints": list(self.joints),
            "base_pose": tuple(self.base_pose),
            "clearance": {d: self.clearance(d) for d in ("forward", "backward", "left", "right")},
            "objects": {ref: tuple(p) for ref, p in self.objects.items()},
        }
        result = super().execute(action, arguments)
        self.started.append({"action": action, "arguments": dict(arguments), "before": before})
        return result


def harness_for(robot: FakeRobot, profile: Any, responses: list[Any]) -> Harness:
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "failure_budget": 100},
            "memory": {"enabled": False},
        }
    )
    return Harness(
        config,
        model=ScriptedModel(responses),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(profile, locator=robot, observe=robot.observe),
    )


# --------------------------------------------------------------------------- unit checks


def test_allow_clamp_block_on_the_arm() -> None:
    env = SafetyEnvelope(PANDA)
    ok = env.check_call(
        "move_to", {"x": 0.5, "y": 0.0, "z": 0.8, "speed": 0.2}, MOVE_KINDS, fresh()
    )
    assert ok.outcome == "allow" and ok.arguments["x"] == 0.5
    small = env.check_call(
        "move_to", {"x": 0.79, "y": 0.0, "z": 0.8, "speed": 2.0}, MOVE_KINDS, fresh()
    )
    assert small.outcome == "clamp"
    assert small.arguments["x"] == pytest.approx(0.78) and small.arguments["speed"] == 0.5
    assert any(v.startswith("workspace_bounds") for v in small.violations)
    assert any(v.startswith("speed_limit") for v in small.violations)
    far = env.check_call(
        "move_to", {"x": 1.5, "y": 0.0, "z": 0.8, "speed": 0.2}, MOVE_KINDS, fresh()
    )
    assert far.outcome == "block" and "outside the reachable workspace" in far.reason
    zone = env.check_call(
        "move_to", {"x": 0.22, "y": 0.0, "z": 0.7, "speed": 0.2}, MOVE_KINDS, fresh()
    )
    assert zone.outcome == "block" and zone.violations[0].startswith("keep_out:robot_base")


def test_straight_path_through_a_keep_out_zone_is_blocked() -> None:
    env = SafetyEnvelope(PANDA)
    state = {"ee_position": [0.23, -0.35, 0.70], "joint_positions": [0.0] * 7}
    decision = env.check_call(
        "move_to", {"x": 0.23, "y": 0.35, "z": 0.70, "speed": 0.2}, MOVE_KINDS, fresh(state)
    )
    assert decision.outcome == "block"
    assert "crosses the zone" in decision.reason
    assert segment_hits_box((0.0, -1.0, 0.7), (0.0, 1.0, 0.7), PANDA.keep_out[0])
    assert not segment_hits_box((0.5, -1.0, 0.7), (0.5, 1.0, 0.7), PANDA.keep_out[0])


def test_long_step_is_shortened_along_the_line() -> None:
    env = SafetyEnvelope(MOBILE)
    state = {"ee_position": [0.3, -0.4, 0.5], "joint_positions": [0.0] * 6, "base_pose": [0, 0, 0]}
    decision = env.check_call(
        "move_to", {"x": 0.8, "y": 0.4, "z": 1.3, "speed": 0.2}, MOVE_KINDS, fresh(state)
    )
    assert decision.outcome == "clamp"
    target = (decision.arguments["x"], decision.arguments["y"], decision.arguments["z"])
    assert math.dist((0.3, -0.4, 0.5), target) == pytest.approx(MOBILE.limits.max_step_m)
    assert decision.violations[0].startswith("step_limit")


@pytest.mark.parametrize(
    ("make_observation", "violation"),
    [
        (lambda: None, "missing_observation"),
        (lambda: fresh({"joint_positions": [0.0] * 7}), "missing_reading:ee_position"),
        (
            lambda: fresh({"ee_position": [float("nan"), 0.0, 1.0], "joint_positions": [0.0] * 7}),
            "invalid_reading:ee_position",
        ),
        (lambda: Observation(timestamp=0.0, state=ARM_STATE), "stale_readings"),
    ],
)
def test_fails_closed_on_missing_invalid_or_stale_readings(
    make_observation: Any, violation: str
) -> None:
    decision = SafetyEnvelope(PANDA).check_call(
        "move_to", {"x": 0.5, "y": 0.0, "z": 0.8, "speed": 0.2}, MOVE_KINDS, make_observation()
    )
    assert decision.outcome == "block"
    assert decision.violations[0].startswith(violation)


def test_stale_readings_are_refreshed_when_possible() -> None:
    env = SafetyEnvelope(PANDA, observe=fresh)
    stale = Observation(timestamp=0.0, state=ARM_STATE)
    assert (
        env.check_call(
            "move_to", {"x": 0.5, "y": 0.0, "z": 0.8, "speed": 0.2}, MOVE_KINDS, stale
        ).outcome
        == "allow"
    )


def test_undeclared_arguments_and_unknown_kinds_block() -> None:
    class Undeclared:
        name = "wave"
        safety: ClassVar[dict[str, str]] = {}
        parameters: ClassVar[dict[str, Any]] = {"properties": {"times": {"type": "integer"}}}

    env = SafetyEnvelope(PANDA)
    assert (
        env.check(Undeclared(), {"times": 3}, fresh())
        .violations[0]
        .startswith("undeclared_arguments")
    )
    bad = env.check_call("move_to", {"x": 0.5}, {"x": "pos.x"}, fresh())
    assert bad.outcome == "block" and "unknown safety kind" in bad.reason


def base_observation(**clearance: float | None) -> Observation:
    readings = {"forward": 2.0, "backward": 2.0, "left": 2.0, "right": 2.0, **clearance}
    return Observation(
        state={
            "ee_position": [0.4, 0.0, 0.9],
            "joint_positions": [0.0] * 6,
            "base_pose": [0, 0, 0],
        },
        safety={f"clearance.{k}": v for k, v in readings.items()},
    )


BASE_KINDS = {"direction": "direction", "distance": "distance"}


def test_base_move_is_clamped_to_clearance_minus_margin_or_blocked() -> None:
    env = SafetyEnvelope(MOBILE)
    clamped = env.check_call(
        "move_base",
        {"direction": "forward", "distance": 0.8},
        BASE_KINDS,
        base_observation(forward=0.5),
    )
    assert clamped.outcome == "clamp"
    assert clamped.arguments["distance"] == pytest.approx(0.5 - MOBILE.base.clearance_margin_m)
    assert clamped.violations[0].startswith("base_clearance:forward")
    blocked = env.check_call(
        "move_base", {"direction": "left", "distance": 0.3}, BASE_KINDS, base_observation(left=0.17)
    )
    assert blocked.outcome == "block" and blocked.violations[0].startswith("base_clearance:left")
    missing = env.check_call(
        "move_base",
        {"direction": "forward", "distance": 0.3},
        BASE_KINDS,
        base_observation(right=None),
    )
    assert missing.outcome == "block"
    assert missing.violations[0].startswith("missing_reading:clearance.right")


def test_navigation_is_blocked_when_no_direction_is_clear() -> None:
    env = SafetyEnvelope(MOBILE)
    kinds = {"target": "navigation"}
    boxed_in = base_observation(forward=0.1, backward=0.19, left=0.15, right=0.05)
    assert env.check_call("navigate_to", {"target": "kitchen"}, kinds, boxed_in).outcome == "block"
    one_way = base_observation(forward=0.1, backward=0.2, left=0.15, right=1.0)
    assert env.check_call("navigate_to", {"target": "kitchen"}, kinds, one_way).outcome == "allow"


def test_arm_profile_blocks_base_motion() -> None:
    decision = SafetyEnvelope(PANDA).check_call(
        "move_base", {"direction": "forward", "distance": 0.1}, BASE_KINDS, fresh()
    )
    assert decision.outcome == "block" and decision.violations[0].startswith("fixed_base")


def test_custom_rules_can_tighten_but_an_error_blocks() -> None:
    class LowSpeedNearPeople:
        name = "low_speed"

        def __call__(self, request: SafetyRequest) -> RuleOutcome | None:
            if request.arguments.get("speed", 0) > 0.1:
                return RuleOutcome("clamp", "people nearby", {**request.arguments, "speed": 0.1})
            return None

    class Broken:
        name = "broken"

        def __call__(self, request: SafetyRequest) -> RuleOutcome | None:
            raise RuntimeError("sensor offline")

    env = SafetyEnvelope(PANDA, rules=[LowSpeedNearPeople()])
    decision = env.check_call(
        "move_to", {"x": 0.5, "y": 0.0, "z": 0.8, "speed": 0.4}, MOVE_KINDS, fresh()
    )
    assert decision.outcome == "clamp" and decision.arguments["speed"] == 0.1
    assert "rule:low_speed: people nearby" in decision.violations
    env.add_rule(Broken())
    broken = env.check_call(
        "move_to", {"x": 0.5, "y": 0.0, "z": 0.8, "speed": 0.2}, MOVE_KINDS, fresh()
    )
    assert broken.outcome == "block" and broken.violations == ["safety_check_error"]


def test_ref_targets_need_a_locator_and_respect_payload() -> None:
    robot = FakeRobot(MOBILE, objects=OBJECTS, object_mass_kg={"heavy_box": 5.0})
    kinds = {"ref": "object_ref"}
    observation = robot.observe()
    assert (
        SafetyEnvelope(MOBILE).check_call("pick", {"ref": "near_cube"}, kinds, observation).outcome
        == "block"
    )
    env = SafetyEnvelope(MOBILE, locator=robot)
    assert env.check_call("pick", {"ref": "near_cube"}, kinds, observation).outcome == "allow"
    heavy = env.check_call("pick", {"ref": "heavy_box"}, kinds, observation)
    assert heavy.outcome == "block" and heavy.violations[0].startswith("payload_limit")
    unknown = env.check_call("pick", {"ref": "ghost"}, kinds, observation)
    assert unknown.violations[0].startswith("unlocatable:ref")


# --------------------------------------------------------------------------- through the loop


def test_clamp_is_recorded_with_both_versions_and_applied_reaches_the_model() -> None:
    robot = RecordingRobot(PANDA)
    responses = [call("move_to", x=0.79, y=0.0, z=0.9, speed=3.0), reply("done")]
    with harness_for(robot, PANDA, responses) as h:
        events = list(h.run_stream("move"))
    check = next(e for e in events if isinstance(e, SafetyCheckEvent))
    assert check.outcome == "clamp"
    assert check.requested["x"] == 0.79 and check.applied["x"] == pytest.approx(0.78)
    assert check.requested["speed"] == 3.0 and check.applied["speed"] == 0.5
    assert robot.started[0]["arguments"]["x"] == pytest.approx(0.78)
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert "applied" in result.text


def test_missing_clearance_blocks_base_motion_through_the_loop() -> None:
    robot = RecordingRobot(MOBILE, drop_clearance=True)
    responses = [call("move_base", direction="forward", distance=0.3), reply("stuck")]
    with harness_for(robot, MOBILE, responses) as h:
        events = list(h.run_stream("drive"))
    assert robot.started == []
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.error_kind == "blocked" and "missing_reading:clearance" in result.text


finite = st.floats(-3.0, 3.0, allow_nan=False)
weird = st.one_of(finite, st.sampled_from([float("nan"), float("inf"), -0.0, 1e9]))
calls = st.one_of(
    st.builds(
        lambda x, y, z, s: call("move_to", x=x, y=y, z=z, speed=s),
        weird,
        weird,
        weird,
        st.one_of(st.none(), st.floats(0.01, 5.0)),
    ),
    st.builds(
        lambda j: call("move_joints", joints=j),
        st.lists(st.floats(-4.0, 4.0), min_size=5, max_size=7),
    ),
    st.builds(lambda r: call("pick", ref=r), st.sampled_from([*OBJECTS, "ghost"])),
    st.builds(
        lambda r, t: call("place", ref=r, target=t),
        st.sampled_from(list(OBJECTS)),
        st.sampled_from([*OBJECTS, *WAYPOINTS]),
    ),
    st.builds(
        lambda d, m: call("move_base", direction=d, distance=m),
        st.sampled_from(["forward", "backward", "left", "right"]),
        st.floats(0.0, 3.0),
    ),
    st.builds(lambda a: call("rotate_base", angle=a), st.floats(-4.0, 4.0)),
    st.builds(lambda t: call("navigate_to", target=t), st.sampled_from(list(WAYPOINTS))),
    st.builds(lambda w: call("open_gripper", width=w), st.floats(0.001, 0.5)),
    st.builds(lambda f: call("close_gripper", force=f), st.floats(0.1, 500.0)),
)


def assert_inside_envelope(profile: Any, command: dict[str, Any]) -> None:
    """The invariant: what the driver executed was inside the envelope when it started."""
    action, args, before = command["action"], command["arguments"], command["before"]
    limits, base = profile.limits, profile.base
    pose = before["base_pose"]
    eps = 1e-6

    def in_workspace(point: tuple[float, float, float], slack: float = 0.0) -> bool:
        local = profile.from_world(point, profile.workspace.frame, base_pose=pose)
        return profile.workspace.contains(local, slack + eps)

    def in_keep_out(point: tuple[float, float, float]) -> bool:
        return any(
            z.contains(profile.from_world(point, z.frame, base_pose=pose)) for z in profile.keep_out
        )

    if action == "move_to":
        target = (args["x"], args["y"], args["z"])
        assert all(math.isfinite(v) for v in target)
        assert in_workspace(target) and not in_keep_out(target)
        assert math.dist(before["ee"], target) <= limits.max_step_m + eps
        assert args["speed"] is None or args["speed"] <= limits.max_speed_m_s + eps
    elif action == "move_joints":
        assert len(args["joints"]) == len(limits.joint_limits)
        for value, (low, high), old in zip(
            args["joints"], limits.joint_limits, before["joints"], strict=True
        ):
            assert low - eps <= value <= high + eps
            assert abs(value - old) <= limits.max_joint_step_rad + eps
    elif action in ("pick", "place"):
        for key in ("ref", "target") if action == "place" else ("ref",):
            ref = args[key]
            position = before["objects"].get(ref) or (*WAYPOINTS[ref], 0.0)
            assert in_workspace(position, profile.safety.clamp_tolerance_m + 0.02)
            assert not in_keep_out(position)
    elif action == "move_base":
        allowed = before["clearance"][args["direction"]] - base.clearance_margin_m
        assert allowed >= base.min_motion_m - eps
        assert args["distance"] <= min(base.max_step_m, allowed) + eps
    elif action == "rotate_base":
        assert abs(args["angle"]) <= base.max_turn_rad + eps
        assert min(before["clearance"].values()) >= base.clearance_margin_m - eps
    elif action == "navigate_to":
        assert any(
            c - base.clearance_margin_m >= base.min_motion_m - eps
            for c in before["clearance"].values()
        )
    elif action == "open_gripper":
        assert args["width"] is None or args["width"] <= profile.grippers[0].max_opening_m + eps
    elif action == "close_gripper":
        assert args["force"] is None or args["force"] <= limits.max_force_n + eps


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(calls, min_size=1, max_size=8))
def test_no_command_outside_the_envelope_reaches_the_driver(sequence: list[Any]) -> None:
    robot = RecordingRobot(
        MOBILE,
        objects=OBJECTS,
        object_mass_kg={"heavy_box": 5.0},
        obstacles=[OBSTACLE],
        waypoints=WAYPOINTS,
        room=(-1.0, -0.6, 3.0, 3.0),
    )
    with harness_for(robot, MOBILE, [*sequence, reply("done")]) as h:
        events = list(h.run_stream("random calls"))
    checks = [e for e in events if isinstance(e, SafetyCheckEvent)]
    sent = [e for e in events if isinstance(e, ToolResultEvent)]  # one per call answered
    # an identical call refused while nothing moved is answered with a notice, not run
    # again (harness/runtime/refusals.py); every other physical call was checked
    repeats = [
        e for e in events if isinstance(e, ToolResultEvent) and e.error_kind == "repeated_refusal"
    ]
    assert len(checks) + len(repeats) == len(sent)
    stuck = events[-1].termination_reason.startswith("stuck: ")  # type: ignore[attr-defined]
    assert len(sent) == len(sequence) or (stuck and len(sent) < len(sequence))
    assert len(robot.started) <= len([c for c in checks if c.outcome != "block"])
    for command in robot.started:
        assert_inside_envelope(MOBILE, command)
    for check in checks:
        if check.outcome == "clamp":
            assert check.requested != check.applied and check.violations
        if check.outcome == "block":
            assert check.violations


def test_a_pre_execution_hook_cannot_bypass_the_envelope() -> None:
    from harness.protocols import HookDecision

    def reckless(call: Any, tool: Any, arguments: Any) -> HookDecision | None:
        if tool.name == "move_to":
            return HookDecision("rewrite", {**arguments, "x": 5.0}, "operator override")
        return None

    robot = RecordingRobot(PANDA)
    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    model = ScriptedModel([call("move_to", x=0.5, y=0.0, z=0.9), reply("done")])
    with Harness(
        config,
        model=model,
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(PANDA, locator=robot),
        hooks=[reckless],
    ) as h:
        events = list(h.run_stream("move"))
    assert robot.started == []
    check = next(e for e in events if isinstance(e, SafetyCheckEvent))
    assert check.outcome == "block" and check.requested["x"] == 5.0
