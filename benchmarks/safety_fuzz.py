"""Attack the safety envelope through the real loop, for every tool source, and count.

    python -m benchmarks.safety_fuzz [--calls 20000] [--seed 0] [--sources driver,mcp,...]

A ScriptedModel sends random physical calls (targets on, near and beyond the workspace
boundary and the keep-out zones, non-finite numbers, zero and huge speeds and forces,
joints past their limits, refs of objects outside the workspace, below the table, inside
a zone or too heavy, undeclared arguments and tools) through ``Harness.run_stream`` from
random start states (the gripper inside a zone's margin, outside the workspace, joints
past their limits). Each source is a different way a command reaches hardware:

- ``driver``: tools generated from a driver that describes its motions (``FakeRobot``,
  whose pick and place approach, descend, lift and carry like the simulator's);
- ``conservative``: the same driver when it cannot describe its motions (the envelope's
  conservative path applies);
- ``function``: ``@tool(physical=True)`` functions driving the arm;
- ``mcp``: a stdio MCP server with physical tools (``tests/fixtures/mcp_arm_server.py``),
  fully, partly and not declared, including schemas the envelope cannot enumerate.

The driver-side sources run on the built-in Panda profile and on a yawed arm whose
workspace and one zone are in its base frame. Every command the hardware executed is
judged by :mod:`benchmarks.lib.safety_oracle` (its own geometry, not the envelope's); an
escape is a command it finds outside the profile. Prints calls tried, allowed, clamped,
blocked, rejected by the tool schema before the envelope, executed and escaped, per
source and in total. ``tests/embodiment/test_safety_oracle.py`` runs the same campaign with a
bounded example count (and hypothesis shrinking an escape to its smallest call list).
The classes of issue 25 (left-out arguments with unsafe defaults, joint targets through the
URDF's kinematics, base sweeps, broken profiles) are in :mod:`benchmarks.safety_fuzz_body`.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.lib.safety_oracle import Command, judge  # noqa: E402
from embodiment.envelope import SafetyEnvelope  # noqa: E402
from embodiment.profile import EmbodimentProfile, load_profile  # noqa: E402
from embodiment.types import ActionResult, ActionSpec, Observation  # noqa: E402
from harness import Harness, HarnessConfig  # noqa: E402
from harness.events import SafetyCheckEvent, ToolCallEvent  # noqa: E402
from harness.providers import ScriptedModel, call, reply  # noqa: E402
from harness.tools import Tool, tool  # noqa: E402
from harness.world.physical import physical_tools  # noqa: E402
from worlds.fake import FakeRobot  # noqa: E402

__all__ = [
    "SOURCES",
    "Campaign",
    "Tally",
    "scenarios",
]

ARM_SERVER = ROOT / "tests" / "fixtures" / "mcp_arm_server.py"
OBJECT_SIZE = 0.04


ARM: dict[str, Any] = {"profile": "panda_tabletop"}
"""The arm the driver-side sources attack (``--profile``: a profile name, a world's
profile such as ``so101``, or a path); the yawed variant and the MCP server are Panda-only."""


def use_profile(source: str) -> None:
    """Attack ``source`` (resolved through the world registry) instead of the Panda."""
    from worlds.registry import load_profile as world_profile

    ARM["profile"] = world_profile(source)
    _panda.cache_clear()


@functools.cache
def _panda() -> EmbodimentProfile:
    source = ARM["profile"]
    data = (source if isinstance(source, EmbodimentProfile) else load_profile(source)).model_dump()
    data["safety"]["no_argument_tools"] = ["beep"]
    return EmbodimentProfile.model_validate(data)


@functools.cache
def _yawed() -> EmbodimentProfile:
    """An arm on a rotated, raised base; workspace and one zone in the base frame."""
    data = load_profile("panda_tabletop").model_dump()
    data["name"] = "yawed_arm"
    data["frames"] = {"base": {"parent": "world", "position": (1.0, 0.5, 0.7), "yaw": 0.6}}
    data["workspace"] = {"frame": "base", "min": (0.15, -0.45, 0.01), "max": (0.75, 0.45, 0.6)}
    data["keep_out"] = [
        {"name": "mast", "frame": "base", "min": (0.30, -0.10, 0.0), "max": (0.42, 0.05, 0.45)},
        {"name": "bin", "frame": "world", "min": (1.1, 0.95, 0.6), "max": (1.35, 1.2, 1.0)},
    ]
    data["cameras"] = []
    data["sensors"] = ["joint_state", "gripper_state"]
    data["grippers"][0]["initial_position"] = (0.45, 0.2, 0.5)
    return EmbodimentProfile.model_validate(data)


PROFILES: dict[str, Callable[[], EmbodimentProfile]] = {"panda": _panda, "yawed": _yawed}


def _world_box(profile: EmbodimentProfile) -> tuple[list[float], list[float]]:
    """World-axis bounds of the workspace (for generating values around it)."""
    ws = profile.workspace
    corners = [
        profile.to_world((x, y, z), ws.frame)
        for x in (ws.min[0], ws.max[0])
        for y in (ws.min[1], ws.max[1])
        for z in (ws.min[2], ws.max[2])
    ]
    return [min(c[i] for c in corners) for i in range(3)], [
        max(c[i] for c in corners) for i in range(3)
    ]


def _objects(profile: EmbodimentProfile) -> dict[str, tuple[float, float, float]]:
    """Objects inside, beside, beyond and below the workspace, and in and near a zone."""
    ws = profile.workspace
    floor = ws.min[2] + OBJECT_SIZE / 2 - 0.01  # resting on a surface 1 cm under the floor
    middle = [(lo + hi) / 2 for lo, hi in zip(ws.min, ws.max, strict=True)]
    zone = next(z for z in profile.keep_out if z.frame == ws.frame)
    zone_mid = [(lo + hi) / 2 for lo, hi in zip(zone.min, zone.max, strict=True)]
    local = {
        "cube_centre": (middle[0], middle[1], floor),
        "cube_edge": (ws.max[0] - 0.03, ws.min[1] + 0.03, floor),
        "cube_beyond": (ws.max[0] + 0.034, middle[1], floor),
        "cube_sunk": (middle[0], middle[1] + 0.1, ws.min[2] - 0.03),
        "cube_in_zone": (zone_mid[0], zone_mid[1], zone.min[2] + 0.02),
        "cube_by_zone": (zone.max[0] + 0.03, zone_mid[1], floor),
        "cube_high": (middle[0], middle[1] - 0.1, ws.max[2] - 0.01),
        "heavy_box": (middle[0] - 0.1, middle[1] - 0.2, floor),
    }
    return {ref: profile.to_world(point, ws.frame) for ref, point in local.items()}


# ---------------------------------------------------------------------- the hardware


class RecordingArm(FakeRobot):
    """The fake arm, recording every command it executes: the arguments, the state it
    started from, and the segments its gripper really travelled."""

    def __init__(self, profile: EmbodimentProfile, **options: Any) -> None:
        super().__init__(profile, **options)
        self.recorded: list[Command] = []
        """Every command it was asked to execute, as :class:`Command` records."""
        self._segments: list[tuple[list[float], list[float]]] | None = None

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        spec = self._specs.get(action)
        kinds = spec.safety if spec is not None else None
        command = Command(action, dict(arguments), list(self.ee), list(self.joints), kinds=kinds)
        self._segments = command.segments  # type: ignore[assignment]
        try:
            return super().execute(action, arguments)
        finally:
            self._segments = None
            self.recorded.append(command)

    def _travel(self, point: list[float], target: list[float]) -> bool:
        start = list(point)
        done = super()._travel(point, target)
        if point is self.ee and self._segments is not None:
            self._segments.append((start, list(point)))
        return done


def _function_tools(arm: RecordingArm) -> list[Tool]:
    """``@tool(physical=True)`` functions driving the arm, declared well, partly and not."""
    move_kinds = {"target": "position", "speed": "speed", "label": "free"}

    @tool(physical=True, safety=move_kinds)
    def reach(target: list[float], speed: float | None = None, label: str = "") -> str:
        """Move the gripper in a straight line to target [x, y, z]."""
        x, y, z = target
        return arm.execute("move_to", {"x": x, "y": y, "z": z, "speed": speed}).message

    @tool(physical=True, safety={"x": "position.x", "y": "position.y", "z": "position.z"})
    def nudge(x: float, y: float, z: float, relative: bool = False) -> str:
        """Move to x, y, z, or by x, y, z when relative (relative is not declared)."""
        point = [v + e for v, e in zip((x, y, z), arm.ee, strict=True)] if relative else [x, y, z]
        return arm.execute("move_to", dict(zip("xyz", point, strict=True))).message

    @tool(physical=True, safety={"joints": "joints"})
    def set_arm_joints(joints: list[float]) -> str:
        """Move the arm to joint positions (radians)."""
        return arm.execute("move_joints", {"joints": joints}).message

    @tool(physical=True, safety={"force": "force"})
    def squeeze(force: float) -> str:
        """Close the gripper with a force (newtons)."""
        return arm.execute("close_gripper", {"force": force}).message

    @tool(physical=True)
    def wiggle() -> str:
        """Wiggle the gripper (undeclared: must never run)."""
        return arm.execute("move_to", {"x": 0.0, "y": 0.0, "z": 0.0}).message

    @tool(physical=True, safety={})
    def chime() -> str:
        """Sound the buzzer (declared: no arguments, moves nothing)."""
        return "chimed"

    def grab_motion(arguments: Any) -> Any:
        return arm.describe_motion("pick", {"ref": arguments["ref"]})

    @tool(physical=True, safety={"ref": "object_ref"}, motion=grab_motion)
    def grab(ref: str) -> str:
        """Pick an object by ref (the arm describes the motion)."""
        return arm.execute("pick", {"ref": ref}).message

    @tool(physical=True, safety={"ref": "object_ref", "target": "target_ref", "note": "free"})
    def put(ref: str, target: str, note: str = "") -> str:
        """Place the held object on a target (no motion description: conservative)."""
        return arm.execute("place", {"ref": ref, "target": target}).message

    return [reach, nudge, set_arm_joints, squeeze, wiggle, chime, grab, put]


FUNCTION_KINDS = {
    "reach": {"target": "position", "speed": "speed", "label": "free"},
    "set_arm_joints": {"joints": "joints"},
    "squeeze": {"force": "force"},
    "grab": {"ref": "object_ref"},
    "put": {"ref": "object_ref", "target": "target_ref", "note": "free"},
    "chime": {},
}


class StateFileDriver:
    """Readings of the MCP arm, from the state file it publishes; no actions of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None: ...

    def capabilities(self) -> list[ActionSpec]:
        return []

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        return ActionResult(ok=False, message="no actions")

    def observe(self) -> Observation:
        return Observation(state=json.loads(self.path.read_text()))


MCP_MOVE = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}
MCP_SAFETY: dict[str, dict[str, str]] = {
    "move_to": MCP_MOVE,
    "move_xy": MCP_MOVE,  # z defaults to 0 in its schema: a call leaving z out goes there
    "move_arm": MCP_MOVE,  # frame and relative left out: every call must be blocked
    "move_ref": MCP_MOVE,  # a top-level $ref schema, declared: only declared keys pass
    "set_joints": {"joints": "joints", "speed": "speed"},
    "grip": {"force": "force", "width": "width"},
}
MCP_PHYSICAL = [
    "move_to",
    "move_xy",
    "move_arm",
    "move_free",
    "move_ref",
    "move_any",
    "set_joints",
    "grip",
    "beep",
    "home",
]
MCP_KINDS: dict[str, dict[str, str] | None] = {
    "move_to": MCP_MOVE,
    "move_xy": MCP_MOVE,
    "move_ref": MCP_MOVE,
    "set_joints": MCP_SAFETY["set_joints"],
    "grip": MCP_SAFETY["grip"],
    "beep": {},
}
"""What may reach the MCP arm at all (others are undeclared or partly declared)."""


# ---------------------------------------------------------------------- generating calls


def _coordinate(low: float, high: float, zone_faces: list[float]) -> st.SearchStrategy[float]:
    faces = [low, high, *zone_faces]
    inside = st.floats(low, high, allow_nan=False)
    return st.one_of(
        inside,
        inside,
        st.floats(low - 0.3, high + 0.3, allow_nan=False),
        st.builds(lambda f, d: f + d, st.sampled_from(faces), st.floats(-0.04, 0.04)),
        st.sampled_from([low, high, *zone_faces, 0.0, -0.0]),
        st.sampled_from([math.nan, math.inf, -math.inf, 1e9, -1e9]),
    )


@dataclass(frozen=True)
class Values:
    """Strategies for the values of one profile."""

    point: st.SearchStrategy[list[float]]
    speed: st.SearchStrategy[float | None]
    force: st.SearchStrategy[float]
    width: st.SearchStrategy[float | None]
    joints: st.SearchStrategy[list[float]]
    ref: st.SearchStrategy[str]


def _values(profile: EmbodimentProfile) -> Values:
    low, high = _world_box(profile)
    zones = [[profile.to_world(c, z.frame) for c in (z.min, z.max)] for z in profile.keep_out]
    faces = [[f[i] for pair in zones for f in pair] for i in range(3)]
    wild = st.tuples(*(_coordinate(low[i], high[i], faces[i]) for i in range(3))).map(list)
    inside = st.tuples(*(st.floats(low[i], high[i]) for i in range(3))).map(list)
    all_faces = [[low[i], high[i], *faces[i]] for i in range(3)]

    def onto_face(point: list[float], axis: int, pick: int, offset: float) -> list[float]:
        moved = list(point)
        moved[axis] = all_faces[axis][pick % len(all_faces[axis])] + offset
        return moved

    near_face = st.builds(
        onto_face, inside, st.integers(0, 2), st.integers(0, 99), st.floats(-0.04, 0.04)
    )
    point = st.one_of(inside, near_face, near_face, wild)
    limits = profile.limits
    joint_limits = limits.joint_limits or []
    joint_value = st.one_of(
        st.floats(-4.0, 4.0, allow_nan=False),
        st.builds(
            lambda pair, d: pair[0] + d,
            st.sampled_from([(lo,) for lo, _ in joint_limits] + [(hi,) for _, hi in joint_limits]),
            st.floats(-0.1, 0.1),
        ),
    )
    speeds = [0, 0.0, -0.1, 1e-4, limits.min_speed_m_s, limits.max_speed_m_s, 2.0, 50.0]
    forces = [0, 0.0, -1.0, 0.1, limits.min_force_n, limits.max_force_n, 500.0]
    return Values(
        point=point,
        speed=st.one_of(st.none(), st.sampled_from(speeds), st.floats(0.0, 1.0)),
        force=st.one_of(st.sampled_from(forces), st.floats(0.0, 200.0)),
        width=st.one_of(st.none(), st.floats(-0.01, 0.2)),
        joints=st.lists(joint_value, min_size=len(joint_limits) - 1, max_size=len(joint_limits) + 1)
        | st.lists(joint_value, min_size=len(joint_limits), max_size=len(joint_limits)),
        ref=st.sampled_from([*_objects(profile), "ghost"]),
    )


def _driver_calls(v: Values, *, with_home: bool) -> st.SearchStrategy[Any]:
    options = [
        st.builds(lambda p, s: call("move_to", x=p[0], y=p[1], z=p[2], speed=s), v.point, v.speed),
        st.builds(lambda j: call("move_joints", joints=j), v.joints),
        st.builds(lambda r: call("pick", ref=r), v.ref),
        st.builds(lambda r, t: call("place", ref=r, target=t), v.ref, v.ref),
        st.builds(lambda w: call("open_gripper", width=w), v.width),
        st.builds(lambda f: call("close_gripper", force=f), v.force),
    ]
    if with_home:
        options.append(st.just(call("home")))
    return st.one_of(*options)


def _function_calls(v: Values) -> st.SearchStrategy[Any]:
    reach = st.builds(lambda p, s: call("reach", target=p, speed=s, label="go"), v.point, v.speed)
    declared = st.one_of(
        reach,
        reach,
        st.builds(lambda j: call("set_arm_joints", joints=j), v.joints),
        st.builds(lambda f: call("squeeze", force=f), v.force),
        st.builds(lambda r: call("grab", ref=r), v.ref),
        st.builds(lambda r, t: call("put", ref=r, target=t, note="x"), v.ref, v.ref),
    )
    refused = st.one_of(
        st.builds(lambda p: call("reach", target=p, label=[1, 2]), v.point),
        st.builds(
            lambda p, r: call("nudge", x=p[0], y=p[1], z=p[2], relative=r), v.point, st.booleans()
        ),
        st.just(call("wiggle")),
        st.just(call("chime")),  # declared without arguments: allowed, moves nothing
    )
    return st.one_of(declared, declared, refused)


def _mcp_calls(v: Values) -> st.SearchStrategy[Any]:
    def move(name: str) -> st.SearchStrategy[Any]:
        return st.builds(
            lambda p, s: call(name, x=p[0], y=p[1], z=p[2], **({} if s is None else {"speed": s})),
            v.point,
            v.speed,
        )

    declared = st.one_of(
        move("move_to"),
        move("move_ref"),
        st.builds(lambda p: call("move_xy", x=p[0], y=p[1]), v.point),
        st.builds(lambda j, s: call("set_joints", joints=j, speed=s), v.joints, v.speed),
        st.builds(lambda f, w: call("grip", force=f, width=w), v.force, v.width),
        st.just(call("beep")),
    )
    refused = st.one_of(
        st.builds(
            lambda p, f, r: call("move_arm", x=p[0], y=p[1], z=p[2], frame=f, relative=r),
            v.point,
            st.sampled_from(["world", "base"]),
            st.booleans(),
        ),
        move("move_free"),
        st.builds(lambda p: call("move_free", x=p[0], frame="base"), v.point),
        st.builds(lambda p: call("move_ref", x=p[0], y=p[1], z=p[2], relative=True), v.point),
        move("move_any"),
        st.just(call("beep", loud=True)),
        st.just(call("home")),
    )
    return st.one_of(declared, declared, refused)


@dataclass(frozen=True)
class Scenario:
    """Where the arm starts and what the model asks for."""

    profile: str
    ee: tuple[float, float, float] | None
    """None: the profile's home pose."""
    joints: tuple[float, ...] | None
    calls: tuple[Any, ...]


def _start(profile: EmbodimentProfile) -> st.SearchStrategy[tuple[Any, Any]]:
    low, high = _world_box(profile)
    zone = profile.keep_out[0]
    in_zone = st.tuples(
        *(st.floats(lo - 0.03, hi + 0.03) for lo, hi in zip(zone.min, zone.max, strict=True))
    ).map(lambda p: profile.to_world(p, zone.frame))
    anywhere = st.tuples(
        *(st.floats(lo - 0.15, hi + 0.15) for lo, hi in zip(low, high, strict=True))
    )
    ee = st.one_of(st.none(), st.none(), anywhere, in_zone)
    limits = profile.limits.joint_limits or []
    joints = st.one_of(
        st.none(),
        st.tuples(*(st.floats(lo - 0.3, hi + 0.3) for lo, hi in limits)),
    )
    return st.tuples(ee, joints)


def scenarios(source: str, profile_name: str) -> st.SearchStrategy[Scenario]:
    """Random scenarios for one source on one profile."""
    profile = PROFILES[profile_name]()
    values = _values(profile)
    calls = {
        "driver": _driver_calls(values, with_home=True),
        "conservative": _driver_calls(values, with_home=False),
        "function": _function_calls(values),
        "mcp": _mcp_calls(values),
    }[source]
    return st.builds(
        lambda start, sequence: Scenario(profile_name, start[0], start[1], tuple(sequence)),
        _start(profile),
        st.lists(calls, min_size=1, max_size=8),
    )


# ---------------------------------------------------------------------- running


@dataclass
class Tally:
    """Counts of one campaign (or one source of it)."""

    tried: int = 0
    allowed: int = 0
    clamped: int = 0
    blocked: int = 0
    rejected: int = 0
    """Refused by the tool's own schema before the envelope saw it."""
    executed: int = 0
    escaped: int = 0
    escapes: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("tried", "allowed", "clamped", "blocked", "rejected", "executed", "escaped"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.escapes.extend(other.escapes)


def campaign_config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "failure_budget": 1000, "max_turns": 1000},
            "memory": {"enabled": False},
            "context": {"compaction": {"context_window": 1_000_000}},
        }
    )


def tally_events(events: list[Any], physical: set[str], calls: tuple[Any, ...]) -> Tally:
    tally = Tally()
    tally.tried = sum(1 for c in calls if c.tool_calls[0].name in physical)
    outcomes = Counter(e.outcome for e in events if isinstance(e, SafetyCheckEvent))
    tally.allowed, tally.clamped, tally.blocked = (
        outcomes["allow"],
        outcomes["clamp"],
        outcomes["block"],
    )
    tally.rejected = tally.tried - sum(outcomes.values())
    return tally


class Campaign:
    """Runs scenarios of every source; keeps one MCP arm server for the whole campaign."""

    def __init__(self) -> None:
        self._manager: Any = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._log_offset = 0

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._manager is not None:
            self._manager.close()
        if self._folder is not None:
            self._folder.cleanup()

    def run(self, source: str, scenario: Scenario) -> Tally:
        if source == "mcp":
            return self._run_mcp(scenario)
        return self._run_arm(source, scenario)

    def _arm(self, source: str, profile: EmbodimentProfile, scenario: Scenario) -> RecordingArm:
        options: dict[str, Any] = {
            "objects": _objects(profile),
            "object_mass_kg": {"heavy_box": 5.0},
        }
        if source in ("conservative", "function"):
            # Within the conservative assumption: never above approach_height_m of a ref.
            options.update(describes_motion=source != "conservative", approach_m=0.10)
        arm = RecordingArm(profile, **options)
        if scenario.ee is not None:
            arm.ee = list(scenario.ee)
        if scenario.joints is not None:
            arm.joints = list(scenario.joints)
        return arm

    def _run_arm(self, source: str, scenario: Scenario) -> Tally:
        profile = PROFILES[scenario.profile]()
        arm = self._arm(source, profile, scenario)
        if source == "function":
            tools, physical_parts = _function_tools(arm), []
            kinds: dict[str, dict[str, str] | None] = dict(FUNCTION_KINDS)
        else:
            specs = [s for s in arm.capabilities() if source != "conservative" or s.name != "home"]
            physical_parts = physical_tools(arm, specs=specs)
            tools, kinds = [], {}
        harness = Harness(
            campaign_config(),
            model=ScriptedModel([*scenario.calls, reply("done")]),
            driver=arm,
            tools=tools,
            physical_tools=physical_parts,
            safety=SafetyEnvelope(profile, locator=arm, observe=arm.observe),
        )
        with harness:
            events = list(harness.run_stream("fuzz"))
            physical = {t.name for t in harness.tools if t.physical}
        tally = tally_events(events, physical, scenario.calls)
        for command in arm.recorded:
            if source == "function":
                # The arm records what it executed; which tool sent it decides whether it
                # was declared (wiggle and nudge must never get this far).
                command.kinds = arm._specs[command.tool].safety
            self._judge(profile, command, tally, events)
        if source == "function":
            ran = [e.name for e in events if isinstance(e, ToolCallEvent)]
            for name in ran:
                if name in physical and name not in kinds:
                    tally.escaped += 1
                    tally.escapes.append(f"{name}: an undeclared @tool reached the hardware")
        return tally

    @contextmanager
    def _server(self) -> Iterator[Any]:
        if self._manager is None:
            from harness.config import MCPServerConfig
            from harness.mcp import MCPManager

            self._folder = tempfile.TemporaryDirectory(prefix="safety_fuzz_")
            folder = Path(self._folder.name)
            config = MCPServerConfig(
                name="arm",
                command=sys.executable,
                args=[
                    str(ARM_SERVER),
                    "--state",
                    str(folder / "state.json"),
                    "--log",
                    str(folder / "log.jsonl"),
                ],
                physical=MCP_PHYSICAL,
                safety=MCP_SAFETY,
                call_timeout_s=20,
            )
            self._manager = MCPManager.start_servers([config], base_dir=folder)
        yield self._manager

    def _run_mcp(self, scenario: Scenario) -> Tally:
        profile = PROFILES["panda"]()
        with self._server() as manager:
            assert self._folder is not None
            folder = Path(self._folder.name)
            start = list(scenario.ee) if scenario.ee is not None else [0.307, 0.0, 1.11]
            joints = list(scenario.joints) if scenario.joints is not None else None
            manager.call("arm", "teleport", {"ee": start, "joints": joints})
            log = folder / "log.jsonl"
            self._log_offset = log.stat().st_size if log.exists() else 0
            driver = StateFileDriver(folder / "state.json")
            harness = Harness(
                campaign_config(),
                model=ScriptedModel([*scenario.calls, reply("done")]),
                driver=driver,
                tools=[t for t in manager.tools() if t.name != "teleport"],
                safety=SafetyEnvelope(profile, observe=driver.observe),
            )
            with harness:
                events = list(harness.run_stream("fuzz"))
                physical = {t.name for t in harness.tools if t.physical}
            tally = tally_events(events, physical, scenario.calls)
            entries = []
            if log.exists():
                with log.open() as handle:
                    handle.seek(self._log_offset)
                    entries = [json.loads(line) for line in handle.read().splitlines()]
            for entry in entries:
                command = Command(
                    entry["tool"],
                    entry["arguments"],
                    entry["before"]["ee"],
                    entry["before"]["joints"],
                    [tuple(s) for s in entry["segments"]],  # type: ignore[misc]
                    kinds=MCP_KINDS.get(entry["tool"]),
                )
                self._judge(profile, command, tally, events)
            return tally

    def _judge(
        self, profile: EmbodimentProfile, command: Command, tally: Tally, events: list[Any]
    ) -> None:
        tally.executed += 1
        problems = judge(profile, command)
        if problems:
            tally.escaped += 1
            tally.escapes.append("; ".join(problems))


SOURCES = ("driver", "conservative", "function", "mcp")
ARM_PROFILES: dict[str, tuple[str, ...]] = {
    "driver": ("panda", "yawed"),
    "conservative": ("panda", "yawed"),
    "function": ("panda", "yawed"),
    "mcp": ("panda",),
}


# ---------------------------------------------------------------------- the command


def _campaign(sources: list[str], calls: int, seed: int) -> dict[str, Tally]:
    """About ``calls`` physical calls, shared out over the sources and their profiles."""
    results: dict[str, Tally] = {}
    with Campaign() as campaign:
        for source in sources:
            tally = results.setdefault(source, Tally())
            profiles = ARM_PROFILES[source]
            for index, profile_name in enumerate(profiles):
                goal = calls // len(sources) // len(profiles)
                part = Tally()
                strategy = scenarios(source, profile_name)
                round_seed = seed * 1000 + SOURCES.index(source) * 10 + index
                run = _runner(campaign, source, part)
                while part.tried < goal:
                    examples = max(1, (goal - part.tried) // 4)
                    generate_calls(strategy, examples, round_seed, run)
                    round_seed += 100_000
                tally.add(part)
    return results


def _runner(campaign: Campaign, source: str, part: Tally) -> Callable[[Scenario], None]:
    def run(scenario: Scenario) -> None:
        part.add(campaign.run(source, scenario))

    return run


def generate_calls(
    strategy: st.SearchStrategy[Scenario], examples: int, seed: int, run: Callable[[Scenario], None]
) -> None:
    """Draw ``examples`` scenarios from hypothesis (no shrinking: nothing here raises)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed

    @fixed_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(scenario: Scenario) -> None:
        run(scenario)

    draw()


def render(results: dict[str, Tally], seconds: float) -> str:
    total = Tally()
    lines = [
        "| source | tried | allowed | clamped | blocked | rejected by schema | executed "
        "| escaped |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for source, tally in results.items():
        total.add(tally)
        lines.append(_row(source, tally))
    lines.append(_row("**all**", total))
    lines.append("")
    lines.append(f"{seconds:.1f} s")
    if total.escapes:
        lines.append("")
        lines.append(f"first escapes ({len(total.escapes)}):")
        lines.extend(f"- {text[:300]}" for text in total.escapes[:10])
    return "\n".join(lines)


def _row(name: str, t: Tally) -> str:
    return (
        f"| {name} | {t.tried} | {t.allowed} | {t.clamped} | {t.blocked} | {t.rejected} | "
        f"{t.executed} | {t.escaped} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="physical calls to try")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument(
        "--profile",
        help="attack this arm profile (a name, a world's profile such as so101, or a path) "
        "with the driver, conservative and function sources, instead of the Panda",
    )
    args = parser.parse_args(argv)
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    if args.profile:
        if "mcp" in sources and args.sources != ",".join(SOURCES):
            parser.error("--profile: the mcp source's arm server is a Panda; leave mcp out")
        sources = [s for s in sources if s != "mcp"]
        use_profile(args.profile)
        for source in sources:
            ARM_PROFILES[source] = ("panda",)
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        parser.error(f"unknown source(s) {', '.join(unknown)}; expected {', '.join(SOURCES)}")
    started = time.perf_counter()
    results = _campaign(sources, args.calls, args.seed)
    print(render(results, time.perf_counter() - started))
    return 1 if any(t.escaped for t in results.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
