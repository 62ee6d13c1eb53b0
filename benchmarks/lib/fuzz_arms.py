"""The arms :mod:`benchmarks.safety_fuzz` attacks, and the ways a command reaches them.

The profiles (the Panda, or ``--profile``, and a yawed arm whose workspace and one zone
are in its base frame), the objects placed on and around each workspace's edges, the fake
arm that records every command it really executed (the oracle judges those, not what the
envelope saw), and the hardware side of each tool source: ``@tool(physical=True)``
functions driving the arm, and the declarations and readings of the stdio MCP arm server.
:mod:`benchmarks.safety_fuzz_body` attacks a :class:`RecordingArm` too.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.lib.readings_only import ReadingsOnlyDriver
from benchmarks.lib.safety_oracle import Command
from embodiment.profile import EmbodimentProfile, load_profile
from embodiment.types import ActionResult, Observation
from harness.tools import Tool, tool
from worlds.fake import FakeRobot

__all__ = [
    "ARM",
    "ARM_SERVER",
    "FUNCTION_KINDS",
    "MCP_HOME",
    "MCP_KINDS",
    "MCP_PHYSICAL",
    "MCP_SAFETY",
    "PROFILES",
    "RecordingArm",
    "StateFileDriver",
    "function_tools",
    "fuzz_objects",
    "use_profile",
]

ROOT = Path(__file__).resolve().parents[2]

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


def fuzz_objects(profile: EmbodimentProfile) -> dict[str, tuple[float, float, float]]:
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


def function_tools(arm: RecordingArm) -> list[Tool]:
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


class StateFileDriver(ReadingsOnlyDriver):
    """Readings of the MCP arm, from the state file it publishes; no actions of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path

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
MCP_HOME = [0.307, 0.0, 1.11]
"""Where the MCP arm server's gripper starts (its ``HOME``), for a scenario that leaves
the start pose out."""
