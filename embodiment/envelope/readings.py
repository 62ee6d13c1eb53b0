"""Readings: a fresh observation (refreshed or blocked when older than the profile's
maximum age) and every required reading present and finite before any motion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from embodiment.envelope.common import Vec3, finite_value
from embodiment.profile import EmbodimentProfile
from embodiment.types import Observation, reading

__all__ = ["Readings"]


class Readings:
    """Reading freshness and presence: checked before any rule runs, since every rule
    reads them.

    Args:
        profile: Which readings are required and how old they may be.
        clock: Time source for reading ages.
        observe: Takes a fresh observation when the given one is too old (None: a stale
            reading blocks).
    """

    def __init__(
        self,
        profile: EmbodimentProfile,
        *,
        clock: Callable[[], float],
        observe: Callable[[], Observation] | None = None,
    ) -> None:
        self.profile = profile
        self.clock = clock
        self.observe = observe

    def fresh(self, observation: Observation | None) -> tuple[Observation | None, str]:
        max_age = self.profile.safety.max_reading_age_s
        stale = observation is None or self.clock() - observation.timestamp > max_age
        if not stale:
            return observation, ""
        if self.observe is None:
            if observation is None:
                return None, "missing_observation: no readings to check the motion against"
            age = self.clock() - observation.timestamp
            return None, f"stale_readings: readings are {age:.1f} s old (max {max_age} s)"
        try:
            return self.observe(), ""
        except Exception as exc:
            return None, f"missing_observation: taking fresh readings failed ({exc})"

    def required_readings(self, kinds: Mapping[str, str]) -> list[str]:
        names = list(self.profile.safety.required_readings)
        if self.profile.mobile:
            names.append("base_pose")
            if set(kinds.values()) & {"distance", "angle", "navigation"}:
                names.extend(self.profile.base.clearance_readings.values())
        return list(dict.fromkeys(names))

    def reading_problems(
        self, observation: Observation | None, kinds: Mapping[str, str]
    ) -> list[str]:
        problems = []
        for name in self.required_readings(kinds):
            value = reading(observation, name)
            if value is None:
                problems.append(f"missing_reading:{name}: no value, motion is not safe to check")
            elif not finite_value(value):
                problems.append(f"invalid_reading:{name}: {value!r} is not a finite number")
            elif name in self.profile.base.clearance_readings.values() and float(value) < 0:
                problems.append(f"invalid_reading:{name}: negative clearance {value!r}")
        return problems

    def base_pose(self, observation: Observation | None) -> tuple[float, float, float] | None:
        if not self.profile.mobile:
            return None
        value = reading(observation, "base_pose")
        return (float(value[0]), float(value[1]), float(value[2]))

    def ee(self, observation: Observation | None) -> Vec3 | None:
        value = reading(observation, "ee_position")
        if value is None or not finite_value(value) or len(value) != 3:
            return None
        return (float(value[0]), float(value[1]), float(value[2]))
