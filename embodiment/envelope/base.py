"""Base motion: translations and turns of a mobile base against its step and turn limits
and the measured clearance, and navigation goals against the directions left clear.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from embodiment.envelope.common import Call, Verdict, finite_value
from embodiment.profile import EmbodimentProfile
from embodiment.types import Observation, reading

__all__ = ["BaseLimits"]


class BaseLimits:
    """``distance`` / ``direction`` / ``angle`` / ``navigation`` arguments (a built-in rule)."""

    name = "base"
    ends_on_block = False
    needs_unblocked = False

    def __init__(self, profile: EmbodimentProfile) -> None:
        self.profile = profile

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_base(verdict, call.name, call.kinds, call.observation)

    def _check_base(
        self,
        verdict: Verdict,
        name: str,
        kinds: Mapping[str, str],
        observation: Observation | None,
    ) -> None:
        base_kinds = {kind for kind in kinds.values()} & {"distance", "angle", "navigation"}
        if not base_kinds:
            return
        profile = self.profile
        base = profile.base
        if not profile.mobile:
            verdict.block(f"fixed_base: {name} moves the base, but {profile.name}'s base is fixed")
            return
        clearance = {
            direction: float(reading(observation, key))
            for direction, key in base.clearance_readings.items()
        }
        margin = base.clearance_margin_m
        direction_arg = next((a for a, k in kinds.items() if k == "direction"), None)
        for arg, kind in kinds.items():
            value = verdict.arguments.get(arg)
            if value is None:
                continue
            if kind == "distance":
                if not finite_value(value) or isinstance(value, (list, tuple)):
                    verdict.block(f"invalid_argument:{arg}: {value!r} is not a finite number")
                    continue
                distance = float(value)
                if direction_arg is not None:
                    direction = str(verdict.arguments.get(direction_arg, "forward"))
                    if distance < 0:
                        verdict.block(f"invalid_argument:{arg}: use {direction_arg} for direction")
                        continue
                else:
                    direction = "forward" if distance >= 0 else "backward"
                if direction not in clearance:
                    verdict.block(f"invalid_argument: unknown direction {direction!r}")
                    continue
                if direction in ("left", "right") and base.mobility == "differential":
                    verdict.block(f"base_mobility: a differential base cannot move {direction}")
                    continue
                magnitude = abs(distance)
                sign = -1.0 if distance < 0 else 1.0
                if base.max_step_m is not None and magnitude > base.max_step_m:
                    verdict.clamp(
                        f"base_step_limit: {magnitude:.3f} m exceeds {base.max_step_m:.3f} m per "
                        "call; shortened"
                    )
                    magnitude = base.max_step_m
                allowed = clearance[direction] - margin
                if allowed < base.min_motion_m:
                    verdict.block(
                        f"base_clearance:{direction}: {clearance[direction]:.3f} m clear, margin "
                        f"{margin:.3f} m; too close to move {direction}"
                    )
                    continue
                if magnitude > allowed:
                    verdict.clamp(
                        f"base_clearance:{direction}: move shortened from {magnitude:.3f} m to "
                        f"{allowed:.3f} m (clearance {clearance[direction]:.3f} m - margin "
                        f"{margin:.3f} m)"
                    )
                    magnitude = allowed
                verdict.arguments[arg] = sign * magnitude
            elif kind == "angle":
                if not finite_value(value) or isinstance(value, (list, tuple)):
                    verdict.block(f"invalid_argument:{arg}: {value!r} is not a finite number")
                    continue
                angle = float(value)
                if base.max_turn_rad is not None and abs(angle) > base.max_turn_rad:
                    angle = math.copysign(base.max_turn_rad, angle)
                    verdict.clamp(f"base_turn_limit: {value:.3f} rad clamped to {angle:.3f} rad")
                if base.footprint.shape == "box":
                    tight = [d for d, c in clearance.items() if c < margin]
                    if tight:
                        verdict.block(
                            f"base_clearance:{','.join(tight)}: under {margin:.3f} m clear; "
                            "turning would sweep the footprint into it"
                        )
                        continue
                verdict.arguments[arg] = angle
            elif kind == "navigation":
                clear = [d for d, c in clearance.items() if c - margin >= base.min_motion_m]
                if not clear:
                    verdict.block(
                        "no_clear_direction: every direction is within "
                        f"{margin + base.min_motion_m:.3f} m of an obstacle; navigation blocked"
                    )
