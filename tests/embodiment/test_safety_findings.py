"""The eight findings of issue 14, each reproduced as an attacker would find it.

Each test drives the public API (the envelope's ``check_call``, or the real loop with a
ScriptedModel) and judges what reached the driver with its own small geometry, not with
the envelope's. Findings 1 (in PyBullet) and the simulator-wide check are in
``tests/worlds/test_sim_safety.py``; the long hypothesis oracle is
``tests/embodiment/test_safety_oracle.py``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.fuzz_arms import StateFileDriver
from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from embodiment.types import Observation
from harness import Harness, HarnessConfig
from harness.config import MCPServerConfig
from harness.events import DoneEvent, ToolResultEvent
from harness.providers import ScriptedModel, call, reply
from harness.tools import Tool
from harness.world.physical import physical_tools
from tests.conftest import StubbornRobot
from worlds.fake import FakeRobot

PANDA = load_profile("panda_tabletop")
ZONE = PANDA.keep_out[0]  # robot_base: x -0.25..0.24, y -0.15..0.15, z 0.625..0.80
WS = PANDA.workspace  # x 0.20..0.78, y -0.45..0.45, z 0.635..1.20
MOVE_KINDS = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}
ARM_FIXTURE = str(Path(__file__).parents[1] / "fixtures" / "mcp_arm_server.py")


def offline_config(**sections: Any) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "failure_budget": 100},
            "memory": {"enabled": False},
            **sections,
        }
    )


def readings(ee: list[float], joints: list[float] | None = None) -> Observation:
    return Observation(state={"ee_position": ee, "joint_positions": joints or [0.0] * 7})


def inside_box(point: Any, low: Any, high: Any) -> bool:
    return all(lo <= v <= hi for v, lo, hi in zip(point, low, high, strict=True))


def crosses_zone(start: Any, end: Any, steps: int = 2000) -> bool:
    """Dense sampling (0.5 mm or finer on these paths): independent of any slab test."""
    return any(
        inside_box(
            [s + (e - s) * i / steps for s, e in zip(start, end, strict=True)], ZONE.min, ZONE.max
        )
        for i in range(steps + 1)
    )


class PathRecorder(FakeRobot):
    """A fake arm that records every straight segment its gripper really travels."""

    def __init__(self, profile: Any, **options: Any) -> None:
        super().__init__(profile, **options)
        self.segments: list[tuple[list[float], list[float]]] = []

    def _travel(self, point: list[float], target: list[float]) -> bool:
        start = list(point)
        done = super()._travel(point, target)
        if point is self.ee:
            self.segments.append((start, list(point)))
        return done


def driver_harness(robot: FakeRobot, responses: list[Any]) -> Harness:
    return Harness(
        offline_config(),
        model=ScriptedModel(responses),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(PANDA, locator=robot, observe=robot.observe),
    )


# ------------------------------------------------------------------ 1. sub-motions


def test_1_a_pick_whose_motion_crosses_a_keep_out_zone_never_runs() -> None:
    """The gripper waits beside the robot's base; the object is on the other side. A
    straight move_to there is blocked; a pick of the object must be too."""
    robot = PathRecorder(PANDA, objects={"far_side": (0.23, 0.35, 0.645)})
    responses = [
        call("move_to", x=0.23, y=-0.35, z=0.70),
        call("pick", ref="far_side"),
        reply("done"),
    ]
    with driver_harness(robot, responses) as h:
        events = list(h.run_stream("pick the object behind the base"))
    assert robot.segments, "the first motion (clear of the zone) must have run"
    assert robot.segments[0][1] == pytest.approx([0.23, -0.35, 0.70])
    crossing = [s for s in robot.segments if crosses_zone(*s)]
    assert crossing == [], f"the gripper travelled through {ZONE.name}: {crossing}"
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert results[1].error_kind == "blocked" and f"keep_out:{ZONE.name}" in results[1].text


# ------------------------------------------------------------------ 2. object targets


@pytest.mark.parametrize(
    ("where", "position"),
    [
        ("3.4 cm beyond the workspace's x edge", (WS.max[0] + 0.034, 0.0, 0.645)),
        ("2 cm below the table top", (0.5, 0.0, 0.625 - 0.02)),
    ],
)
def test_2_an_object_outside_the_workspace_or_below_its_support_is_blocked(
    where: str, position: tuple[float, float, float]
) -> None:
    robot = FakeRobot(PANDA, objects={"cube": position})
    decision = SafetyEnvelope(PANDA, locator=robot).check_call(
        "pick", {"ref": "cube"}, {"ref": "object_ref"}, robot.observe()
    )
    assert decision.outcome == "block", f"a pick of an object {where} was {decision.outcome}"
    assert decision.reason


# ------------------------------------------------------------------ 3. partial declarations


def recording_tool(name: str, received: list[dict[str, Any]], **options: Any) -> Tool:
    def handler(**arguments: Any) -> str:
        received.append(arguments)
        return "moved"

    return Tool(name, f"{name} (test)", handler, physical=True, **options)


MOVE_ARM_SCHEMA = {
    "type": "object",
    "properties": {
        "x": {"type": "number"},
        "y": {"type": "number"},
        "z": {"type": "number"},
        "speed": {"type": "number"},
        "frame": {"type": "string", "enum": ["world", "base"]},
        "relative": {"type": "boolean"},
    },
    "required": ["x", "y", "z"],
}


def first_result_with_tool(tool: Tool, response: Any) -> ToolResultEvent:
    """Run one call of ``tool`` through the loop (the gripper reads (0.4, 0, 0.9))."""

    class Observer:
        def observe(self) -> Observation:
            return readings([0.4, 0.0, 0.9])

    observer = Observer()
    with Harness(
        offline_config(),
        model=ScriptedModel([response, reply("done")]),
        tools=[tool],
        observation_provider=observer,
        safety=SafetyEnvelope(PANDA, observe=observer.observe),
    ) as h:
        events = list(h.run_stream("move"))
    return next(e for e in events if isinstance(e, ToolResultEvent))


@pytest.mark.parametrize("extra", [{"frame": "base"}, {"relative": True}])
def test_3_an_undeclared_argument_of_a_physical_tool_blocks_the_call(
    extra: dict[str, Any],
) -> None:
    received: list[dict[str, Any]] = []
    move_arm = recording_tool("move_arm", received, parameters=MOVE_ARM_SCHEMA, safety=MOVE_KINDS)
    result = first_result_with_tool(move_arm, call("move_arm", x=0.5, y=0.0, z=1.1, **extra))
    assert received == []
    assert result.error_kind == "blocked"
    assert f"undeclared_argument:{next(iter(extra))}" in result.text


def mcp_arm(tmp_path: Path, **options: Any) -> MCPServerConfig:
    return MCPServerConfig(
        name="arm",
        command=sys.executable,
        args=[
            ARM_FIXTURE,
            "--state",
            str(tmp_path / "state.json"),
            "--log",
            str(tmp_path / "log.jsonl"),
        ],
        **options,
    )


def run_mcp_arm(tmp_path: Path, server: MCPServerConfig, responses: list[Any]) -> list[Any]:
    """Run the calls through the real loop; return what the arm server executed."""
    config = HarnessConfig.model_validate(
        {
            "embodiment": "panda_tabletop",
            "driver": None,
            "run": {"store": None, "failure_budget": 100},
            "memory": {"enabled": False},
            "mcp": {"servers": [server.model_dump()]},
        }
    )
    with Harness.from_config(
        config,
        model=ScriptedModel([*responses, reply("done")]),
        driver=StateFileDriver(tmp_path / "state.json"),
    ) as h:
        list(h.run_stream("move the arm"))
    log = tmp_path / "log.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_3_mcp_move_arm_with_only_x_y_z_speed_declared_never_moves(tmp_path: Path) -> None:
    server = mcp_arm(
        tmp_path,
        physical=["move_arm"],
        safety={"move_arm": MOVE_KINDS},
    )
    executed = run_mcp_arm(
        tmp_path,
        server,
        [
            call("move_arm", x=0.5, y=0.0, z=1.1, frame="base"),
            call("move_arm", x=0.0, y=0.0, z=0.5, relative=True),
        ],
    )
    assert [e for e in executed if e["tool"] == "move_arm"] == []


# ------------------------------------------------------------------ 4. unenumerable schemas


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "additionalProperties": True},
        {"$ref": "#/$defs/M", "$defs": {"M": {"type": "object", "properties": {"x": {}}}}},
        {"anyOf": [{"type": "object", "properties": {"x": {"type": "number"}}}]},
        {"type": "object", "properties": {}},
    ],
    ids=["free_form", "top_level_ref", "top_level_any_of", "no_arguments"],
)
def test_4_a_physical_tool_whose_arguments_cannot_be_enumerated_is_blocked(
    schema: dict[str, Any],
) -> None:
    received: list[dict[str, Any]] = []
    loose = recording_tool("move_free", received, parameters=schema)
    arguments = {} if schema.get("properties") == {} else {"x": 9, "speed": 50}
    result = first_result_with_tool(loose, call("move_free", **arguments))
    assert received == []
    assert result.error_kind == "blocked"


def test_4_mcp_move_free_with_an_excessive_speed_never_moves(tmp_path: Path) -> None:
    server = mcp_arm(tmp_path, physical=["move_free", "move_ref", "move_any", "home"])
    executed = run_mcp_arm(
        tmp_path,
        server,
        [
            call("move_free", x=9, speed=50),
            call("move_ref", x=0.5, y=0.0, z=0.9, speed=50),
            call("move_any", x=0.5, y=0.0, z=0.9, speed=50),
            call("home"),
        ],
    )
    assert executed == []


# ------------------------------------------------------------------ 5. clamps from outside


def test_5_a_shortened_step_from_a_reading_outside_the_workspace_stays_inside() -> None:
    start = [-0.70, 0.0, 1.0]  # 0.9 m outside the workspace's x edge
    decision = SafetyEnvelope(PANDA).check_call(
        "move_to", {"x": 0.5, "y": 0.0, "z": 1.0, "speed": 0.2}, MOVE_KINDS, readings(start)
    )
    if decision.outcome != "block":
        target = [decision.arguments[a] for a in "xyz"]
        assert inside_box(target, WS.min, WS.max), f"{decision.outcome} to {target}"
        assert math.dist(start, target) <= PANDA.limits.max_step_m + 1e-9
        assert not inside_box(target, ZONE.min, ZONE.max)


def test_5_a_scaled_joint_step_from_a_reading_past_a_limit_stays_within_limits() -> None:
    limits = PANDA.limits.joint_limits
    assert limits is not None
    current = [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]  # joint 3 is 1.07 rad past its upper limit
    target = [3.0 * 0.9, 0.0, 0.0, -0.1, 0.0, 1.0, 0.0]  # joint 0 wants a 2.7 rad step
    decision = SafetyEnvelope(PANDA).check_call(
        "move_joints", {"joints": target}, {"joints": "joints"}, readings([0.4, 0.0, 0.9], current)
    )
    if decision.outcome != "block":
        applied = decision.arguments["joints"]
        for index, (value, (low, high)) in enumerate(zip(applied, limits, strict=True)):
            assert low <= value <= high, f"joint {index} commanded to {value} ({low}..{high})"
        assert (
            max(abs(a - c) for a, c in zip(applied, current, strict=True))
            <= (PANDA.limits.max_joint_step_rad or math.inf) + 1e-9
        )


# ------------------------------------------------------------------ 6. zero speed and force


@pytest.mark.parametrize(
    ("arguments", "kinds"),
    [
        ({"x": 0.5, "y": 0.0, "z": 0.9, "speed": 0}, MOVE_KINDS),
        ({"x": 0.5, "y": 0.0, "z": 0.9, "speed": 0.0}, MOVE_KINDS),
        ({"force": 0}, {"force": "force"}),
    ],
    ids=["speed_int_zero", "speed_float_zero", "force_zero"],
)
def test_6_zero_speed_or_force_is_blocked(arguments: dict[str, Any], kinds: dict[str, str]) -> None:
    decision = SafetyEnvelope(PANDA).check_call("move", arguments, kinds, readings([0.4, 0.0, 0.9]))
    assert decision.outcome == "block", decision


# ------------------------------------------------------------------ 7. one command at a time


def test_7_a_physical_call_while_the_driver_has_not_returned_is_refused(short_grace: None) -> None:
    robot = StubbornRobot(PANDA)
    tools = physical_tools(robot)
    move = next(t for t in tools if t.name == "move_to")
    move.timeout_s = 0.2
    responses = [
        call("move_to", x=0.5, y=0.0, z=0.9),
        call("move_to", x=0.5, y=0.1, z=0.9),
        reply("done"),
    ]
    h = Harness(
        offline_config(),
        model=ScriptedModel(responses),
        driver=robot,
        physical_tools=tools,
        safety=SafetyEnvelope(PANDA, locator=robot, observe=robot.observe),
    )
    try:
        events = list(h.run_stream("move twice"))
        assert robot.most_at_once == 1, "two physical commands ran at once"
        results = [e for e in events if isinstance(e, ToolResultEvent)]
        assert results[1].error_kind == "driver_busy"
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.status == "failed"
        assert "move_to" in done.termination_reason and "return" in done.termination_reason
    finally:
        robot.release.set()
        robot.wait_idle()
        h.close()


# ------------------------------------------------------------------ 8. a failed stop()


class StopFails(FakeRobot):
    def stop(self) -> None:
        raise RuntimeError("servo bus off: stop not acknowledged")


def test_8_a_failed_stop_at_task_end_is_loud() -> None:
    robot = StopFails(PANDA)
    with Harness(
        offline_config(),
        model=ScriptedModel([call("move_to", x=0.5, y=0.0, z=0.9), reply("moved")]),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(PANDA, locator=robot, observe=robot.observe),
    ) as h:
        events = list(h.run_stream("move"))
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert getattr(done, "robot_stopped", None) is False
    assert any(e.type == "safety" and "servo bus off" in str(e) for e in events)
    assert "servo bus off" in done.report


def test_8_a_failed_stop_makes_the_cli_exit_non_zero(tmp_path: Path) -> None:
    from embodiment.drivers import DRIVERS, register_driver
    from harness.cli import main

    register_driver("test.stop_fails", lambda *, profile, **options: StopFails(profile))
    config = tmp_path / "config.yaml"
    config.write_text(
        "model:\n  provider: scripted\n  name: scripted\n  options:\n    responses:\n"
        "      - text: all done\n"
        "embodiment: panda_tabletop\ndriver: {name: test.stop_fails}\n"
        "run: {store: null}\nmemory: {enabled: false}\n"
    )
    try:
        assert main(["run", "--config", str(config), "--json", "idle"]) != 0
    finally:
        DRIVERS.pop("test.stop_fails")


def test_harness_check_names_physical_tools_the_envelope_will_always_block() -> None:
    """Not a finding of the issue, but its remedy: the operator learns at `harness check`,
    not mid-task, that a declaration does not cover a tool's arguments."""
    from harness.assembly.checks import check_tools

    partial = recording_tool("move_arm", [], parameters=MOVE_ARM_SCHEMA, safety=MOVE_KINDS)
    complete = recording_tool(
        "move_to",
        [],
        parameters={"type": "object", "properties": {"x": {}}},
        safety={"x": "position.x"},
    )
    with Harness(
        offline_config(),
        model=ScriptedModel([]),
        tools=[partial, complete],
        safety=SafetyEnvelope(PANDA),
    ) as h:
        results = {r.subject: r for r in check_tools(h)}
    assert results["safety move_arm"].status == "warn"
    assert "undeclared_argument:frame" in results["safety move_arm"].detail
    assert "safety move_to" not in results
