"""How the envelope checks each physical tool's motion, for an engineer to audit.

:func:`motion_check` answers, from a tool's declaration alone (nothing moves
and no reading is needed), which of the envelope's motion models applies: the driver's
described waypoints, the straight-line / approach-box assumption, forward kinematics of
joint targets, the base sweep, or only limits; and warns where the motion itself is not
checked. ``harness check`` prints one line per physical tool from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from embodiment.profile import EmbodimentProfile

__all__ = ["MotionCheck", "MotionMethod", "motion_check"]

MotionMethod = Literal[
    "described_waypoints",
    "straight_line",
    "approach_box",
    "forward_kinematics",
    "joint_limits_only",
    "base_sweep",
    "clearance_only",
    "limits_only",
    "unchecked",
    "blocked",
]


@dataclass(frozen=True)
class MotionCheck:
    """One tool's motion model: the methods that apply, in words, and whether to worry."""

    tool: str
    methods: tuple[MotionMethod, ...]
    detail: str
    warning: bool = False


def motion_check(
    profile: EmbodimentProfile,
    tool: str,
    kinds: Mapping[str, str] | None,
    *,
    describes_motion: bool,
) -> MotionCheck:
    """How a call of ``tool`` (declared ``kinds``; None: declares nothing) is checked on
    ``profile``; ``describes_motion``: its driver says which waypoints each call visits."""
    if kinds is None:
        return MotionCheck(tool, ("blocked",), "declares no safety kinds: every call is blocked")
    values = set(kinds.values())
    methods: list[MotionMethod] = []
    parts: list[str] = []
    warning = False
    if "joints" in values:
        spec = profile.kinematics
        if spec is not None:
            methods.append("forward_kinematics")
            parts.append(
                f"joint targets and the joint-space path to them through forward kinematics "
                f"({_engine_name(spec)}: {spec.urdf}, end effector {spec.ee_link} at frame "
                f"{spec.frame}): "
                "workspace, keep-out zones, step"
            )
        elif profile.safety.joint_limits_only:
            methods.append("joint_limits_only")
            warning = True
            parts.append(
                "joint limits and joint step ONLY (safety.joint_limits_only): where the "
                "arm goes is not checked"
            )
        else:
            methods.append("blocked")
            warning = True
            parts.append(
                "blocked: joint targets need a kinematic model (`kinematics:` in the "
                "profile) or safety.joint_limits_only: true"
            )
    if values & {"distance", "angle"}:
        methods.append("base_sweep")
        parts.append(
            "base sweep: the gripper carried along the move (line) or turn (arc) against "
            "world keep-out zones, the workspace and the base step; plus clearance"
        )
    if "navigation" in values:
        methods.append("clearance_only")
        warning = True
        parts.append(
            "navigation: clearance around the base only; the path to the goal and the "
            "gripper's sweep along it are not checked"
        )
    positional = values & {"position", "position.x", "position.y", "position.z"}
    refs = values & {"object_ref", "target_ref"}
    fallback: list[str] = []
    if positional:
        methods.append("straight_line")
        fallback.append("assumed to go in a straight line to the target")
    if refs:
        methods.append("approach_box")
        fallback.append(
            f"assumed to stay in the box between the gripper, the ref and "
            f"{profile.safety.approach_height_m:.3f} m above it"
        )
    if not kinds and not describes_motion:
        methods.append("unchecked")
        warning = True
        fallback.append(
            "takes no arguments and its driver does not describe its motion: where it "
            "moves is not checked"
        )
    if describes_motion and (positional or refs or not kinds):
        methods.insert(0, "described_waypoints")
        parts.append(
            "the driver's described waypoints for each call, segment by segment; when it "
            "describes none: " + ("; ".join(fallback) or "where it moves is not checked")
        )
    else:
        parts.extend(fallback)
    if not methods:
        methods.append("limits_only")
        parts.append(
            "no motion to check: "
            + ", ".join(sorted(values - {"free"}) or ["free arguments"])
            + " within the profile's limits"
        )
    return MotionCheck(tool, tuple(methods), "; ".join(parts), warning)


def _engine_name(spec: Any) -> str:
    """The library the kinematics run on, as ``harness check`` names it."""
    from embodiment.envelope.kinematics import engine_of

    return {"mujoco": "MuJoCo", "pybullet": "PyBullet"}[engine_of(spec)]
