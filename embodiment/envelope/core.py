"""The safety envelope's entry point: every physical call passes here before a driver sees it.

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
The built-in checks are an ordered list of rule objects (:func:`builtin_rules`, one per
family: arguments, positions, refs, scalars, joints, base, joint-space path, base sweep,
motion path), each built from the profile and testable alone. Custom rules
(:class:`SafetyRule`) run after them and may clamp or block further; whatever they return
is checked by the built-in rules again, so they can never loosen a decision.

These checks are orchestration safeguards for a language model's commands. They do not
replace the robot's own emergency stop, collision avoidance or actuator limits.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from embodiment.declarations import declaration_problems
from embodiment.envelope.arguments import CompleteArguments
from embodiment.envelope.audit import MotionCheck, motion_check
from embodiment.envelope.base import BaseLimits
from embodiment.envelope.common import Call, MotionSource, Verdict, blocked
from embodiment.envelope.frames import Frames
from embodiment.envelope.joints import JointLimits
from embodiment.envelope.jointspace import JointSpacePath
from embodiment.envelope.kinematics import KinematicModel
from embodiment.envelope.motion import MotionPath
from embodiment.envelope.paths import Paths
from embodiment.envelope.positions import PositionLimits
from embodiment.envelope.readings import Readings
from embodiment.envelope.refs import RefLimits
from embodiment.envelope.rules import EnvelopeRule, RuleOutcome, SafetyRequest, SafetyRule
from embodiment.envelope.scalars import ScalarLimits
from embodiment.envelope.sweep import BaseSweep
from embodiment.profile import EmbodimentProfile
from embodiment.types import Locator, Observation, SafetyDecision

__all__ = ["RuleOutcome", "SafetyEnvelope", "SafetyRequest", "SafetyRule", "builtin_rules"]


def builtin_rules(
    profile: EmbodimentProfile, *, locator: Locator | None = None
) -> list[EnvelopeRule]:
    """The built-in rules in the order they run: the arguments completed first (a block
    there ends the check), the limits of each kind of argument, then the paths (run only
    on a call nothing has blocked), the joint-space path and the base sweep before the
    motion path, which is described for the arguments as the earlier rules left them."""
    frames = Frames(profile)
    paths = Paths(profile, frames)
    return [
        CompleteArguments(profile),
        PositionLimits(profile, frames),
        RefLimits(profile, locator, frames),
        ScalarLimits(profile),
        JointLimits(profile),
        BaseLimits(profile),
        JointSpacePath(profile, paths),
        BaseSweep(profile, frames),
        MotionPath(profile, paths),
    ]


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
        self.readings = Readings(profile, clock=clock, observe=observe)
        self.builtin: tuple[EnvelopeRule, ...] = tuple(builtin_rules(profile, locator=locator))
        """The built-in rules, in order (fixed: a deployment adds rules, never removes)."""

    def add_rule(self, rule: SafetyRule) -> None:
        self.rules.append(rule)

    # ------------------------------------------------------------------ questions

    def required_readings(self, kinds: Mapping[str, str]) -> list[str]:
        """The readings a call with these kinds needs (``harness check`` lists them)."""
        return self.readings.required_readings(kinds)

    def reading_problems(
        self, observation: Observation | None, kinds: Mapping[str, str]
    ) -> list[str]:
        """What is missing or invalid among those readings in ``observation``."""
        return self.readings.reading_problems(observation, kinds)

    def kinematics(self) -> KinematicModel | None:
        """The profile's kinematic model (None: it has none); raises
        :class:`~embodiment.envelope.kinematics.KinematicsError` when it cannot be built."""
        return JointSpacePath(self.profile).kinematics()

    def motion_check(
        self, tool: str, kinds: Mapping[str, str] | None, *, describes_motion: bool
    ) -> MotionCheck:
        """How a call of ``tool`` is checked (:func:`~embodiment.envelope.audit.motion_check`)."""
        return motion_check(self.profile, tool, kinds, describes_motion=describes_motion)

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
            return blocked(problems)
        kinds = kinds or {}
        observation, problem = self.readings.fresh(observation)
        if problem:
            return blocked([problem])
        problems = self.readings.reading_problems(observation, kinds)
        if problems:
            return blocked(problems)

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

        defaults = ", ".join(f"{a}={verdict.arguments.get(a)!r}" for a in verdict.filled)
        note = f" (left out, so checked at the tool's default: {defaults})" if defaults else ""
        if verdict.blocks:
            decision = blocked(verdict.blocks + verdict.clamps)
            return decision.model_copy(update={"reason": decision.reason + note})
        if verdict.clamps:
            return SafetyDecision(
                outcome="clamp",
                arguments=verdict.arguments,
                violations=verdict.clamps,
                reason="; ".join(verdict.clamps) + note,
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
    ) -> Verdict:
        """Every built-in rule, in order, on one verdict; the motion is described for the
        arguments as the earlier rules left them."""
        verdict = Verdict(arguments=dict(arguments), schema=schema)
        verdict.base_pose = self.readings.base_pose(observation)
        verdict.ee = self.readings.ee(observation)
        call = Call(name=name, kinds=kinds, observation=observation, motion=motion)
        for rule in self.builtin:
            if rule.needs_unblocked and verdict.blocks:
                continue
            rule.apply(call, verdict)
            if rule.ends_on_block and verdict.blocks:
                break
        return verdict
