"""Scalar arguments: speed and force between the profile's minimum and maximum, gripper
width up to the gripper's maximum opening.
"""

from __future__ import annotations

from collections.abc import Mapping

from embodiment.envelope.common import Call, Verdict, finite_value
from embodiment.profile import EmbodimentProfile

__all__ = ["ScalarLimits"]


class ScalarLimits:
    """Speed, force and width (a built-in rule)."""

    name = "scalars"
    ends_on_block = False
    needs_unblocked = False

    def __init__(self, profile: EmbodimentProfile) -> None:
        self.profile = profile

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_scalars(verdict, call.kinds)

    def _check_scalars(self, verdict: Verdict, kinds: Mapping[str, str]) -> None:
        limits = self.profile.limits
        gripper = self.profile.grippers[0] if self.profile.grippers else None
        bounds: dict[str, tuple[str, float | None, float | None]] = {
            "speed": ("speed_limit", limits.min_speed_m_s, limits.max_speed_m_s),
            "force": ("force_limit", limits.min_force_n, limits.max_force_n),
            "width": ("gripper_width", None, gripper.max_opening_m if gripper else None),
        }
        for arg, kind in kinds.items():
            if kind not in bounds:
                continue
            value = verdict.arguments.get(arg)
            if value is None:
                continue
            label, minimum, limit = bounds[kind]
            if not finite_value(value) or isinstance(value, (list, tuple)):
                verdict.block(f"invalid_argument:{arg}: {value!r} is not a finite number")
                continue
            if value < 0:
                verdict.block(f"{label}: {arg}={value!r} is negative")
                continue
            if minimum is not None and value <= 0:
                verdict.block(
                    f'{label}: {arg}={value!r} must be positive (0 means "no limit" on many '
                    "drives); leave it out for the default"
                )
                continue
            if minimum is not None and value < minimum:
                verdict.block(
                    f"{label}: {arg} {value:g} is below the profile's minimum {minimum:g}"
                )
                continue
            if kind == "width" and gripper is None:
                verdict.block(f"{label}: the profile declares no gripper")
                continue
            if kind == "width" and limit is None:
                verdict.block(
                    f"{label}: grippers.0.max_opening_m is not in the profile, so no width "
                    "can be checked; add it to the profile"
                )
                continue
            if limit is not None and value > limit:
                verdict.arguments[arg] = limit
                verdict.clamp(f"{label}: {arg} {value:g} clamped to {limit:g}")
