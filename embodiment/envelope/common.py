"""What every rule of the safety envelope shares: the call a rule reads (:class:`Call`),
the verdict the rules build up together (admitted arguments, clamps, blocks), and the
numeric helpers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from embodiment.types import Motion, Observation, SafetyDecision

__all__ = [
    "EPSILON",
    "JOINT_TOLERANCE_RAD",
    "POSITION_KINDS",
    "REF_KINDS",
    "Call",
    "MotionSource",
    "Vec3",
    "Verdict",
    "blocked",
    "clear",
    "finite_value",
    "schema_defaults",
    "xyz",
]

Vec3 = tuple[float, float, float]
MotionSource = Callable[[Mapping[str, Any]], Motion | None]
JOINT_TOLERANCE_RAD = 0.05
"""A joint target this close beyond its limit is clamped onto it; farther is blocked."""
EPSILON = 1e-9
"""Floating-point slack for comparisons of values the envelope computed itself."""
POSITION_KINDS = frozenset({"position", "position.x", "position.y", "position.z"})
REF_KINDS = ("object_ref", "target_ref")


@dataclass
class Verdict:
    arguments: dict[str, Any]
    base_pose: tuple[float, float, float] | None = None
    """Live base pose (mobile bases): frames attached to the base move with it."""
    ee: Vec3 | None = None
    """The end effector's reading: where every motion starts."""
    schema: Mapping[str, Any] | None = None
    """The tool's input schema (defaults of arguments a call leaves out)."""
    targets: list[Vec3] = field(default_factory=list)
    """Position targets as admitted (clamped), for the conservative path."""
    refs: dict[str, tuple[str, Vec3]] = field(default_factory=dict)
    """argument -> (kind, the point the gripper would go to), for the conservative path."""
    filled: list[str] = field(default_factory=list)
    """Arguments the call left out that took their schema default (checked like the rest)."""
    clamps: list[str] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)

    def clamp(self, message: str) -> None:
        self.clamps.append(message)

    def block(self, message: str) -> None:
        self.blocks.append(message)


@dataclass(frozen=True)
class Call:
    """The call every built-in rule reads: the tool's name, its declared kinds, the fresh
    observation the envelope checked the readings of, and how its driver describes the
    motion (None: it cannot)."""

    name: str
    kinds: Mapping[str, str]
    observation: Observation | None
    motion: MotionSource | None = None


def blocked(violations: list[str]) -> SafetyDecision:
    return SafetyDecision(
        outcome="block",
        violations=violations,
        reason="; ".join(violations),
    )


def schema_defaults(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    properties = (schema or {}).get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    return {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and "default" in spec
    }


def clear(gap: float, margin: float) -> bool:
    """Far enough from a keep-out zone: at least the margin, and never touching it."""
    return gap > 0 and gap >= margin


def finite_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return bool(value) and all(finite_value(v) for v in value)
    return False


def xyz(point: Sequence[float]) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in point) + ")"
