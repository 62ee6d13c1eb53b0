"""Joint-space targets: each joint within its limits (a hair beyond clamped onto them) and
the per-call joint step.
"""

from __future__ import annotations

from collections.abc import Mapping

from embodiment.envelope.common import (
    EPSILON,
    JOINT_TOLERANCE_RAD,
    Call,
    Verdict,
    finite_value,
)
from embodiment.profile import EmbodimentProfile
from embodiment.types import Observation, reading

__all__ = ["JointLimits"]


class JointLimits:
    """``joints`` arguments (a built-in rule)."""

    name = "joints"
    ends_on_block = False
    needs_unblocked = False

    def __init__(self, profile: EmbodimentProfile) -> None:
        self.profile = profile

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_joints(verdict, call.kinds, call.observation)

    def _check_joints(
        self, verdict: Verdict, kinds: Mapping[str, str], observation: Observation | None
    ) -> None:
        limits = self.profile.limits
        for arg, kind in kinds.items():
            if kind != "joints" or verdict.arguments.get(arg) is None:
                continue
            values = verdict.arguments[arg]
            if not finite_value(values) or not isinstance(values, (list, tuple)):
                verdict.block(f"invalid_argument:{arg}: {values!r} is not a list of numbers")
                continue
            if limits.joint_limits is None:
                verdict.block("joint_limit: the profile declares no joint_limits")
                continue
            if len(values) != len(limits.joint_limits):
                verdict.block(
                    f"joint_limit: {arg} has {len(values)} values; the arm has "
                    f"{len(limits.joint_limits)} joints"
                )
                continue
            target = [float(v) for v in values]
            blocked = False
            for index, (value, (low, high)) in enumerate(
                zip(target, limits.joint_limits, strict=True)
            ):
                if low <= value <= high:
                    continue
                if low - JOINT_TOLERANCE_RAD <= value <= high + JOINT_TOLERANCE_RAD:
                    target[index] = min(high, max(low, value))
                    verdict.clamp(
                        f"joint_limit:{index}: {value:.4f} clamped to {target[index]:.4f}"
                    )
                else:
                    blocked = True
                    verdict.block(
                        f"joint_limit:{index}: {value:.4f} rad is outside [{low:.4f}, {high:.4f}]"
                    )
            if blocked:
                continue
            step = limits.max_joint_step_rad
            if step is not None:
                current = reading(observation, "joint_positions")
                if current is None or not finite_value(current) or len(current) != len(target):
                    verdict.block(
                        "missing_reading:joint_positions: needed for the joint step limit"
                    )
                    continue
                now = [float(c) for c in current]
                scaled = self._joint_step(verdict, target, now, step)
                if scaled is None:
                    continue
                target = scaled
            if target != [float(v) for v in values]:
                verdict.arguments[arg] = target

    def _joint_step(
        self, verdict: Verdict, target: list[float], current: list[float], step: float
    ) -> list[float] | None:
        """Scale the move down to one step; a joint the reading has past its limit must
        come back within it (clamped onto the limit when that is within one step)."""
        limits = self.profile.limits.joint_limits or []
        deltas = [t - c for t, c in zip(target, current, strict=True)]
        largest = max(abs(d) for d in deltas) if deltas else 0.0
        if largest <= step:
            return target
        scale = step / largest
        scaled = [c + d * scale for c, d in zip(current, deltas, strict=True)]
        for index, (value, (low, high)) in enumerate(zip(scaled, limits, strict=True)):
            if low <= value <= high:
                continue
            onto = min(high, max(low, value))
            if abs(onto - current[index]) > step + EPSILON:
                verdict.block(
                    f"joint_limit:{index}: the arm reads {current[index]:.4f} rad, "
                    f"{abs(onto - current[index]):.3f} rad past [{low:.4f}, {high:.4f}]; no "
                    f"single step of {step:.3f} rad brings it back (move it back by hand)"
                )
                return None
            scaled[index] = onto
        verdict.clamp(
            f"joint_step: largest joint move {largest:.3f} rad exceeds {step:.3f} rad per "
            "call; scaled down"
        )
        return scaled
