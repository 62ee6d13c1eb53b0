"""Data that crosses the boundary between the harness and a robot (real or simulated).

These types deliberately import nothing from the harness: a driver author implements the
:class:`Driver` protocol with numpy and pydantic alone.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = [
    "SAFETY_KINDS",
    "ActionResult",
    "ActionSpec",
    "Driver",
    "Locator",
    "Motion",
    "MotionDescriber",
    "ObjectInfo",
    "Observation",
    "PostCondition",
    "PostConditionChecker",
    "SafetyDecision",
    "fill_post_condition",
    "reading",
    "validated_call",
]

SAFETY_KINDS: dict[str, str] = {
    "position": "a target position [x, y, z] in the world frame (metres)",
    "position.x": "the x component of a target position (world frame, metres); left out or "
    "null, the gripper keeps its x (or takes the schema's default)",
    "position.y": "the y component of a target position (world frame, metres), likewise",
    "position.z": "the z component of a target position (world frame, metres), likewise",
    "object_ref": "an object to grasp or carry, by scene ref (position and payload checked)",
    "target_ref": "a destination object or place, by scene ref (its position is checked)",
    "distance": "a base translation distance (metres) along the `direction` argument",
    "direction": "the direction of a base translation: forward, backward, left or right",
    "angle": "a base rotation (radians)",
    "navigation": "a navigation goal; blocked when no direction around the base is clear",
    "speed": "a speed (metres per second)",
    "force": "a force (newtons)",
    "joints": "a list of joint positions (radians), one per arm joint",
    "width": "a gripper opening (metres)",
    "free": "an argument that cannot move hardware (a label, a mode name); passed unchecked, "
    "but only as a plain value (text, number, true/false), never a list or an object",
}
"""The vocabulary of ``Tool.safety``/``ActionSpec.safety``: argument name -> kind.

The safety envelope (:mod:`embodiment.envelope`) interprets each kind; an argument with an
unknown kind is a declaration error, caught when the tool is generated. Every argument of a
physical tool needs a kind: an argument without one blocks the call (``free`` is the
explicit way to say "this one cannot move anything").
"""


class Observation(BaseModel):
    """One snapshot of what the robot senses.

    ``images`` maps a camera name (as declared in the profile) to an HxWx3 uint8 frame;
    ``state`` is JSON-able robot state (joint positions, end-effector pose, gripper);
    ``safety`` holds the readings the safety envelope needs (e.g. ``clearance_m.front``).
    A reading that is missing or None makes the envelope fail closed.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    timestamp: float = Field(default_factory=time.time)
    images: dict[str, np.ndarray] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    safety: dict[str, float | None] = Field(default_factory=dict)


def reading(observation: Observation | None, name: str) -> Any:
    """A named reading from ``observation.safety`` or else ``observation.state``.

    Dotted names index into mappings (``clearance.forward`` reads
    ``safety["clearance.forward"]`` or ``state["clearance"]["forward"]``). Returns None
    when the reading is absent, so callers can fail closed.
    """
    if observation is None:
        return None
    if name in observation.safety:
        return observation.safety[name]
    if name in observation.state:
        return observation.state[name]
    node: Any = observation.state
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


class ActionResult(BaseModel):
    """What a driver actually did with an action (after clamping, or a partial motion).

    ``ok`` says the action was carried out (the motion ran to its end); it is not the
    verdict on the task-level outcome (a grasp that closed on nothing is ``ok`` and the
    evaluator reports the failure). ``data`` may hold ``images`` (camera name -> HxWx3
    uint8 frame) and other JSON-able facts for the model.
    """

    model_config = ConfigDict(frozen=True)

    ok: bool
    message: str = ""
    applied: dict[str, Any] = Field(default_factory=dict)
    interrupted: bool = False
    data: dict[str, Any] = Field(default_factory=dict)


class SafetyDecision(BaseModel):
    """The safety envelope's verdict on one physical tool call.

    ``arguments`` are the arguments the driver may see: for ``allow`` the call's own, plus
    any schema default the envelope filled in for an argument the call left out (checked
    like the rest); rewritten for ``clamp``; irrelevant for ``block``.
    """

    model_config = ConfigDict(frozen=True)

    outcome: Literal["allow", "clamp", "block"]
    arguments: dict[str, Any] = Field(default_factory=dict)
    violations: list[str] = Field(default_factory=list)
    reason: str = ""


@runtime_checkable
class Driver(Protocol):
    """A robot or simulator the harness drives (LeRobot-like).

    ``execute`` returns what was actually applied. ``stop`` may be called from another
    thread at any time and must bring a motion in flight to a halt promptly; the next
    ``execute`` starts a new motion. ``capabilities`` lists the actions ``execute``
    accepts, with typed arguments and safety declarations.

    Optional extensions, used when present: ``locate(ref) -> ObjectInfo | None``
    (:class:`Locator`, lets the safety envelope check ref targets),
    ``describe_motion(action, arguments) -> Motion | None`` (:class:`MotionDescriber`,
    lets it check every segment of the path an action will take), ``perception() ->
    scene.Perception`` (ground truth or a detector for the scene graph) and
    ``post_conditions() -> PostConditionChecker`` (programmatic evaluation) and, for
    physical hardware, ``hardware_identity() -> str | None`` (which robot it drives; a
    lease on it is taken before ``connect``, see :mod:`embodiment.lease`).
    """

    def connect(self) -> None: ...

    def observe(self) -> Observation: ...

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult: ...

    def stop(self) -> None: ...

    def disconnect(self) -> None: ...

    def capabilities(self) -> list[ActionSpec]:
        """The actions ``execute`` accepts; physical tools are generated from them."""
        ...


_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class ActionSpec(BaseModel):
    """One action a driver offers, declared once: the harness turns it into a tool.

    ``arguments`` is a pydantic model (its JSON Schema is what the model sees);
    ``safety`` says what each argument is for the safety envelope (see
    :data:`SAFETY_KINDS`): a physical action declares every one of its arguments, and an
    action without arguments declares ``safety={}``; ``post_condition`` is the outcome the
    evaluator checks, with ``{argument}`` placeholders (e.g. "the gripper holds {ref},
    lifted off its support"). ``physical`` is False for actions that move nothing (e.g.
    taking a picture).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    name: str
    description: str = Field(min_length=1)
    arguments: type[BaseModel]
    physical: bool = True
    safety: dict[str, str] | None = None
    timeout_s: float | None = Field(None, gt=0)
    post_condition: str = ""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"action name {value!r} must be snake_case (a-z, 0-9, _)")
        return value

    @model_validator(mode="after")
    def _safety_matches_arguments(self) -> ActionSpec:
        fields = self.arguments.model_fields
        for argument, kind in (self.safety or {}).items():
            if argument not in fields:
                raise ValueError(
                    f"safety: {argument!r} is not an argument of {self.name} "
                    f"(arguments: {', '.join(fields) or 'none'})"
                )
            if kind not in SAFETY_KINDS:
                raise ValueError(
                    f"safety.{argument}: unknown kind {kind!r}; expected one of "
                    + ", ".join(SAFETY_KINDS)
                )
        if not self.physical:
            return self
        if fields and not self.safety:
            raise ValueError(
                f"{self.name} moves hardware and takes arguments but declares no safety "
                "kinds; say which arguments are positions, distances, speeds or joints"
            )
        if self.safety is None:
            raise ValueError(
                f"{self.name} moves hardware: declare safety={{}} to say it takes no arguments"
            )
        undeclared = [name for name in fields if name not in self.safety]
        if undeclared:
            raise ValueError(
                f"{self.name} moves hardware but declares no safety kind for "
                f"{', '.join(undeclared)}; give each argument a kind (`free` for one that "
                "cannot move anything, such as a label)"
            )
        return self

    def parse(self, arguments: Mapping[str, Any]) -> BaseModel | None:
        """The arguments validated by the action's model, or None when they are invalid
        (``execute`` refuses those without moving)."""
        try:
            return self.arguments.model_validate(dict(arguments))
        except ValidationError:
            return None

    def describe_post_condition(self, arguments: Mapping[str, Any]) -> str:
        """The post-condition with argument values filled in."""
        return fill_post_condition(self.post_condition, arguments)


def validated_call(
    specs: Mapping[str, ActionSpec], action: str, arguments: Mapping[str, Any]
) -> BaseModel | ActionResult:
    """What every driver's ``execute`` does first: the arguments of ``action`` validated by
    its model, or the refusal (an unknown action, invalid arguments) to return without
    moving anything."""
    spec = specs.get(action)
    if spec is None:
        return ActionResult(
            ok=False, message=f"unknown action {action!r}; known: {', '.join(specs)}"
        )
    try:
        return spec.arguments.model_validate(dict(arguments))
    except ValidationError as exc:
        return ActionResult(ok=False, message=f"invalid arguments for {action}: {exc}")


def fill_post_condition(template: str, arguments: Mapping[str, Any]) -> str:
    """``"{ref} is held"`` with ``ref="red_cube_1"`` -> ``"red_cube_1 is held"``; unknown
    placeholders stay as they are."""
    if not template:
        return ""
    try:
        return template.format_map(_Defaulting(arguments))
    except (ValueError, IndexError):
        return template


class _Defaulting(dict[str, Any]):
    def __init__(self, values: Mapping[str, Any]) -> None:
        super().__init__(values)

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class ObjectInfo(BaseModel):
    """Where an object is, as far as the safety envelope needs to know."""

    model_config = ConfigDict(frozen=True)

    position: tuple[float, float, float]
    size: tuple[float, float, float] | None = None
    mass_kg: float | None = None

    @field_validator("position")
    @classmethod
    def _finite(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if not all(math.isfinite(v) for v in value):
            raise ValueError(f"position {value} is not finite")
        return value


class Motion(BaseModel):
    """The end-effector path an action will execute, as its driver describes it.

    ``waypoints`` are the points the end effector is sent to, in order, along straight
    lines, in the world frame; the path starts wherever the end effector is when the
    action begins (the envelope's ``ee_position`` reading), which is not repeated here. An
    empty list says the action does not move the end effector (a gripper opening, a
    refusal). A driver that samples a curved path (a joint-space motion) lists enough
    samples that the chords stay within the profile's keep-out margin of the curve.
    """

    model_config = ConfigDict(frozen=True)

    waypoints: list[tuple[float, float, float]] = Field(default_factory=list)
    description: str = ""
    refused: str | None = None
    """Why ``execute`` would refuse these arguments now without moving (None: it would
    run). The envelope still checks the conservative path of a refused call (a driver's
    word is not a proof that nothing moves); when that check blocks, the block carries
    this reason too, so the model reads why the driver cannot do it, not only a box."""

    @field_validator("waypoints")
    @classmethod
    def _finite(cls, value: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
        for point in value:
            if not all(math.isfinite(v) for v in point):
                raise ValueError(f"waypoint {point} is not finite")
        return value


@runtime_checkable
class MotionDescriber(Protocol):
    """A driver that can say, before it moves, the path an action will take.

    ``describe_motion(action, arguments)`` returns the :class:`Motion` that ``execute``
    would run now for these (already validated and clamped) arguments, or None when it
    cannot tell; the safety envelope then assumes a conservative path (straight to the
    target, approaching refs from above). It must not move anything.
    """

    def describe_motion(self, action: str, arguments: Mapping[str, Any]) -> Motion | None: ...


@runtime_checkable
class Locator(Protocol):
    """Resolves an object reference to a position (drivers that know their objects)."""

    def locate(self, ref: str) -> ObjectInfo | None: ...


class PostCondition(BaseModel):
    """A programmatic post-condition's verdict: what the evaluator reports."""

    model_config = ConfigDict(frozen=True)

    status: Literal["success", "failure", "process"]
    evidence: str


@runtime_checkable
class PostConditionChecker(Protocol):
    """Checks an action's outcome against ground truth (simulators provide one)."""

    def check(
        self, action: str, arguments: Mapping[str, Any], result: Mapping[str, Any] | None
    ) -> PostCondition | None:
        """None when the action has no programmatic post-condition."""
        ...
