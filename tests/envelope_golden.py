"""Seeded envelope decisions: the record the envelope's refactors are held to.

``decisions()`` draws calls of every safety kind (targets on, near and beyond the workspace
and keep-out zones, non-finite and missing values, refs of objects near the edges, joint
targets past their limits, base moves against tight clearances, driver motion
descriptions that go anywhere, fail or say nothing, custom rules that clamp or block) from
random start states (the gripper in a zone's margin, outside the workspace, stale and
missing readings) on the tabletop, LIBERO and mobile profiles, and asks
:class:`~embodiment.envelope.SafetyEnvelope` for each decision. The draws depend only on
the seed and the profiles, never on the envelope, so the same calls are asked of every
version of it.

``tests/fixtures/envelope_golden.jsonl.gz`` holds the decisions of the envelope as it was
before it became a list of rule objects (recorded with
``python -m tests.envelope_golden --write``); ``tests/embodiment/test_envelope_golden.py`` checks
that
today's envelope gives the same outcome, arguments, violations and reason for every call.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from embodiment.envelope import RuleOutcome, SafetyEnvelope, SafetyRequest
from embodiment.profile import EmbodimentProfile, load_profile
from embodiment.types import Motion, ObjectInfo, Observation

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "envelope_golden.jsonl.gz"
NOW = 1_000_000.0
CALLS_PER_PROFILE = 1500
SEED = 39

TOOLS: dict[str, dict[str, str] | None] = {
    "move_to": {"target": "position", "speed": "speed"},
    "move_xyz": {"x": "position.x", "y": "position.y", "z": "position.z"},
    "move_z": {"z": "position.z"},
    "pick": {"ref": "object_ref", "force": "force"},
    "place": {"target": "target_ref"},
    "carry": {"ref": "object_ref", "target": "target_ref", "speed": "speed"},
    "open": {"width": "width"},
    "grip": {"width": "width", "force": "force"},
    "joints": {"joints": "joints", "speed": "speed"},
    "drive": {"distance": "distance", "direction": "direction"},
    "drive_signed": {"distance": "distance"},
    "turn": {"angle": "angle"},
    "go_to": {"goal": "navigation"},
    "say": {"text": "free"},
    "home": {},
    "beep": {},
    "undeclared": None,
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "move_to": {"properties": {"target": {}, "speed": {"default": 0.3}}},
    "move_xyz": {"properties": {"x": {}, "y": {}, "z": {"default": 0.9}}},
    "pick": {"properties": {"ref": {}, "force": {"default": 20.0}}},
    "grip": {"properties": {"width": {"default": 0.2}, "force": {}}},
    "joints": {"properties": {"joints": {}, "speed": {"default": None}}},
    "drive": {"properties": {"distance": {}, "direction": {"default": "forward"}}},
}
PROFILES = {
    "tabletop": "panda_tabletop",
    "libero": str(ROOT / "worlds" / "libero" / "panda_libero.yaml"),
    "mobile": str(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml"),
}


class Objects:
    """A locator over a fixed table of objects (refs it does not know are None)."""

    def __init__(self, table: Mapping[str, ObjectInfo]) -> None:
        self.table = dict(table)

    def locate(self, ref: str) -> ObjectInfo | None:
        return self.table.get(ref)


class ClampRule:
    """Moves a position target 1 cm down, or sets a speed (a custom clamp)."""

    name = "lower"

    def __call__(self, request: SafetyRequest) -> RuleOutcome | None:
        arguments = dict(request.arguments)
        for arg, kind in request.kinds.items():
            value = arguments.get(arg)
            if kind == "position" and isinstance(value, list) and len(value) == 3:
                arguments[arg] = [value[0], value[1], float(value[2]) - 0.01]
                return RuleOutcome("clamp", "one centimetre lower", arguments)
            if kind == "speed" and value is not None:
                arguments[arg] = 0.05
                return RuleOutcome("clamp", "slow", arguments)
        return None


class BlockRule:
    """Blocks any call whose x is beyond 0.6 (a custom block), or a clamp with no arguments."""

    name = "fence"

    def __call__(self, request: SafetyRequest) -> RuleOutcome | None:
        for arg, kind in request.kinds.items():
            value = request.arguments.get(arg)
            if kind == "position" and isinstance(value, list) and value and value[0] > 0.6:
                return RuleOutcome("block", "beyond the fence")
            if kind == "width":
                return RuleOutcome("clamp", "forgot the arguments")
        return None


POSE: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)]
"""The base pose of the call being drawn (mobile profiles): targets are drawn around it."""


def _box(profile: EmbodimentProfile) -> tuple[list[float], list[float]]:
    """The workspace's bounds in the world frame at the drawn base pose (for drawing)."""
    ws = profile.workspace
    corners = [
        profile.to_world((x, y, z), ws.frame, base_pose=POSE[0])
        for x in (ws.min[0], ws.max[0])
        for y in (ws.min[1], ws.max[1])
        for z in (ws.min[2], ws.max[2])
    ]
    return (
        [min(c[i] for c in corners) for i in range(3)],
        [max(c[i] for c in corners) for i in range(3)],
    )


def _number(rng: random.Random, low: float, high: float) -> Any:
    roll = rng.random()
    if roll < 0.03:
        return rng.choice([math.nan, math.inf, -math.inf, None, "fast", True, [1.0]])
    if roll < 0.08:
        return rng.choice([0.0, -0.1, low, high, high * 1.0001, high * 10])
    return round(rng.uniform(low - (high - low) * 0.3, high + (high - low) * 0.6), 4)


def _point(rng: random.Random, low: list[float], high: list[float]) -> list[float]:
    spread = [(h - lo) * 0.12 for lo, h in zip(low, high, strict=True)]
    return [
        round(rng.uniform(lo - s, h + s), 4) for lo, h, s in zip(low, high, spread, strict=True)
    ]


def _near_zone(rng: random.Random, profile: EmbodimentProfile) -> list[float] | None:
    if not profile.keep_out:
        return None
    zone = rng.choice(profile.keep_out)
    local = [rng.uniform(lo - 0.06, hi + 0.06) for lo, hi in zip(zone.min, zone.max, strict=True)]
    point = profile.to_world(tuple(local), zone.frame, base_pose=POSE[0])  # type: ignore[arg-type]
    return [round(v, 4) for v in point]


def _target(rng: random.Random, profile: EmbodimentProfile, ee: list[float]) -> Any:
    low, high = _box(profile)
    roll = rng.random()
    if roll < 0.04:
        return rng.choice([[math.nan, 0.0, 1.0], [0.5, 0.1], "here", [0.5, 0.1, None]])
    if roll < 0.2:
        return _near_zone(rng, profile) or _point(rng, low, high)
    if roll < 0.65:
        return [round(e + rng.uniform(-0.15, 0.15), 4) for e in ee]
    return _point(rng, low, high)


def _ee(rng: random.Random, profile: EmbodimentProfile) -> Any:
    low, high = _box(profile)
    roll = rng.random()
    if roll < 0.03:
        return rng.choice([None, [math.nan, 0.0, 1.0], [0.4, 0.0]])
    if roll < 0.15:
        return _near_zone(rng, profile) or _point(rng, low, high)
    if roll < 0.25:
        return _point(rng, [v - 0.3 for v in low], [v + 0.3 for v in high])
    inner = [lo + (h - lo) * 0.15 for lo, h in zip(low, high, strict=True)]
    outer = [h - (h - lo) * 0.15 for lo, h in zip(low, high, strict=True)]
    return [round(rng.uniform(a, b), 4) for a, b in zip(inner, outer, strict=True)]


def _joint_values(rng: random.Random, profile: EmbodimentProfile, spread: float) -> list[float]:
    limits = profile.limits.joint_limits or [(-3.0, 3.0)] * 6
    return [round(rng.uniform(lo - spread, hi + spread), 4) for lo, hi in limits]


def _objects(rng: random.Random, profile: EmbodimentProfile) -> dict[str, ObjectInfo]:
    low, high = _box(profile)
    table: dict[str, ObjectInfo] = {}
    for index in range(5):
        point = _point(rng, low, high)
        if rng.random() < 0.3:
            point[2] = round(low[2] + rng.uniform(-0.06, 0.04), 4)
        if rng.random() < 0.15:
            point = _near_zone(rng, profile) or point
        size = None if rng.random() < 0.2 else (0.04, 0.04, round(rng.uniform(0.01, 0.2), 3))
        mass = None if rng.random() < 0.3 else round(rng.uniform(0.05, 6.0), 3)
        table[f"thing_{index}"] = ObjectInfo(position=tuple(point), size=size, mass_kg=mass)  # type: ignore[arg-type]
    return table


def _observation(rng: random.Random, profile: EmbodimentProfile) -> tuple[Observation | None, Any]:
    if rng.random() < 0.01:
        return None, None
    ee = _ee(rng, profile)
    state: dict[str, Any] = {}
    if ee is not None:
        state["ee_position"] = ee
    if rng.random() > 0.03:
        spread = 0.1 if rng.random() < 0.2 else -0.2
        state["joint_positions"] = _joint_values(rng, profile, spread)
    safety: dict[str, float | None] = {}
    if profile.mobile:
        x, y = round(rng.uniform(-2.5, 1.0), 3), round(rng.uniform(-1.0, 2.5), 3)
        state["base_pose"] = [x, y, round(rng.uniform(-math.pi, math.pi), 3)]
        POSE[0] = tuple(state["base_pose"])  # type: ignore[assignment]
        for key in profile.base.clearance_readings.values():
            roll = rng.random()
            if roll < 0.03:
                safety[key] = rng.choice([None, math.nan, -0.1])
            else:
                safety[key] = round(rng.uniform(0.0, 1.5), 3)
        if ee is not None and rng.random() < 0.7:
            # The gripper rides the base: its reading near the base's own place.
            local = _point(rng, list(profile.workspace.min), list(profile.workspace.max))
            world = profile.to_world(
                tuple(local),  # type: ignore[arg-type]
                profile.workspace.frame,
                base_pose=tuple(state["base_pose"]),  # type: ignore[arg-type]
            )
            state["ee_position"] = [round(v, 4) for v in world]
    age = rng.choice([0.0] * 8 + [1.0, profile.safety.max_reading_age_s + 5])
    return Observation(state=state, safety=safety, timestamp=NOW - age), state.get("ee_position")


def _finite_point(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and all(isinstance(v, float) and math.isfinite(v) for v in value)
    )


def _arguments(
    rng: random.Random, profile: EmbodimentProfile, kinds: Mapping[str, str], ee: Any
) -> dict[str, Any]:
    limits = profile.limits
    gripper = profile.grippers[0] if profile.grippers else None
    anchor = ee if _finite_point(ee) else [0.5, 0.0, 0.9]
    args: dict[str, Any] = {}
    for arg, kind in kinds.items():
        if rng.random() < 0.08:
            continue  # left out (a schema default, or missing)
        if kind == "position":
            args[arg] = _target(rng, profile, anchor)
        elif kind.startswith("position."):
            axis = "xyz".index(kind[-1])
            target = _target(rng, profile, anchor)
            args[arg] = target[axis] if isinstance(target, list) and len(target) == 3 else target
        elif kind == "object_ref" or kind == "target_ref":
            args[arg] = rng.choice(["thing_0", "thing_1", "thing_2", "thing_3", "thing_4"])
            if rng.random() < 0.05:
                args[arg] = rng.choice(["ghost", 7, None])
        elif kind == "speed":
            args[arg] = _number(rng, limits.min_speed_m_s, limits.max_speed_m_s)
        elif kind == "force":
            args[arg] = _number(rng, limits.min_force_n, limits.max_force_n)
        elif kind == "width":
            top = gripper.max_opening_m if gripper and gripper.max_opening_m else 0.08
            args[arg] = _number(rng, 0.0, top)
        elif kind == "joints":
            roll = rng.random()
            if roll < 0.05:
                args[arg] = rng.choice([[0.0, 1.0], "home", [math.nan] * 7])
            else:
                args[arg] = _joint_values(rng, profile, rng.choice([0.0, 0.04, 0.5]))
        elif kind == "distance":
            args[arg] = _number(rng, -0.5, (profile.base.max_step_m or 1.0))
        elif kind == "direction":
            args[arg] = rng.choice(["forward", "backward", "left", "right", "up"])
        elif kind == "angle":
            args[arg] = _number(rng, -(profile.base.max_turn_rad or 1.0), 1.5)
        elif kind == "navigation":
            args[arg] = rng.choice(["kitchen", "dock"])
        else:
            args[arg] = rng.choice(["hello", 3, None])
    if rng.random() < 0.03:
        args["extra"] = 1.0  # an argument the tool does not declare
    return args


def _motion(rng: random.Random, profile: EmbodimentProfile, ee: Any) -> Any:
    roll = rng.random()
    if roll < 0.55:
        return None
    low, high = _box(profile)
    anchor = ee if _finite_point(ee) else [0.5, 0.0, 0.9]
    if roll < 0.6:

        def fails(arguments: Mapping[str, Any]) -> Motion | None:
            raise RuntimeError("the driver lost its model")

        return fails
    if roll < 0.63:
        return lambda arguments: {"waypoints": []}
    if roll < 0.7:
        return lambda arguments: None
    if roll < 0.75:
        return lambda arguments: Motion(waypoints=[])
    waypoints = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.5:
            waypoints.append(tuple(round(a + rng.uniform(-0.2, 0.2), 4) for a in anchor))
        else:
            waypoints.append(tuple(_point(rng, low, high)))
    frozen = Motion(waypoints=waypoints)

    def described(arguments: Mapping[str, Any]) -> Motion:
        # Passes through the admitted target when there is one.
        target = arguments.get("target")
        if isinstance(target, list) and len(target) == 3:
            return Motion(waypoints=[*frozen.waypoints, tuple(float(v) for v in target)])
        return frozen

    return described


def _decision_record(decision: Any) -> dict[str, Any]:
    return {
        "outcome": decision.outcome,
        "arguments": decision.arguments,
        "violations": decision.violations,
        "reason": decision.reason,
    }


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True, default=repr)


def decisions(
    *, calls_per_profile: int = CALLS_PER_PROFILE, seed: int = SEED
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(the call as JSON, the decision) for every drawn call, in order."""
    for world, source in PROFILES.items():
        data = load_profile(source).model_dump()
        data["safety"]["no_argument_tools"] = ["beep"]
        profile = EmbodimentProfile.model_validate(data)
        rng = random.Random(f"{seed}:{world}")
        for index in range(calls_per_profile):
            tool = rng.choice(sorted(TOOLS))
            kinds = TOOLS[tool]
            POSE[0] = (0.0, 0.0, 0.0)
            observation, ee = _observation(rng, profile)
            objects = _objects(rng, profile)
            fresh = None
            if rng.random() < 0.8:
                fresh_observation, _ = _observation(rng, profile)
                if fresh_observation is not None:
                    fresh = fresh_observation.model_copy(update={"timestamp": NOW})
            arguments = _arguments(
                rng, profile, kinds if kinds is not None else {"a": "position"}, ee
            )
            schema = SCHEMAS.get(tool) if rng.random() < 0.7 else None
            motion = _motion(rng, profile, ee)
            rules: list[Any] = []
            if rng.random() < 0.15:
                rules.append(ClampRule())
            if rng.random() < 0.1:
                rules.append(BlockRule())
            rng.shuffle(rules)
            locator = Objects(objects) if rng.random() > 0.03 else None

            def observe(fresh: Observation | None = fresh) -> Observation:
                if fresh is None:
                    raise RuntimeError("camera unplugged")
                return fresh

            envelope = SafetyEnvelope(
                profile,
                locator=locator,
                observe=observe if rng.random() < 0.8 else None,
                rules=rules,
                clock=lambda: NOW,
            )
            decision = envelope.check_call(
                tool, arguments, kinds, observation, schema=schema, motion=motion
            )
            call = {
                "world": world,
                "index": index,
                "tool": tool,
                "arguments": arguments,
                "state": observation.state if observation else None,
            }
            yield dumps(call), _decision_record(decision)


def write(path: Path = GOLDEN) -> int:
    count = 0
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for call, decision in decisions():
            out.write(dumps({"call": call, "decision": decision}) + "\n")
            count += 1
    return count


def read(path: Path = GOLDEN) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"record {GOLDEN.name}")
    options = parser.parse_args()
    if options.write:
        print(f"{write()} decisions written to {GOLDEN}")
    else:
        outcomes: dict[str, int] = {}
        for _, decision in decisions():
            outcomes[decision["outcome"]] = outcomes.get(decision["outcome"], 0) + 1
        print(outcomes)


if __name__ == "__main__":
    main()
