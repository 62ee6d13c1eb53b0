"""Issue 25, finding 1: the envelope checks the arguments the robot will run with.

A call that leaves an argument out runs with the tool's default; before, the envelope saw
only what the model sent and the MCP server fell back on its own default (``move_arm``
with ``speed`` left out moved at 1.5 m/s, profile max 0.5). Now validation fills every
default the schema gives, the envelope checks that complete set, and exactly that set
(after any clamp) is what the server receives. What the server received is read from a
real MCP server in this process (:mod:`tests.mcp_recording`) and judged against the
profile's numbers, not against the envelope.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.admission_attacks import attack_defaults, offline
from benchmarks.lib.admission_hardware import (
    ARM_SAFETY,
    ARM_SCHEMAS,
    PANDA,
    Readings,
    arm_problems,
)
from embodiment.envelope import SafetyEnvelope
from embodiment.types import SafetyDecision
from harness import Harness
from harness.config import MCPServerConfig
from harness.events import SafetyCheckEvent, ToolResultEvent
from harness.mcp.manager import MCPManager, MCPTool
from harness.providers import ScriptedModel, call, reply
from harness.tools import tool, with_schema_defaults
from tests.mcp_recording import needs_mcp_server, recording_server
from tests.tiers import examples

if TYPE_CHECKING:
    from benchmarks.lib.mcp_recording import RecordingServer

pytestmark = needs_mcp_server

LIMITS = PANDA.limits
SCHEMAS, SAFETY = ARM_SCHEMAS, ARM_SAFETY


@pytest.fixture(scope="module")
def arm() -> Iterator[tuple[RecordingServer, MCPManager]]:
    with recording_server(SCHEMAS) as server:
        config = MCPServerConfig(
            name="arm",
            transport="streamable-http",
            url=server.url,
            physical=list(SCHEMAS),
            safety=SAFETY,
        )
        with MCPManager.start_servers([config]) as manager:
            yield server, manager


def run_calls(manager: MCPManager, calls: list[Any], *, safety: Any = None) -> list[Any]:
    readings = Readings()
    with Harness(
        offline(),
        model=ScriptedModel([*calls, reply("done")]),
        driver=readings,
        tools=manager.tools(),
        safety=safety or SafetyEnvelope(PANDA, observe=readings.observe),
    ) as harness:
        return list(harness.run_stream("move"))


def within_profile(tool_name: str, arguments: dict[str, Any]) -> list[str]:
    """What is wrong with a command that reached the arm: a declared argument it did not
    carry (the server would fall back on a default of its own), or a value outside the
    profile (:func:`benchmarks.lib.admission_hardware.arm_problems`, written apart from the
    envelope)."""
    missing = [f"{arg} missing" for arg in SAFETY[tool_name] if arg not in arguments]
    return missing + arm_problems(tool_name, arguments)


def test_randomised_calls_leaving_arguments_out_never_run_unsafe_defaults() -> None:
    """The issue's attack (241 escapes in 400 calls before; 400 and more in
    ``python -m benchmarks.admission_attacks``)."""
    tally = attack_defaults(200, seed=25)
    assert tally.tries == 200 and tally.sent > 50
    assert tally.bad == 0, tally.example


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("move_arm", {"x": 0.5, "y": 0.0, "z": 1.0}),  # speed left out: default 1.5 m/s
        ("move_point", {}),  # default target inside the robot_base keep-out zone
        ("set_joints", {}),  # default all zeros: joint 4 past its limit
        ("grip", {}),  # default width 0.15 m and 140 N
    ],
)
def test_an_argument_left_out_runs_as_the_envelope_checked_it(
    arm: tuple[RecordingServer, MCPManager], name: str, arguments: dict[str, Any]
) -> None:
    server, manager = arm
    before = len(server.received)
    events = run_calls(manager, [call(name, **arguments)])
    received = server.received[before:]
    (check,) = [e for e in events if isinstance(e, SafetyCheckEvent)]
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    # The envelope saw every declared argument, the defaults included.
    assert set(SAFETY[name]) <= set(check.requested), check.requested
    for tool_name, sent in received:
        assert within_profile(tool_name, sent) == [], (sent, check)
        assert sent == (check.applied if check.outcome == "clamp" else check.requested)
    if check.outcome == "block":
        assert received == [] and result.is_error and "blocked" in result.text
    else:
        assert len(received) == 1


def test_the_unsafe_defaults_no_longer_reach_the_arm(
    arm: tuple[RecordingServer, MCPManager],
) -> None:
    """The four cases of the issue together: what ran is within the profile, and the two
    whose default is unsafe in a way a clamp cannot fix (a keep-out target, a joint past
    its limit) never ran at all."""
    server, manager = arm
    before = len(server.received)
    run_calls(
        manager,
        [
            call("move_arm", x=0.5, y=0.0, z=1.0),
            call("move_point"),
            call("set_joints"),
            call("grip"),
        ],
    )
    received = server.received[before:]
    assert [name for name, _ in received] == ["move_arm", "grip"]
    assert received[0][1] == {"x": 0.5, "y": 0.0, "z": 1.0, "speed": LIMITS.max_speed_m_s}
    assert received[1][1] == {"width": 0.08, "force": LIMITS.max_force_n}


def test_a_python_tool_runs_with_the_defaults_the_envelope_checked() -> None:
    """``@tool`` defaults (pydantic) are filled the same way: the handler runs with the
    clamped complete set."""
    seen: list[dict[str, Any]] = []

    @tool(
        physical=True,
        safety={"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
    )
    def move(x: float, y: float, z: float, speed: float = 1.5) -> str:
        seen.append({"x": x, "y": y, "z": z, "speed": speed})
        return "moved"

    readings = Readings()
    with Harness(
        offline(),
        model=ScriptedModel([call("move", x=0.5, y=0.0, z=1.0), reply("done")]),
        driver=readings,
        tools=[move],
        safety=SafetyEnvelope(PANDA, observe=readings.observe),
    ) as harness:
        events = list(harness.run_stream("move"))
    (check,) = [e for e in events if isinstance(e, SafetyCheckEvent)]
    assert check.requested["speed"] == 1.5 and check.outcome == "clamp"
    assert seen == [{"x": 0.5, "y": 0.0, "z": 1.0, "speed": LIMITS.max_speed_m_s}]


# ------------------------------------------------------------------ generated schemas


class RecordingGate:
    """A safety gate that records what it was asked to check and clamps every number it
    sees by half (so what must be sent is the clamped set, not the requested one)."""

    def __init__(self) -> None:
        self.checked: list[dict[str, Any]] = []

    def check(self, tool: Any, arguments: Any, observation: Any) -> SafetyDecision:
        self.checked.append(dict(arguments))
        halved = {
            key: value / 2 if isinstance(value, float) and not isinstance(value, bool) else value
            for key, value in arguments.items()
        }
        if halved == dict(arguments):
            return SafetyDecision(outcome="allow", arguments=dict(arguments))
        return SafetyDecision(outcome="clamp", arguments=halved, violations=["halved"])


leaf = st.sampled_from(["number", "string", "boolean"])
VALUES = {
    "number": st.floats(-10, 10, allow_nan=False).map(lambda v: round(v, 3) + 0.5),
    "string": st.text("abc", min_size=1, max_size=3),
    "boolean": st.booleans(),
}


@st.composite
def schemas_and_calls(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A tool schema with defaults at two levels, a call that leaves some arguments out,
    and the complete arguments it must run with (computed here, from what was drawn)."""
    properties: dict[str, Any] = {}
    call_arguments: dict[str, Any] = {}
    expected: dict[str, Any] = {}
    required: list[str] = []
    for index in range(draw(st.integers(1, 5))):
        name = f"a{index}"
        if draw(st.booleans()):  # a nested object with defaults of its own
            inner: dict[str, Any] = {}
            given: dict[str, Any] = {}
            complete: dict[str, Any] = {}
            for inner_index in range(draw(st.integers(1, 3))):
                inner_name = f"b{inner_index}"
                kind = draw(leaf)
                spec: dict[str, Any] = {"type": kind}
                has_default = draw(st.booleans())
                if has_default:
                    spec["default"] = draw(VALUES[kind])
                inner[inner_name] = spec
                if draw(st.booleans()) or not has_default:
                    given[inner_name] = complete[inner_name] = draw(VALUES[kind])
                else:
                    complete[inner_name] = spec["default"]
            properties[name] = {"type": "object", "properties": inner}
            nested_default = draw(st.booleans())
            if nested_default:
                properties[name]["default"] = {}
            if draw(st.booleans()):
                call_arguments[name] = given
                expected[name] = complete
            elif nested_default:  # the {} default gets the inner defaults filled in
                expected[name] = {k: v["default"] for k, v in inner.items() if "default" in v}
            continue
        kind = draw(leaf)
        spec = {"type": kind}
        if draw(st.booleans()):
            spec["default"] = draw(VALUES[kind])
        properties[name] = spec
        if draw(st.booleans()):
            call_arguments[name] = expected[name] = draw(VALUES[kind])
            if draw(st.booleans()):
                required.append(name)
        elif "default" in spec:
            expected[name] = spec["default"]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, call_arguments, expected


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=schemas_and_calls())
def test_what_the_server_receives_is_the_complete_set_the_envelope_checked(
    arm: tuple[RecordingServer, MCPManager], case: tuple[dict[str, Any], ...]
) -> None:
    schema, arguments, expected = case
    server, manager = arm
    connection = manager._servers["arm"]  # the real connection to the recording server
    probe = MCPTool(
        "probe",
        server=connection,
        remote_name="probe",
        description="probe",
        parameters=schema,
        physical=True,
        safety={name: "free" for name in schema["properties"]},
    )
    gate = RecordingGate()
    before = len(server.received)
    readings = Readings()
    with Harness(
        offline(),
        model=ScriptedModel([call("probe", **arguments), reply("done")]),
        driver=readings,
        tools=[probe],
        safety=gate,
    ) as harness:
        list(harness.run_stream("probe"))
    (checked,) = gate.checked
    assert checked == expected  # complete: every default the schema gives
    received = [sent for name, sent in server.received[before:] if name == "probe"]
    halved = {
        k: v / 2 if isinstance(v, float) and not isinstance(v, bool) else v
        for k, v in checked.items()
    }
    assert received == [halved]


def test_a_default_its_own_schema_refuses_is_checked_like_any_value(
    arm: tuple[RecordingServer, MCPManager],
) -> None:
    """``maximum: 1, default: 5``: the server would run at 5 when the call leaves it out,
    so the envelope sees 5 (and clamps it); the call is never refused for the schema's
    own mistake, nor sent without the value."""
    server, manager = arm
    connection = manager._servers["arm"]
    sloppy = MCPTool(
        "sloppy",
        server=connection,
        remote_name="sloppy",
        description="a tool whose default breaks its own schema",
        parameters={
            "type": "object",
            "properties": {"speed": {"type": "number", "maximum": 1, "default": 5}},
        },
        physical=True,
        safety={"speed": "speed"},
    )
    assert sloppy.validate({}) == {"speed": 5}
    readings = Readings()
    with Harness(
        offline(),
        model=ScriptedModel([call("sloppy"), reply("done")]),
        driver=readings,
        tools=[sloppy],
        safety=SafetyEnvelope(PANDA, observe=readings.observe),
    ) as harness:
        list(harness.run_stream("move"))
    assert server.calls("sloppy") == [{"speed": LIMITS.max_speed_m_s}]


def test_defaults_are_found_through_refs_optional_models_and_arrays() -> None:
    """The shapes pydantic-built servers advertise: a model behind ``$ref`` (defaults on
    the reference and inside the model), an optional model (``anyOf`` with null), and a
    list of models."""
    pose = {"type": "object", "properties": {"x": {"type": "number"}, "speed": {"default": 0.2}}}
    schema = {
        "type": "object",
        "$defs": {"Pose": pose},
        "properties": {
            "target": {"$ref": "#/$defs/Pose", "default": {"x": 0.4}},
            "via": {"anyOf": [{"$ref": "#/$defs/Pose"}, {"type": "null"}], "default": None},
            "path": {"type": "array", "items": {"$ref": "#/$defs/Pose"}},
        },
    }
    assert with_schema_defaults(schema, {}) == {"target": {"x": 0.4, "speed": 0.2}, "via": None}
    assert with_schema_defaults(schema, {"via": {"x": 1}, "path": [{"x": 2}, {}]}) == {
        "target": {"x": 0.4, "speed": 0.2},
        "via": {"x": 1, "speed": 0.2},
        "path": [{"x": 2, "speed": 0.2}, {"speed": 0.2}],
    }
    looping = {"type": "object", "properties": {"next": {"$ref": "#"}, "k": {"default": 1}}}
    assert with_schema_defaults(looping, {"next": {"next": {}}}) == {
        "next": {"next": {"k": 1}, "k": 1},
        "k": 1,
    }
