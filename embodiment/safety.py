"""The safety envelope: every physical call passes here before a driver sees it.

Each physical tool declares which of its arguments are what (``Tool.safety`` /
``ActionSpec.safety``, vocabulary in :data:`embodiment.types.SAFETY_KINDS`). The envelope
checks them against the profile and the latest readings and answers:

- **allow**: the call is inside every limit;
- **clamp**: the arguments are rewritten into the envelope (a small workspace overshoot,
  a too-long step, a too-fast speed, a base move longer than the measured clearance minus
  the margin); both versions are recorded in the ``safety_check`` event;
- **block**: an error result naming the violated limit reaches the model instead.

It fails closed: no observation, a missing, stale or non-finite reading, an object it
cannot locate, an undeclared argument kind, or an exception inside a check all block the
motion. Custom rules (:class:`SafetyRule`) run after the built-in checks and may clamp or
block further; they can never loosen a decision.

These checks are orchestration safeguards for a language model's commands. They do not
replace the robot's own emergency stop, collision avoidance or actuator limits.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from embodiment.profile import Box, EmbodimentProfile
from embodiment.types import (
    SAFETY_KINDS,
    Locator,
    ObjectInfo,
    Observation,
    SafetyDecision,
    reading,
)

__all__ = [
    "RuleOutcome",
    "SafetyEnvelope",
    "SafetyRequest",
    "SafetyRule",
    "segment_hits_box",
]

Vec3 = tuple[float, float, float]
JOINT_TOLERANCE_RAD = 0.05
"""A joint target this close beyond its limit is clamped onto it; farther is blocked."""


@dataclass(frozen=True)
class SafetyRequest:
    """What a custom rule sees: the call (with arguments as clamped so far) and context."""

    tool: str
    arguments: Mapping[str, Any]
    requested: Mapping[str, Any]
    kinds: Mapping[str, str]
    observation: Observation | None
    profile: EmbodimentProfile


@dataclass(frozen=True)
class RuleOutcome:
    """A rule's answer. ``clamp`` carries the rewritten arguments."""

    outcome: Literal["clamp", "block"]
    violation: str
    arguments: Mapping[str, Any] | None = None


class SafetyRule(Protocol):
    """A deployment's own check (e.g. "never above the conveyor while it runs").

    Returns None to leave the call as it is. ``name`` labels its violations.
    """

    name: str

    def __call__(self, request: SafetyRequest) -> RuleOutcome | None: ...


@dataclass
class _Verdict:
    arguments: dict[str, Any]
    base_pose: tuple[float, float, float] | None = None
    """Live base pose (mobile bases): frames attached to the base move with it."""
    clamps: list[str] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)

    def clamp(self, message: str) -> None:
        self.clamps.append(message)

    def block(self, message: str) -> None:
        self.blocks.append(message)


class SafetyEnvelope:
    """The profile's limits, applied to each physical call (a ``SafetyGate``).

    Args:
        profile: The embodiment profile (workspace, keep-out zones, limits, readings).
        locator: Resolves ``object_ref``/``target_ref`` arguments to positions; without
            one, calls with ref arguments are blocked.
        observe: Takes a fresh observation when the given one is older than
            ``profile.safety.max_reading_age_s``; without one, stale readings block.
        rules: Custom rules run after the built-in checks.
        clock: Time source for reading ages (tests).
    """

    def __init__(
        self,
        profile: EmbodimentProfile,
        *,
        locator: Locator | None = None,
        observe: Callable[[], Observation] | None = None,
        rules: Sequence[SafetyRule] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.locator = locator
        self.observe = observe
        self.rules = list(rules)
        self.clock = clock
        self.stats: Counter[str] = Counter()

    def add_rule(self, rule: SafetyRule) -> None:
        self.rules.append(rule)

    # ------------------------------------------------------------------ SafetyGate

    def check(
        self, tool: Any, arguments: Mapping[str, Any], observation: Observation | None
    ) -> SafetyDecision:
        """The ``SafetyGate`` entry point: ``tool`` is a harness Tool (name, safety,
        parameters), read by duck typing so this package stays free of the harness."""
        properties = (getattr(tool, "parameters", None) or {}).get("properties") or {}
        return self.check_call(
            tool.name,
            arguments,
            dict(getattr(tool, "safety", {}) or {}),
            observation,
            takes_arguments=bool(properties),
        )

    def check_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        kinds: Mapping[str, str],
        observation: Observation | None,
        *,
        takes_arguments: bool = True,
    ) -> SafetyDecision:
        """Check one call; never raises (an internal error blocks the call)."""
        try:
            decision = self._decide(
                name, dict(arguments), dict(kinds), observation, takes_arguments
            )
        except Exception as exc:  # fail closed
            decision = SafetyDecision(
                outcome="block",
                violations=["safety_check_error"],
                reason=f"the safety check itself failed ({type(exc).__name__}: {exc})",
            )
        self.stats[decision.outcome] += 1
        return decision

    # ------------------------------------------------------------------ decision

    def _decide(
        self,
        name: str,
        arguments: dict[str, Any],
        kinds: dict[str, str],
        observation: Observation | None,
        takes_arguments: bool,
    ) -> SafetyDecision:
        profile = self.profile
        verdict = _Verdict(arguments=dict(arguments))
        unknown = {arg: kind for arg, kind in kinds.items() if kind not in SAFETY_KINDS}
        if unknown:
            return _blocked(
                [
                    f"undeclared_kind: {arg} has unknown safety kind {kind!r}"
                    for arg, kind in unknown.items()
                ]
            )
        if takes_arguments and not kinds and name not in profile.safety.unchecked_tools:
            return _blocked(
                [
                    f"undeclared_arguments: {name} moves hardware but declares no safety kinds "
                    "for its arguments"
                ]
            )

        observation, problem = self._fresh(observation)
        if problem:
            return _blocked([problem])
        for problem in self.reading_problems(observation, kinds):
            verdict.block(problem)
        if verdict.blocks:
            return _blocked(verdict.blocks)
        verdict.base_pose = self._base_pose(observation)

        self._check_positions(verdict, kinds, observation)
        self._check_refs(verdict, kinds, observation)
        self._check_scalars(verdict, kinds)
        self._check_joints(verdict, kinds, observation)
        self._check_base(verdict, name, kinds, observation)

        if not verdict.blocks:
            request_args = dict(verdict.arguments)
            for rule in self.rules:
                request = SafetyRequest(
                    tool=name,
                    arguments=request_args,
                    requested=dict(arguments),
                    kinds=kinds,
                    observation=observation,
                    profile=profile,
                )
                rule_name = getattr(rule, "name", type(rule).__name__)
                outcome = rule(request)
                if outcome is None:
                    continue
                if outcome.outcome == "block":
                    verdict.block(f"rule:{rule_name}: {outcome.violation}")
                    break
                if outcome.arguments is None:
                    verdict.block(f"rule:{rule_name}: clamp without arguments")
                    break
                request_args = dict(outcome.arguments)
                verdict.arguments = request_args
                verdict.clamp(f"rule:{rule_name}: {outcome.violation}")

        if verdict.blocks:
            return _blocked(verdict.blocks + verdict.clamps)
        if verdict.clamps:
            return SafetyDecision(
                outcome="clamp",
                arguments=verdict.arguments,
                violations=verdict.clamps,
                reason="; ".join(verdict.clamps),
            )
        return SafetyDecision(outcome="allow", arguments=verdict.arguments)

    # ------------------------------------------------------------------ readings

    def _fresh(self, observation: Observation | None) -> tuple[Observation | None, str]:
        max_age = self.profile.safety.max_reading_age_s
        stale = observation is None or (
            max_age is not None and self.clock() - observation.timestamp > max_age
        )
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
            elif not _finite_value(value):
                problems.append(f"invalid_reading:{name}: {value!r} is not a finite number")
            elif name in self.profile.base.clearance_readings.values() and float(value) < 0:
                problems.append(f"invalid_reading:{name}: negative clearance {value!r}")
        return problems

    def _base_pose(self, observation: Observation | None) -> tuple[float, float, float] | None:
        if not self.profile.mobile:
            return None
        value = reading(observation, "base_pose")
        return (float(value[0]), float(value[1]), float(value[2]))

    def _ee(self, observation: Observation | None) -> Vec3 | None:
        value = reading(observation, "ee_position")
        if value is None or not _finite_value(value) or len(value) != 3:
            return None
        return (float(value[0]), float(value[1]), float(value[2]))

    # ------------------------------------------------------------------ positions

    def _check_positions(
        self, verdict: _Verdict, kinds: Mapping[str, str], observation: Observation | None
    ) -> None:
        args = verdict.arguments
        whole = [arg for arg, kind in kinds.items() if kind == "position"]
        parts = {kind[-1]: arg for arg, kind in kinds.items() if kind.startswith("position.")}
        ee = self._ee(observation)
        for arg in whole:
            value = args.get(arg)
            if value is None:
                continue
            if not _finite_value(value) or len(value) != 3:
                verdict.block(f"invalid_argument:{arg}: {value!r} is not a finite [x, y, z]")
                continue
            target = self._check_target(verdict, tuple(float(v) for v in value), ee, arg)
            if target is not None:
                args[arg] = [round(v, 6) for v in target]
        if parts:
            present = {axis: args.get(arg) for axis, arg in parts.items()}
            if any(v is not None and not _finite_value(v) for v in present.values()):
                verdict.block("invalid_argument: a target coordinate is not a finite number")
                return
            incomplete = any(v is None for v in present.values()) or len(parts) < 3
            if incomplete and ee is None:
                verdict.block("missing_reading:ee_position: needed to complete the target")
                return
            base = ee or (0.0, 0.0, 0.0)
            point = tuple(
                float(present[a]) if present.get(a) is not None else base[i]
                for i, a in enumerate("xyz")
            )
            target = self._check_target(verdict, point, ee, "target")  # type: ignore[arg-type]
            if target is not None:
                for i, axis in enumerate("xyz"):
                    if axis in parts and args.get(parts[axis]) is not None:
                        args[parts[axis]] = round(target[i], 6)

    def _check_target(
        self, verdict: _Verdict, target: Vec3, ee: Vec3 | None, label: str
    ) -> Vec3 | None:
        """Workspace (clamp a small overshoot, block beyond), keep-out zones (block), per-call
        step (shorten). Returns the admissible target, or None when blocked."""
        profile = self.profile
        base_pose = verdict.base_pose
        ws = profile.workspace
        local = profile.from_world(target, ws.frame, base_pose=base_pose)
        if not ws.contains(local):
            tolerance = profile.safety.clamp_tolerance_m
            clamped_local = ws.clamp(local)
            overshoot = math.dist(local, clamped_local)
            if overshoot > tolerance:
                verdict.block(
                    f"workspace_bounds: {label} {_xyz(target)} is {overshoot:.3f} m outside the "
                    f"reachable workspace ({ws.frame} frame: {ws.span()})"
                )
                return None
            clamped = profile.to_world(clamped_local, ws.frame, base_pose=base_pose)
            verdict.clamp(
                f"workspace_bounds: {label} {_xyz(target)} clamped to {_xyz(clamped)} "
                f"({overshoot:.3f} m onto the workspace edge)"
            )
            target = clamped
        for zone in profile.keep_out:
            start_local = (
                profile.from_world(ee, zone.frame, base_pose=base_pose) if ee is not None else None
            )
            end_local = profile.from_world(target, zone.frame, base_pose=base_pose)
            if zone.contains(end_local):
                verdict.block(f"keep_out:{zone.name}: {label} {_xyz(target)} is inside the zone")
                return None
            if start_local is not None and segment_hits_box(start_local, end_local, zone):
                verdict.block(
                    f"keep_out:{zone.name}: the straight path from {_xyz(ee)} to {_xyz(target)} "  # type: ignore[arg-type]
                    "crosses the zone; go around it in two motions"
                )
                return None
        if ee is not None:
            distance = math.dist(ee, target)
            limit = profile.limits.max_step_m
            if distance > limit:
                scale = limit / distance
                shortened = tuple(e + (t - e) * scale for e, t in zip(ee, target, strict=True))
                verdict.clamp(
                    f"step_limit: {label} is {distance:.3f} m away (max {limit:.3f} m per "
                    f"motion); shortened to {_xyz(shortened)}"  # type: ignore[arg-type]
                )
                target = shortened  # type: ignore[assignment]
        return target

    def _check_refs(
        self, verdict: _Verdict, kinds: Mapping[str, str], observation: Observation | None
    ) -> None:
        profile = self.profile
        for arg, kind in kinds.items():
            if kind not in ("object_ref", "target_ref"):
                continue
            ref = verdict.arguments.get(arg)
            if ref is None:
                continue
            if self.locator is None:
                verdict.block(f"unlocatable:{arg}: no locator to check where {ref!r} is")
                continue
            info: ObjectInfo | None = self.locator.locate(str(ref))
            if info is None:
                verdict.block(f"unlocatable:{arg}: cannot tell where {ref!r} is")
                continue
            ws = profile.workspace
            base_pose = verdict.base_pose
            local = profile.from_world(info.position, ws.frame, base_pose=base_pose)
            # An object on a surface sits at the workspace floor; allow half its height.
            slack = profile.safety.clamp_tolerance_m + (info.size[2] / 2 if info.size else 0.0)
            if not ws.contains(local, slack):
                verdict.block(
                    f"workspace_bounds: {ref} at {_xyz(info.position)} is outside the reachable "
                    f"workspace ({ws.frame} frame: {ws.span()})"
                )
                continue
            for zone in profile.keep_out:
                if zone.contains(
                    profile.from_world(info.position, zone.frame, base_pose=base_pose)
                ):
                    verdict.block(f"keep_out:{zone.name}: {ref} is inside the zone")
            ee = self._ee(observation)
            if ee is not None and math.dist(ee, info.position) > profile.limits.max_step_m:
                verdict.block(
                    f"step_limit: {ref} is {math.dist(ee, info.position):.3f} m from the "
                    f"gripper (max {profile.limits.max_step_m:.3f} m per motion); move closer first"
                )
            heavy = info.mass_kg is not None and info.mass_kg > profile.limits.payload_kg
            if kind == "object_ref" and heavy:
                verdict.block(
                    f"payload_limit: {ref} weighs {info.mass_kg:g} kg "
                    f"(payload {profile.limits.payload_kg:g} kg)"
                )

    # ------------------------------------------------------------------ scalars

    def _check_scalars(self, verdict: _Verdict, kinds: Mapping[str, str]) -> None:
        limits = self.profile.limits
        gripper = self.profile.grippers[0] if self.profile.grippers else None
        bounds: dict[str, tuple[str, float | None]] = {
            "speed": ("speed_limit", limits.max_speed_m_s),
            "force": ("force_limit", limits.max_force_n),
            "width": ("gripper_width", gripper.max_opening_m if gripper else None),
        }
        for arg, kind in kinds.items():
            if kind not in bounds:
                continue
            value = verdict.arguments.get(arg)
            if value is None:
                continue
            label, limit = bounds[kind]
            if not _finite_value(value) or isinstance(value, (list, tuple)):
                verdict.block(f"invalid_argument:{arg}: {value!r} is not a finite number")
                continue
            if value < 0:
                verdict.block(f"{label}: {arg}={value!r} is negative")
                continue
            if kind == "width" and gripper is None:
                verdict.block(f"{label}: the profile declares no gripper")
                continue
            if limit is not None and value > limit:
                verdict.arguments[arg] = limit
                verdict.clamp(f"{label}: {arg} {value:g} clamped to {limit:g}")

    def _check_joints(
        self, verdict: _Verdict, kinds: Mapping[str, str], observation: Observation | None
    ) -> None:
        limits = self.profile.limits
        for arg, kind in kinds.items():
            if kind != "joints" or verdict.arguments.get(arg) is None:
                continue
            values = verdict.arguments[arg]
            if not _finite_value(values) or not isinstance(values, (list, tuple)):
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
                    verdict.block(
                        f"joint_limit:{index}: {value:.4f} rad is outside [{low:.4f}, {high:.4f}]"
                    )
            if verdict.blocks:
                continue
            current = reading(observation, "joint_positions")
            step = limits.max_joint_step_rad
            if step is not None:
                if current is None or not _finite_value(current) or len(current) < len(target):
                    verdict.block(
                        "missing_reading:joint_positions: needed for the joint step limit"
                    )
                    continue
                deltas = [t - float(c) for t, c in zip(target, current, strict=False)]
                largest = max(abs(d) for d in deltas) if deltas else 0.0
                if largest > step:
                    scale = step / largest
                    target = [float(c) + d * scale for c, d in zip(current, deltas, strict=False)]
                    verdict.clamp(
                        f"joint_step: largest joint move {largest:.3f} rad exceeds "
                        f"{step:.3f} rad per call; scaled down"
                    )
            verdict.arguments[arg] = [round(v, 6) for v in target]

    # ------------------------------------------------------------------ base motion

    def _check_base(
        self,
        verdict: _Verdict,
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
                if not _finite_value(value) or isinstance(value, (list, tuple)):
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
                verdict.arguments[arg] = round(sign * magnitude, 6)
            elif kind == "angle":
                if not _finite_value(value) or isinstance(value, (list, tuple)):
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
                verdict.arguments[arg] = round(angle, 6)
            elif kind == "navigation":
                clear = [d for d, c in clearance.items() if c - margin >= base.min_motion_m]
                if not clear:
                    verdict.block(
                        "no_clear_direction: every direction is within "
                        f"{margin + base.min_motion_m:.3f} m of an obstacle; navigation blocked"
                    )


def _blocked(violations: list[str]) -> SafetyDecision:
    return SafetyDecision(
        outcome="block",
        violations=violations,
        reason="; ".join(violations),
    )


def _finite_value(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_finite_value(v) for v in value)
    return False


def _xyz(point: Sequence[float]) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in point) + ")"


def segment_hits_box(start: Vec3, end: Vec3, box: Box) -> bool:
    """Whether the straight segment start->end passes through the box (slab method)."""
    t_low, t_high = 0.0, 1.0
    for axis in range(3):
        origin, delta = start[axis], end[axis] - start[axis]
        low, high = box.min[axis], box.max[axis]
        if abs(delta) < 1e-12:
            if origin < low or origin > high:
                return False
            continue
        t1, t2 = (low - origin) / delta, (high - origin) / delta
        if t1 > t2:
            t1, t2 = t2, t1
        t_low, t_high = max(t_low, t1), min(t_high, t2)
        if t_low > t_high:
            return False
    return True
