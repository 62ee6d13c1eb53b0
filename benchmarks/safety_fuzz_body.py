"""Attack the envelope with what the robot will really do (issue 25), and count.

    python -m benchmarks.safety_fuzz_body [--calls 20000] [--seed 0] [--classes ...]

Four classes, each through the real loop (``Harness.run_stream`` with a ScriptedModel)
except ``profiles``, each judged by an oracle that shares nothing with the envelope
(:mod:`benchmarks.lib.safety_oracle`, :mod:`benchmarks.lib.oracle_kinematics`: its own frames,
geometry and numpy forward kinematics parsed from the URDF):

- ``defaults``: ``@tool(physical=True)`` functions whose Python defaults are unsafe (a
  speed of 1.5 m/s, a target in the base zone, all-zero joints, a 0.15 m / 140 N grip)
  or safe, called with arguments left out at random; the arm records the values the
  function really used.
- ``joints``: ``move_joints`` on the Panda (kinematic fake whose gripper goes where the
  URDF puts it) from random joint states, to targets inside and around the limits; the
  oracle follows the joint-space line through its own FK (200 samples).
- ``base``: ``move_base`` / ``rotate_base`` of the mobile manipulator (xArm 6) from random
  base poses and arm poses next to a counter and the dock; the oracle sweeps the gripper
  along the line or arc the base really drove.
- ``profiles``: random profiles with infinite, NaN or null values at random limit keys;
  an escape is one that loads (or fails without naming the key).

Prints, per class: calls tried, allowed, clamped, blocked, executed and escaped.
``tests/embodiment/test_safety_fuzz_body.py`` runs a bounded version of each class.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.lib.fuzz_arms import RecordingArm  # noqa: E402
from benchmarks.lib.fuzz_campaign import (  # noqa: E402
    Tally,
    campaign_config,
    generate_calls,
    tally_events,
)
from benchmarks.lib.oracle_kinematics import (  # noqa: E402
    UrdfChain,
    base_sweep_problems,
    joint_path_problems,
)
from benchmarks.lib.safety_oracle import Command, judge  # noqa: E402
from embodiment.envelope import SafetyEnvelope  # noqa: E402
from embodiment.profile import EmbodimentProfile, ProfileError, load_profile  # noqa: E402
from harness import Harness  # noqa: E402
from harness.providers import ScriptedModel, call, reply  # noqa: E402
from harness.tools import Tool, tool  # noqa: E402
from harness.world.physical import physical_tools  # noqa: E402

__all__ = ["CLASSES", "BodyCampaign", "body_scenarios"]

CLASSES = ("defaults", "joints", "base", "profiles")
COUNTER = {"name": "counter", "frame": "world", "min": [0.9, -1.0, 0.0], "max": [1.5, 1.0, 0.95]}


ARM: dict[str, Any] = {"profile": "panda_tabletop"}
"""The arm the ``joints`` class attacks (``--profile``)."""


@functools.cache
def panda() -> EmbodimentProfile:
    source = ARM["profile"]
    return source if isinstance(source, EmbodimentProfile) else load_profile(source)


def use_profile(source: str) -> None:
    """The ``joints`` class on ``source`` (a world's profile such as ``so101``, a path)."""
    from worlds.registry import load_profile as world_profile

    ARM["profile"] = world_profile(source)
    panda.cache_clear()
    chain.cache_clear()


@functools.cache
def mobile() -> EmbodimentProfile:
    data = load_profile(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml").model_dump()
    data["keep_out"].append(COUNTER)
    return load_profile(data)


@functools.cache
def chain(name: str) -> UrdfChain:
    return UrdfChain.from_profile(panda() if name == "panda" else mobile())


# ---------------------------------------------------------------------- the hardware


class BodyArm(RecordingArm):
    """The recording fake, also noting the base pose and joints around each command."""

    def __init__(self, profile: EmbodimentProfile, **options: Any) -> None:
        super().__init__(profile, **options)
        self.moves: list[tuple[Command, tuple[float, ...], tuple[float, ...], list[float]]] = []

    def execute(self, action: str, arguments: dict[str, Any]) -> Any:
        base_before = tuple(self.base_pose)
        result = super().execute(action, arguments)
        self.moves.append(
            (self.recorded[-1], base_before, tuple(self.base_pose), list(self.joints))
        )
        return result


def _default_tools(arm: BodyArm) -> list[Tool]:
    """Physical functions whose left-out arguments take their (safe or unsafe) defaults."""

    @tool(
        physical=True,
        safety={"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
    )
    def move_arm(x: float, y: float, z: float, speed: float = 1.5) -> str:
        """Move the gripper to x, y, z at a speed (default 1.5 m/s)."""
        return arm.execute("move_to", {"x": x, "y": y, "z": z, "speed": speed}).message

    @tool(physical=True, safety={"target": "position", "speed": "speed"})
    def move_point(target: list[float] = [0.0, 0.0, 0.7], speed: float = 0.2) -> str:  # noqa: B006
        """Move the gripper to target (default: over the base)."""
        x, y, z = target
        return arm.execute("move_to", {"x": x, "y": y, "z": z, "speed": speed}).message

    @tool(physical=True, safety={"joints": "joints"})
    def set_joints(joints: list[float] = [0.0] * 7) -> str:
        """Move the arm to joint positions (default all zero)."""
        return arm.execute("move_joints", {"joints": joints}).message

    @tool(physical=True, safety={"width": "width", "force": "force"})
    def grip(width: float = 0.15, force: float = 140.0) -> str:
        """Close the gripper to a width with a force (defaults 0.15 m, 140 N)."""
        arm.execute("open_gripper", {"width": width})
        return arm.execute("close_gripper", {"force": force}).message

    @tool(
        physical=True,
        safety={"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
    )
    def move_gently(x: float, y: float, z: float = 0.9, speed: float = 0.1) -> str:
        """Move to x, y, z (default height 0.9) slowly."""
        return arm.execute("move_to", {"x": x, "y": y, "z": z, "speed": speed}).message

    return [move_arm, move_point, set_joints, grip, move_gently]


DEFAULT_KINDS = {
    "move_to": {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
    "move_joints": {"joints": "joints"},
    "open_gripper": {"width": "width"},
    "close_gripper": {"force": "force"},
}


# ---------------------------------------------------------------------- generating calls


def _maybe(name: str, value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), value.map(lambda v: {name: v}))


def _defaults_calls() -> st.SearchStrategy[Any]:
    ws = panda().workspace
    coord = [st.floats(lo - 0.1, hi + 0.1) for lo, hi in zip(ws.min, ws.max, strict=True)]
    point = st.tuples(*coord).map(list)
    speed = st.sampled_from([0.0, 0.01, 0.3, 0.5, 0.9, 2.0])
    joints = st.lists(st.floats(-3.0, 3.0), min_size=7, max_size=7)

    def with_args(name: str, *parts: st.SearchStrategy[dict[str, Any]]) -> Any:
        return st.tuples(*parts).map(
            lambda ds: call(name, **{k: v for d in ds for k, v in d.items()})
        )

    xyz = [st.floats(lo, hi) for lo, hi in zip(ws.min, ws.max, strict=True)]
    return st.one_of(
        with_args(
            "move_arm",
            *(a.map(lambda v, n=n: {n: v}) for n, a in zip("xyz", coord, strict=True)),
            _maybe("speed", speed),
        ),
        with_args("move_point", _maybe("target", point), _maybe("speed", speed)),
        with_args("set_joints", _maybe("joints", joints)),
        with_args(
            "grip", _maybe("width", st.floats(0.0, 0.2)), _maybe("force", st.floats(0.5, 200))
        ),
        with_args(
            "move_gently",
            xyz[0].map(lambda v: {"x": v}),
            xyz[1].map(lambda v: {"y": v}),
            _maybe("z", coord[2]),
            _maybe("speed", speed),
        ),
    )


def _joint_target(profile: EmbodimentProfile) -> st.SearchStrategy[list[float]]:
    limits = profile.limits.joint_limits or []
    home = profile.kinematics.home or [0.0] * len(limits)  # type: ignore[union-attr]
    inside = st.tuples(*(st.floats(lo, hi) for lo, hi in limits)).map(list)
    near_home = st.tuples(*(st.floats(h - 0.7, h + 0.7) for h in home)).map(list)
    close = st.tuples(*(st.floats(h - 0.35, h + 0.35) for h in home)).map(list)
    edge = st.tuples(
        *(st.floats(lo - 0.06, lo + 0.2) | st.floats(hi - 0.2, hi + 0.06) for lo, hi in limits)
    ).map(list)
    return st.one_of(inside, near_home, close, close, close, edge)


def _base_calls() -> st.SearchStrategy[Any]:
    direction = st.sampled_from(["forward", "backward", "left", "right"])
    return st.one_of(
        st.builds(
            lambda d, m: call("move_base", direction=d, distance=m), direction, st.floats(0, 1.6)
        ),
        st.builds(lambda a: call("rotate_base", angle=a), st.floats(-3.2, 3.2)),
        st.builds(lambda j: call("move_joints", joints=j), _joint_target(mobile())),
    )


def body_scenarios(kind: str) -> st.SearchStrategy[Any]:
    """Random scenarios of one class: (start, calls) or, for profiles, a profile mapping."""
    if kind == "profiles":
        return _broken_profiles()
    if kind == "defaults":
        return st.tuples(st.none(), st.lists(_defaults_calls(), min_size=1, max_size=8))
    if kind == "joints":
        home = list(panda().kinematics.home or [])  # type: ignore[union-attr]
        start = st.one_of(st.just(home), _joint_target(panda())).map(lambda q: {"joints": q})
        calls = st.builds(lambda j: call("move_joints", joints=j), _joint_target(panda()))
        return st.tuples(start, st.lists(calls, min_size=1, max_size=8))
    start = st.fixed_dictionaries(
        {
            "joints": _joint_target(mobile()),
            "base": st.tuples(st.floats(-0.8, 0.6), st.floats(-0.6, 0.6), st.floats(-3.2, 3.2)),
        }
    )
    return st.tuples(start, st.lists(_base_calls(), min_size=1, max_size=8))


LIMIT_KEYS = [
    ("limits", "max_speed_m_s"),
    ("limits", "max_force_n"),
    ("limits", "max_step_m"),
    ("limits", "payload_kg"),
    ("limits", "max_joint_step_rad"),
    ("limits", "min_speed_m_s"),
    ("limits", "default_speed_m_s"),
    ("safety", "max_reading_age_s"),
    ("safety", "keep_out_margin_m"),
    ("safety", "clamp_tolerance_m"),
    ("safety", "approach_height_m"),
    ("base", "clearance_margin_m"),
    ("base", "max_step_m"),
    ("base", "max_turn_rad"),
    ("base", "min_motion_m"),
]


def _broken_profiles() -> st.SearchStrategy[Any]:
    bad = st.sampled_from([math.inf, -math.inf, math.nan, None, "inf", ".inf", 1e400])
    return st.tuples(st.sampled_from(["panda", "mobile"]), st.sampled_from(LIMIT_KEYS), bad)


# ---------------------------------------------------------------------- running


class BodyCampaign:
    """Runs one scenario of a class and judges what the hardware did."""

    def run(self, kind: str, scenario: Any) -> Tally:
        if kind == "profiles":
            return self._profile(*scenario)
        start, calls = scenario
        profile = mobile() if kind == "base" else panda()
        arm = BodyArm(profile, room=(-3.0, -3.0, 3.0, 3.0))
        if start is not None:
            if "base" in start:
                arm.base_pose = list(start["base"])
            arm.joints = list(start["joints"])
            arm._ee_from_joints()
        tools: list[Tool] = []
        parts: list[Tool] = []
        if kind == "defaults":
            tools = _default_tools(arm)
        else:
            parts = physical_tools(arm)
        harness = Harness(
            campaign_config(),
            model=ScriptedModel([*calls, reply("done")]),
            driver=arm,
            tools=tools,
            physical_tools=parts,
            safety=SafetyEnvelope(profile, locator=arm, observe=arm.observe),
        )
        with harness:
            events = list(harness.run_stream("fuzz"))
            physical = {t.name for t in harness.tools if t.physical}
        tally = tally_events(events, physical, tuple(calls))
        for command, base_before, base_after, joints_after in arm.moves:
            if kind == "defaults":
                command.kinds = DEFAULT_KINDS.get(command.tool)
            tally.executed += 1
            problems = judge(profile, command)
            if command.tool == "move_joints":
                problems += joint_path_problems(
                    profile,
                    chain("mobile" if kind == "base" else "panda"),
                    command.tool,
                    command.joints_before,
                    joints_after,
                    base_before if profile.mobile else None,
                )
            if command.tool in ("move_base", "rotate_base"):
                problems += base_sweep_problems(
                    profile, command.tool, command.ee_before, base_before, base_after
                )
            if problems:
                tally.escaped += 1
                tally.escapes.append("; ".join(problems))
        return tally

    def _profile(self, which: str, key: tuple[str, str], value: Any) -> Tally:
        data = (panda() if which == "panda" else mobile()).model_dump()
        section, name = key
        data[section] = {**data[section], name: value}
        tally = Tally(tried=1)
        try:
            load_profile(data)
        except ProfileError as exc:
            tally.blocked = 1
            if f"{section}.{name}" not in str(exc):
                tally.escaped = 1
                tally.escapes.append(f"{section}.{name}={value!r}: error does not name it: {exc}")
            return tally
        undeclared = value is None and (
            name == "default_speed_m_s"  # not a limit: the driver's choice, within the max
            or (section == "base" and which == "panda")  # a fixed base has no base limits
        )
        if undeclared:
            tally.allowed = 1
            return tally
        tally.allowed = tally.escaped = 1
        tally.escapes.append(f"{which}: {section}.{name}={value!r} loaded")
        return tally


def campaign(classes: list[str], calls: int, seed: int) -> dict[str, Tally]:
    results: dict[str, Tally] = {}
    runner = BodyCampaign()
    for kind in classes:
        tally = results.setdefault(kind, Tally())
        strategy = body_scenarios(kind)
        round_seed = seed * 1000 + CLASSES.index(kind)

        def run(scenario: Any, kind: str = kind, tally: Tally = tally) -> None:
            tally.add(runner.run(kind, scenario))

        while tally.tried < calls:
            per_example = 1 if kind == "profiles" else 4
            generate_calls(strategy, max(1, (calls - tally.tried) // per_example), round_seed, run)
            round_seed += 100_000
    return results


def render(results: dict[str, Tally], seconds: float) -> str:
    lines = [
        "| class | tried | allowed | clamped | blocked | executed | escaped |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, t in results.items():
        lines.append(
            f"| {kind} | {t.tried} | {t.allowed} | {t.clamped} | {t.blocked} | {t.executed} "
            f"| {t.escaped} |"
        )
    lines += ["", f"{seconds:.1f} s"]
    escapes = [e for t in results.values() for e in t.escapes]
    if escapes:
        lines += ["", f"first escapes ({len(escapes)}):", *(f"- {e[:300]}" for e in escapes[:10])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="calls to try per class")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--classes", default=",".join(CLASSES))
    parser.add_argument(
        "--profile", help="run the joints class on this arm profile (e.g. so101) instead"
    )
    args = parser.parse_args(argv)
    classes = [c.strip() for c in args.classes.split(",") if c.strip()]
    if args.profile:
        if args.classes != ",".join(CLASSES) and classes != ["joints"]:
            parser.error("--profile: only the joints class runs on another arm")
        classes = ["joints"]
        use_profile(args.profile)
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        parser.error(f"unknown class(es) {', '.join(unknown)}; expected {', '.join(CLASSES)}")
    started = time.perf_counter()
    results = campaign(classes, args.calls, args.seed)
    print(render(results, time.perf_counter() - started))
    return 1 if any(t.escaped for t in results.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
