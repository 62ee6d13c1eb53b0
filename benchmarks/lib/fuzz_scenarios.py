"""Random scenarios for :mod:`benchmarks.safety_fuzz`: where the arm starts and what the
model asks for, per tool source and profile.

Values are drawn on, near and beyond the workspace boundary and the keep-out zones' faces,
with non-finite numbers, zero and huge speeds and forces, joints past their limits, refs
of objects outside the workspace, below the table, inside a zone or too heavy, and calls
each source must refuse (undeclared arguments and tools).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from benchmarks.lib.fuzz_arms import PROFILES, fuzz_objects
from embodiment.profile import EmbodimentProfile
from harness.providers import call

__all__ = ["Scenario", "Values", "scenarios"]


def _world_box(profile: EmbodimentProfile) -> tuple[list[float], list[float]]:
    """World-axis bounds of the workspace (for generating values around it)."""
    ws = profile.workspace
    corners = [
        profile.to_world((x, y, z), ws.frame)
        for x in (ws.min[0], ws.max[0])
        for y in (ws.min[1], ws.max[1])
        for z in (ws.min[2], ws.max[2])
    ]
    return [min(c[i] for c in corners) for i in range(3)], [
        max(c[i] for c in corners) for i in range(3)
    ]


def _coordinate(low: float, high: float, zone_faces: list[float]) -> st.SearchStrategy[float]:
    faces = [low, high, *zone_faces]
    inside = st.floats(low, high, allow_nan=False)
    return st.one_of(
        inside,
        inside,
        st.floats(low - 0.3, high + 0.3, allow_nan=False),
        st.builds(lambda f, d: f + d, st.sampled_from(faces), st.floats(-0.04, 0.04)),
        st.sampled_from([low, high, *zone_faces, 0.0, -0.0]),
        st.sampled_from([math.nan, math.inf, -math.inf, 1e9, -1e9]),
    )


@dataclass(frozen=True)
class Values:
    """Strategies for the values of one profile."""

    point: st.SearchStrategy[list[float]]
    speed: st.SearchStrategy[float | None]
    force: st.SearchStrategy[float]
    width: st.SearchStrategy[float | None]
    joints: st.SearchStrategy[list[float]]
    ref: st.SearchStrategy[str]


def _values(profile: EmbodimentProfile) -> Values:
    low, high = _world_box(profile)
    zones = [[profile.to_world(c, z.frame) for c in (z.min, z.max)] for z in profile.keep_out]
    faces = [[f[i] for pair in zones for f in pair] for i in range(3)]
    wild = st.tuples(*(_coordinate(low[i], high[i], faces[i]) for i in range(3))).map(list)
    inside = st.tuples(*(st.floats(low[i], high[i]) for i in range(3))).map(list)
    all_faces = [[low[i], high[i], *faces[i]] for i in range(3)]

    def onto_face(point: list[float], axis: int, pick: int, offset: float) -> list[float]:
        moved = list(point)
        moved[axis] = all_faces[axis][pick % len(all_faces[axis])] + offset
        return moved

    near_face = st.builds(
        onto_face, inside, st.integers(0, 2), st.integers(0, 99), st.floats(-0.04, 0.04)
    )
    point = st.one_of(inside, near_face, near_face, wild)
    limits = profile.limits
    joint_limits = limits.joint_limits or []
    joint_value = st.one_of(
        st.floats(-4.0, 4.0, allow_nan=False),
        st.builds(
            lambda pair, d: pair[0] + d,
            st.sampled_from([(lo,) for lo, _ in joint_limits] + [(hi,) for _, hi in joint_limits]),
            st.floats(-0.1, 0.1),
        ),
    )
    speeds = [0, 0.0, -0.1, 1e-4, limits.min_speed_m_s, limits.max_speed_m_s, 2.0, 50.0]
    forces = [0, 0.0, -1.0, 0.1, limits.min_force_n, limits.max_force_n, 500.0]
    return Values(
        point=point,
        speed=st.one_of(st.none(), st.sampled_from(speeds), st.floats(0.0, 1.0)),
        force=st.one_of(st.sampled_from(forces), st.floats(0.0, 200.0)),
        width=st.one_of(st.none(), st.floats(-0.01, 0.2)),
        joints=st.lists(joint_value, min_size=len(joint_limits) - 1, max_size=len(joint_limits) + 1)
        | st.lists(joint_value, min_size=len(joint_limits), max_size=len(joint_limits)),
        ref=st.sampled_from([*fuzz_objects(profile), "ghost"]),
    )


def _driver_calls(v: Values, *, with_home: bool) -> st.SearchStrategy[Any]:
    options = [
        st.builds(lambda p, s: call("move_to", x=p[0], y=p[1], z=p[2], speed=s), v.point, v.speed),
        st.builds(lambda j: call("move_joints", joints=j), v.joints),
        st.builds(lambda r: call("pick", ref=r), v.ref),
        st.builds(lambda r, t: call("place", ref=r, target=t), v.ref, v.ref),
        st.builds(lambda w: call("open_gripper", width=w), v.width),
        st.builds(lambda f: call("close_gripper", force=f), v.force),
    ]
    if with_home:
        options.append(st.just(call("home")))
    return st.one_of(*options)


def _function_calls(v: Values) -> st.SearchStrategy[Any]:
    reach = st.builds(lambda p, s: call("reach", target=p, speed=s, label="go"), v.point, v.speed)
    declared = st.one_of(
        reach,
        reach,
        st.builds(lambda j: call("set_arm_joints", joints=j), v.joints),
        st.builds(lambda f: call("squeeze", force=f), v.force),
        st.builds(lambda r: call("grab", ref=r), v.ref),
        st.builds(lambda r, t: call("put", ref=r, target=t, note="x"), v.ref, v.ref),
    )
    refused = st.one_of(
        st.builds(lambda p: call("reach", target=p, label=[1, 2]), v.point),
        st.builds(
            lambda p, r: call("nudge", x=p[0], y=p[1], z=p[2], relative=r), v.point, st.booleans()
        ),
        st.just(call("wiggle")),
        st.just(call("chime")),  # declared without arguments: allowed, moves nothing
    )
    return st.one_of(declared, declared, refused)


def _mcp_calls(v: Values) -> st.SearchStrategy[Any]:
    def move(name: str) -> st.SearchStrategy[Any]:
        return st.builds(
            lambda p, s: call(name, x=p[0], y=p[1], z=p[2], **({} if s is None else {"speed": s})),
            v.point,
            v.speed,
        )

    declared = st.one_of(
        move("move_to"),
        move("move_ref"),
        st.builds(lambda p: call("move_xy", x=p[0], y=p[1]), v.point),
        st.builds(lambda j, s: call("set_joints", joints=j, speed=s), v.joints, v.speed),
        st.builds(lambda f, w: call("grip", force=f, width=w), v.force, v.width),
        st.just(call("beep")),
    )
    refused = st.one_of(
        st.builds(
            lambda p, f, r: call("move_arm", x=p[0], y=p[1], z=p[2], frame=f, relative=r),
            v.point,
            st.sampled_from(["world", "base"]),
            st.booleans(),
        ),
        move("move_free"),
        st.builds(lambda p: call("move_free", x=p[0], frame="base"), v.point),
        st.builds(lambda p: call("move_ref", x=p[0], y=p[1], z=p[2], relative=True), v.point),
        move("move_any"),
        st.just(call("beep", loud=True)),
        st.just(call("home")),
    )
    return st.one_of(declared, declared, refused)


@dataclass(frozen=True)
class Scenario:
    """Where the arm starts and what the model asks for."""

    profile: str
    ee: tuple[float, float, float] | None
    """None: the profile's home pose."""
    joints: tuple[float, ...] | None
    calls: tuple[Any, ...]


def _start(profile: EmbodimentProfile) -> st.SearchStrategy[tuple[Any, Any]]:
    low, high = _world_box(profile)
    zone = profile.keep_out[0]
    in_zone = st.tuples(
        *(st.floats(lo - 0.03, hi + 0.03) for lo, hi in zip(zone.min, zone.max, strict=True))
    ).map(lambda p: profile.to_world(p, zone.frame))
    anywhere = st.tuples(
        *(st.floats(lo - 0.15, hi + 0.15) for lo, hi in zip(low, high, strict=True))
    )
    ee = st.one_of(st.none(), st.none(), anywhere, in_zone)
    limits = profile.limits.joint_limits or []
    joints = st.one_of(
        st.none(),
        st.tuples(*(st.floats(lo - 0.3, hi + 0.3) for lo, hi in limits)),
    )
    return st.tuples(ee, joints)


def scenarios(source: str, profile_name: str) -> st.SearchStrategy[Scenario]:
    """Random scenarios for one source on one profile."""
    profile = PROFILES[profile_name]()
    values = _values(profile)
    calls = {
        "driver": _driver_calls(values, with_home=True),
        "conservative": _driver_calls(values, with_home=False),
        "function": _function_calls(values),
        "mcp": _mcp_calls(values),
    }[source]
    return st.builds(
        lambda start, sequence: Scenario(profile_name, start[0], start[1], tuple(sequence)),
        _start(profile),
        st.lists(calls, min_size=1, max_size=8),
    )
