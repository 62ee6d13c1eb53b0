"""The safety envelope: every physical call passes here before a driver sees it.

Each physical tool declares what every one of its arguments is (``Tool.safety`` /
``ActionSpec.safety``, vocabulary in :data:`embodiment.types.SAFETY_KINDS`; ``free`` for
an argument that cannot move hardware). The envelope checks the call against the profile
and the latest readings and answers:

- **allow**: the call is inside every limit;
- **clamp**: the arguments are rewritten into the envelope (a small workspace overshoot,
  a too-long step, a too-fast speed, a base move longer than the measured clearance minus
  the margin); both versions are recorded in the ``safety_check`` event. A clamped
  target is always inside the workspace and clear of every keep-out zone;
- **block**: an error result naming the violated limit reaches the model instead.

It checks the motion, not just its endpoint: a driver that implements
``describe_motion`` (:class:`~embodiment.types.MotionDescriber`) says which waypoints an
action will visit (the approach, descent, lift and transport of a pick or place), and
every segment of that path, starting from the gripper's reading, must stay inside the
workspace, keep the profile's margin from every keep-out zone and stay within one step of
where it starts. A tool whose driver cannot describe its motion is assumed to go
straight to its target, and to approach and leave an object or place from
``safety.approach_height_m`` above it. From a reading already outside the envelope only a
motion back in is allowed (straight out of a keep-out margin, into the workspace, joints
back within their limits).

It fails closed: no observation, a missing, stale or non-finite reading, an object it
cannot locate, an argument without a declared kind, a schema it cannot enumerate, a
motion description that fails, or an exception inside a check all block the motion.
Custom rules (:class:`SafetyRule`) run after the built-in checks and may clamp or block
further; whatever they return is checked again, so they can never loosen a decision.

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

from embodiment.declarations import declaration_problems
from embodiment.geometry import (
    box_box_distance,
    moves_away_from_box,
    point_box_distance,
    segment_box_distance,
)
from embodiment.geometry import segment_hits_box as _hits
from embodiment.profile import Box, EmbodimentProfile
from embodiment.types import (
    Locator,
    Motion,
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
MotionSource = Callable[[Mapping[str, Any]], Motion | None]
JOINT_TOLERANCE_RAD = 0.05
"""A joint target this close beyond its limit is clamped onto it; farther is blocked."""
EPSILON = 1e-9
"""Floating-point slack for comparisons of values the envelope computed itself."""
POSITION_KINDS = frozenset({"position", "position.x", "position.y", "position.z"})
REF_KINDS = ("object_ref", "target_ref")


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


def segment_hits_box(start: Vec3, end: Vec3, box: Box) -> bool:
    """Whether the straight segment start->end passes through the box."""
    return _hits(start, end, box.min, box.max)


@dataclass
class _Verdict:
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
        parameters, motion), read by duck typing so this package stays free of the harness.
        A tool that declares nothing has ``safety == {}`` and ``safety_declared`` False."""
        kinds = dict(getattr(tool, "safety", None) or {})
        declared = getattr(tool, "safety_declared", None)
        if declared is None:
            declared = bool(kinds)
        return self.check_call(
            tool.name,
            arguments,
            kinds if declared else None,
            observation,
            schema=getattr(tool, "parameters", None),
            motion=getattr(tool, "motion", None),
        )

    def check_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        kinds: Mapping[str, str] | None,
        observation: Observation | None,
        *,
        schema: Mapping[str, Any] | None = None,
        motion: MotionSource | None = None,
    ) -> SafetyDecision:
        """Check one call; never raises (an internal error blocks the call).

        ``kinds`` is the tool's declaration (None: it declares nothing; ``{}``: it takes no
        arguments); ``schema`` its input schema, so that arguments the call leaves out
        are declared too; ``motion`` describes the path the driver will execute for the
        (clamped) arguments, or returns None to get the conservative path.
        """
        try:
            decision = self._decide(
                name,
                dict(arguments),
                None if kinds is None else dict(kinds),
                observation,
                schema,
                motion,
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
        kinds: dict[str, str] | None,
        observation: Observation | None,
        schema: Mapping[str, Any] | None,
        motion: MotionSource | None,
    ) -> SafetyDecision:
        problems = declaration_problems(
            name,
            arguments,
            kinds,
            schema,
            listed_without_arguments=name in self.profile.safety.no_argument_tools,
        )
        if problems:
            return _blocked(problems)
        kinds = kinds or {}
        observation, problem = self._fresh(observation)
        if problem:
            return _blocked([problem])
        problems = self.reading_problems(observation, kinds)
        if problems:
            return _blocked(problems)

        verdict = self._builtin(name, arguments, kinds, observation, motion, schema)
        if not verdict.blocks:
            for rule in self.rules:
                request = SafetyRequest(
                    tool=name,
                    arguments=dict(verdict.arguments),
                    requested=dict(arguments),
                    kinds=kinds,
                    observation=observation,
                    profile=self.profile,
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
                # A rule's rewrite is a new call: it passes every built-in check again.
                again = self._builtin(
                    name, dict(outcome.arguments), kinds, observation, motion, schema
                )
                clamps = [*verdict.clamps, f"rule:{rule_name}: {outcome.violation}"]
                verdict = again
                verdict.clamps[:0] = clamps
                if verdict.blocks:
                    break

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

    def _builtin(
        self,
        name: str,
        arguments: dict[str, Any],
        kinds: Mapping[str, str],
        observation: Observation | None,
        motion: MotionSource | None,
        schema: Mapping[str, Any] | None,
    ) -> _Verdict:
        """Every built-in check, in order; the motion is described for the arguments as
        the earlier checks left them."""
        verdict = _Verdict(arguments=dict(arguments), schema=schema)
        verdict.base_pose = self._base_pose(observation)
        verdict.ee = self._ee(observation)
        self._check_positions(verdict, kinds)
        self._check_refs(verdict, kinds)
        self._check_scalars(verdict, kinds)
        self._check_joints(verdict, kinds, observation)
        self._check_base(verdict, name, kinds, observation)
        if not verdict.blocks:
            self._check_motion(verdict, name, motion)
        return verdict

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

    # ------------------------------------------------------------------ frames

    def _in_workspace(self, verdict: _Verdict, point: Vec3) -> bool:
        local = self.profile.from_world(
            point, self.profile.workspace.frame, base_pose=verdict.base_pose
        )
        return self.profile.workspace.contains(local)

    def _zone_local(self, verdict: _Verdict, point: Vec3, zone: Box) -> Vec3:
        return self.profile.from_world(point, zone.frame, base_pose=verdict.base_pose)

    def _zone_distance(self, verdict: _Verdict, point: Vec3, zone: Box) -> float:
        return point_box_distance(self._zone_local(verdict, point, zone), zone.min, zone.max)

    # ------------------------------------------------------------------ positions

    def _check_positions(self, verdict: _Verdict, kinds: Mapping[str, str]) -> None:
        args = verdict.arguments
        ee = verdict.ee
        whole = [arg for arg, kind in kinds.items() if kind == "position"]
        parts = {kind[-1]: arg for arg, kind in kinds.items() if kind.startswith("position.")}
        for arg in whole:
            value = args.get(arg)
            if value is None:
                continue
            if not _finite_value(value) or not isinstance(value, (list, tuple)) or len(value) != 3:
                verdict.block(f"invalid_argument:{arg}: {value!r} is not a finite [x, y, z]")
                continue
            target = self._check_target(verdict, tuple(float(v) for v in value), arg)  # type: ignore[arg-type]
            if target is not None:
                if target != tuple(value):
                    args[arg] = list(target)
                verdict.targets.append(target)
        if parts:
            # A coordinate left out takes the schema's default (the value the tool will
            # use); with none, or a null one, it stays where the gripper is.
            defaults = _schema_defaults(verdict.schema)
            present = {
                axis: args[arg] if arg in args else defaults.get(arg) for axis, arg in parts.items()
            }
            if all(v is None for v in present.values()):
                return
            if any(
                v is not None and (not _finite_value(v) or isinstance(v, (list, tuple)))
                for v in present.values()
            ):
                verdict.block("invalid_argument: a target coordinate is not a finite number")
                return
            if ee is None:
                verdict.block("missing_reading:ee_position: needed to check the path to the target")
                return
            point = tuple(
                float(present[a]) if present.get(a) is not None else ee[i]
                for i, a in enumerate("xyz")
            )
            target = self._check_target(verdict, point, "target")  # type: ignore[arg-type]
            if target is not None:
                for i, axis in enumerate("xyz"):
                    if target[i] == point[i]:
                        continue
                    if axis in parts:
                        args[parts[axis]] = target[i]  # clamped: now said explicitly
                    else:
                        # The tool has no argument for this axis (it stays where it is),
                        # but a clamp moved it: the driver cannot be told.
                        verdict.block(
                            f"step_limit: the tool cannot be given {axis}, so the target "
                            "cannot be brought into the envelope along the straight line"
                        )
                        return
                verdict.targets.append(target)

    def _check_target(self, verdict: _Verdict, target: Vec3, label: str) -> Vec3 | None:
        """Workspace (clamp a small overshoot, block beyond), keep-out zones with their
        margin (block), per-call step (shorten, never out of the workspace). Returns the
        admissible target, or None when blocked."""
        profile = self.profile
        base_pose = verdict.base_pose
        ee = verdict.ee
        if ee is None:
            verdict.block(f"missing_reading:ee_position: needed to check the path to {label}")
            return None
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
            clamped = self._onto_workspace(
                verdict, profile.to_world(clamped_local, ws.frame, base_pose=base_pose)
            )
            verdict.clamp(
                f"workspace_bounds: {label} {_xyz(target)} clamped to {_xyz(clamped)} "
                f"({overshoot:.3f} m onto the workspace edge)"
            )
            target = clamped
        margin = profile.safety.keep_out_margin_m
        for zone in profile.keep_out:
            gap = self._zone_distance(verdict, target, zone)
            if gap == 0:
                verdict.block(f"keep_out:{zone.name}: {label} {_xyz(target)} is inside the zone")
                return None
            if not _clear(gap, margin):
                verdict.block(
                    f"keep_out:{zone.name}: {label} {_xyz(target)} is {gap:.3f} m from the "
                    f"zone; keep {margin:.3f} m clear"
                )
                return None
        distance = math.dist(ee, target)
        limit = profile.limits.max_step_m
        if distance > limit:
            scale = limit / distance
            shortened = tuple(e + (t - e) * scale for e, t in zip(ee, target, strict=True))
            if not self._in_workspace(verdict, shortened):  # type: ignore[arg-type]
                shortened = self._onto_workspace(verdict, shortened)  # type: ignore[arg-type]
                if math.dist(ee, shortened) > limit + EPSILON or not self._in_workspace(
                    verdict, shortened
                ):
                    verdict.block(
                        f"step_limit: the gripper at {_xyz(ee)} is outside the workspace, and "
                        f"a {limit:.3f} m step toward {_xyz(target)} would end outside it too; "
                        f"send a target inside the workspace within {limit:.3f} m of the gripper"
                    )
                    return None
            verdict.clamp(
                f"step_limit: {label} is {distance:.3f} m away (max {limit:.3f} m per "
                f"motion); shortened to {_xyz(shortened)}"
            )
            target = shortened  # type: ignore[assignment]
        return target

    def _onto_workspace(self, verdict: _Verdict, point: Vec3) -> Vec3:
        """``point`` moved onto the workspace if a floating-point round trip through the
        workspace frame left it a hair outside (it never moves more than that)."""
        if self._in_workspace(verdict, point):
            return point
        profile, ws = self.profile, self.profile.workspace
        local = profile.from_world(point, ws.frame, base_pose=verdict.base_pose)
        inset = tuple(
            min(hi - EPSILON, max(lo + EPSILON, v))
            for v, lo, hi in zip(local, ws.min, ws.max, strict=True)
        )
        moved = profile.to_world(inset, ws.frame, base_pose=verdict.base_pose)  # type: ignore[arg-type]
        return moved if math.dist(moved, point) < 1e-6 else point

    # ------------------------------------------------------------------ refs

    def _check_refs(self, verdict: _Verdict, kinds: Mapping[str, str]) -> None:
        """Where each ref is: inside the workspace in x and y; in z its centre may sit
        below the workspace floor by at most half its height (an object resting on the
        support just below it), never deeper, and it must not be inside a keep-out zone
        or its margin. Objects to grasp must be within the payload."""
        profile = self.profile
        ws = profile.workspace
        margin = profile.safety.keep_out_margin_m
        for arg, kind in kinds.items():
            if kind not in REF_KINDS:
                continue
            ref = verdict.arguments.get(arg)
            if ref is None:
                continue
            if not isinstance(ref, str):
                verdict.block(f"invalid_argument:{arg}: {ref!r} is not a ref")
                continue
            if self.locator is None:
                verdict.block(f"unlocatable:{arg}: no locator to check where {ref!r} is")
                continue
            info: ObjectInfo | None = self.locator.locate(ref)
            if info is None:
                verdict.block(f"unlocatable:{arg}: cannot tell where {ref!r} is")
                continue
            position = tuple(float(v) for v in info.position)
            half = info.size[2] / 2 if info.size else 0.0
            local = profile.from_world(position, ws.frame, base_pose=verdict.base_pose)
            x_y_inside = all(
                lo <= v <= hi for v, lo, hi in zip(local[:2], ws.min[:2], ws.max[:2], strict=True)
            )
            floor, ceiling = ws.min[2], ws.max[2]
            tolerance = profile.safety.clamp_tolerance_m
            if kind == "object_ref":
                # Its centre is where the gripper goes; it may be just below the floor if
                # its top reaches into the workspace, and its bottom must be on a support.
                low, high = floor - half, ceiling
                problem = (
                    f"is below the workspace floor (z {floor:.3f}) by more than half its height"
                    if local[2] < low
                    else ""
                )
                if not problem and local[2] - half < floor - tolerance - EPSILON:
                    problem = (
                        f"has its bottom at z {local[2] - half:.3f}, more than {tolerance:.3f} m "
                        f"below the workspace floor ({floor:.3f}): it cannot be resting on a "
                        "surface there; look again"
                    )
                point = position
            else:
                # A destination: things are put on its top.
                top = local[2] + half
                low, high = floor - tolerance, ceiling
                problem = (
                    f"has its top at z {top:.3f}, outside the workspace's height "
                    f"({floor:.3f}..{ceiling:.3f})"
                    if not low - EPSILON <= top <= high
                    else ""
                )
                point = (position[0], position[1], position[2] + half)
            if not x_y_inside:
                problem = f"is outside the reachable workspace ({ws.frame} frame: {ws.span()})"
            elif kind == "object_ref" and local[2] > high:
                problem = f"is above the reachable workspace ({ws.frame} frame: {ws.span()})"
            if problem:
                verdict.block(f"workspace_bounds: {ref} at {_xyz(position)} {problem}")
                continue
            for zone in profile.keep_out:
                gap = self._zone_distance(verdict, position, zone)  # type: ignore[arg-type]
                if not _clear(gap, margin):
                    where = "inside the zone" if gap == 0 else f"{gap:.3f} m from the zone"
                    verdict.block(
                        f"keep_out:{zone.name}: {ref} is {where} (keep {margin:.3f} m clear)"
                    )
            heavy = info.mass_kg is not None and info.mass_kg > profile.limits.payload_kg
            if kind == "object_ref" and heavy:
                verdict.block(
                    f"payload_limit: {ref} weighs {info.mass_kg:g} kg "
                    f"(payload {profile.limits.payload_kg:g} kg)"
                )
            verdict.refs[arg] = (kind, point)  # type: ignore[assignment]

    # ------------------------------------------------------------------ the motion

    def _check_motion(self, verdict: _Verdict, name: str, motion: MotionSource | None) -> None:
        """Every segment of the path the call will execute: the driver's description for
        the admitted arguments, or, when it has none, the conservative assumptions: a
        position target is reached in a straight line, and a ref is approached within the
        box spanned by the gripper, the ref and ``approach_height_m`` above it."""
        if motion is not None:
            try:
                described = motion(dict(verdict.arguments))
            except Exception as exc:
                verdict.block(
                    f"motion_unknown: the driver could not describe {name}'s motion "
                    f"({type(exc).__name__}: {exc})"
                )
                return
            if described is not None:
                if not isinstance(described, Motion):
                    verdict.block(
                        f"motion_unknown: the driver described {name}'s motion as "
                        f"{type(described).__name__}, not a Motion"
                    )
                    return
                path = [tuple(float(v) for v in p) for p in described.waypoints]
                if path and self._started(verdict, name):
                    self._check_path(verdict, name, verdict.ee, path)  # type: ignore[arg-type]
                return
        if verdict.targets and self._started(verdict, name):
            self._check_path(verdict, name, verdict.ee, list(verdict.targets))  # type: ignore[arg-type]
        refs = list(verdict.refs.items())
        destinations = [(a, p) for a, (kind, p) in refs if kind == "target_ref"] or [
            (a, p) for a, (_, p) in refs
        ]
        for arg, (x, y, z) in destinations:
            if verdict.blocks or not self._started(verdict, name):
                return
            above = (x, y, z + self.profile.safety.approach_height_m)
            self._check_swept_box(verdict, name, str(verdict.arguments[arg]), [(x, y, z), above])

    def _started(self, verdict: _Verdict, name: str) -> bool:
        if verdict.ee is None:
            verdict.block(f"missing_reading:ee_position: needed to check {name}'s motion")
            return False
        return True

    def _check_swept_box(self, verdict: _Verdict, name: str, ref: str, points: list[Vec3]) -> None:
        """The box spanned by the gripper and ``points`` (world axes): inside the
        workspace, within one step of the gripper, and the margin clear of every zone."""
        start = verdict.ee
        assert start is not None
        corners_of = [start, *points]
        low = [min(p[i] for p in corners_of) for i in range(3)]
        high = [max(p[i] for p in corners_of) for i in range(3)]
        corners = [
            (x, y, z)
            for x in (low[0], high[0])
            for y in (low[1], high[1])
            for z in (low[2], high[2])
        ]
        profile = self.profile
        assumption = (
            f"{name} of {ref} without a motion description is assumed to stay between the "
            f"gripper, {ref} and {profile.safety.approach_height_m:.3f} m above it"
        )
        for corner in corners:
            if not self._in_workspace(verdict, corner):
                verdict.block(
                    f"workspace_bounds: {assumption}, which reaches {_xyz(corner)}, outside the "
                    f"reachable workspace ({profile.workspace.span()})"
                )
                return
        reach = max(math.dist(start, corner) for corner in corners)
        if reach > profile.limits.max_step_m + EPSILON:
            verdict.block(
                f"step_limit: {assumption}, which reaches {reach:.3f} m from the gripper (max "
                f"{profile.limits.max_step_m:.3f} m per motion); move closer first"
            )
            return
        margin = profile.safety.keep_out_margin_m
        for zone in profile.keep_out:
            local = [self._zone_local(verdict, corner, zone) for corner in corners]
            box_low = [min(p[i] for p in local) for i in range(3)]
            box_high = [max(p[i] for p in local) for i in range(3)]
            gap = box_box_distance(box_low, box_high, zone.min, zone.max)
            if not _clear(gap, margin):
                verdict.block(
                    f"keep_out:{zone.name}: {assumption}, which comes {gap:.3f} m from the zone "
                    f"(keep {margin:.3f} m clear); move clear of it first, or describe the motion"
                )
                return

    def _check_path(self, verdict: _Verdict, name: str, start: Vec3, path: list[Vec3]) -> None:
        profile = self.profile
        ws = profile.workspace
        limit = profile.limits.max_step_m
        margin = profile.safety.keep_out_margin_m
        previous = start
        for point in path:
            if not self._in_workspace(verdict, point):
                verdict.block(
                    f"workspace_bounds: {name}'s motion goes to {_xyz(point)}, outside the "
                    f"reachable workspace ({ws.frame} frame: {ws.span()})"
                )
                return
            if math.dist(start, point) > limit + EPSILON:
                verdict.block(
                    f"step_limit: {name}'s motion reaches {_xyz(point)}, "
                    f"{math.dist(start, point):.3f} m from the gripper (max {limit:.3f} m per "
                    "motion); move closer first"
                )
                return
            for zone in profile.keep_out:
                problem = self._segment_problem(verdict, previous, point, zone, margin)
                if problem:
                    verdict.block(f"keep_out:{zone.name}: {name}'s motion {problem}")
                    return
            previous = point

    def _segment_problem(
        self, verdict: _Verdict, start: Vec3, end: Vec3, zone: Box, margin: float
    ) -> str:
        a = self._zone_local(verdict, start, zone)
        b = self._zone_local(verdict, end, zone)
        if _clear(point_box_distance(a, zone.min, zone.max), margin):
            gap = segment_box_distance(a, b, zone.min, zone.max)
            if _clear(gap, margin):
                return ""
            if _hits(a, b, zone.min, zone.max):
                return (
                    f"from {_xyz(start)} to {_xyz(end)}: the straight path crosses the zone; "
                    "go around it in two motions"
                )
            return (
                f"from {_xyz(start)} to {_xyz(end)} passes {gap:.3f} m from the zone "
                f"(keep {margin:.3f} m clear); go around it"
            )
        # The reading is already inside the zone or its margin: only straight out.
        if moves_away_from_box(a, b, zone.min, zone.max) and _clear(
            point_box_distance(b, zone.min, zone.max), margin
        ):
            return ""
        return (
            f"starts at {_xyz(start)}, inside the zone or within {margin:.3f} m of it; only a "
            f"motion straight away from it that ends {margin:.3f} m clear is allowed"
        )

    # ------------------------------------------------------------------ scalars

    def _check_scalars(self, verdict: _Verdict, kinds: Mapping[str, str]) -> None:
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
            if not _finite_value(value) or isinstance(value, (list, tuple)):
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
                if current is None or not _finite_value(current) or len(current) != len(target):
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
        self, verdict: _Verdict, target: list[float], current: list[float], step: float
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
                verdict.arguments[arg] = sign * magnitude
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
                verdict.arguments[arg] = angle
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


def _schema_defaults(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    properties = (schema or {}).get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    return {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and "default" in spec
    }


def _clear(gap: float, margin: float) -> bool:
    """Far enough from a keep-out zone: at least the margin, and never touching it."""
    return gap > 0 and gap >= margin


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
