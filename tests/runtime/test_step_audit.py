"""The physics-step audit counts what the simulator did against the profile's numbers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from embodiment.profile import load_profile
from embodiment.step_audit import StepAudit
from tests.tiers import examples
from worlds.libero.config import PROFILE as LIBERO_PROFILE

PROFILE = load_profile(LIBERO_PROFILE)
WS, ZONE = PROFILE.workspace, PROFILE.keep_out[0]


def inside(point, box) -> bool:
    return all(lo <= v <= hi for v, lo, hi in zip(point, box.min, box.max, strict=True))


def test_steps_outside_the_workspace_or_in_a_zone_are_counted_and_the_first_kept() -> None:
    audit = StepAudit(PROFILE)
    audit((0.45, 0.0, 0.27))  # in front of the robot, above the table
    audit((0.0, 0.0, 0.10))  # inside the base's keep-out zone
    audit((1.20, 0.0, 0.27))  # beyond the workspace
    result = audit.result()
    assert (result.steps, result.outside, result.first_outside) == (3, 2, (0.0, 0.0, 0.1))
    audit.restart()
    assert audit.result().steps == 0 and audit.result().outside == 0


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(*[st.floats(-1.5, 1.5)] * 3), max_size=20))
def test_the_count_matches_a_plain_box_test(points: list[tuple[float, float, float]]) -> None:
    """The profile's base frame is its world frame here, so a plain box test is the oracle."""
    audit = StepAudit(PROFILE)
    for point in points:
        audit(point)
    bad = sum(1 for p in points if not inside(p, WS) or inside(p, ZONE))
    assert (audit.result().steps, audit.result().outside) == (len(points), bad)


def _turned_profile():
    """The LIBERO profile with turned, offset and nested frames: the base stands off the
    world's origin at a yaw, the workspace is a box in a frame on the base turned the other
    way, and the keep-out zones are in the base and the world frames."""
    from embodiment.profile.parts import FramePose, KeepOutZone

    frames = {
        "base": FramePose(parent="world", position=(0.31, -0.17, 0.9), yaw=0.7),
        "table": FramePose(parent="base", position=(0.2, 0.05, -0.03), yaw=-1.1),
    }
    workspace = WS.model_validate(
        {**WS.model_dump(), "frame": "table", "min": (-0.4, -0.5, -0.1), "max": (0.6, 0.45, 0.7)}
    )
    zones = [
        KeepOutZone(name="mount", frame="base", min=(-0.2, -0.2, -0.1), max=(0.15, 0.2, 0.2)),
        KeepOutZone(name="post", frame="world", min=(0.5, 0.1, 0.8), max=(0.7, 0.3, 1.6)),
    ]
    return PROFILE.model_copy(update={"frames": frames, "workspace": workspace, "keep_out": zones})


TURNED = _turned_profile()


def _profile_says_bad(point: tuple[float, float, float]) -> bool:
    """The oracle: the point taken through the profile's frame chain, boxes tested plainly."""
    world = TURNED.to_world(point, "base")
    ws = TURNED.workspace
    if not inside(TURNED.from_world(world, ws.frame), ws):
        return True
    return any(inside(TURNED.from_world(world, z.frame), z) for z in TURNED.keep_out)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(*[st.floats(-1.5, 1.5)] * 3), max_size=20))
def test_on_turned_frames_each_step_is_judged_as_the_profiles_own_conversions_judge_it(
    points: list[tuple[float, float, float]],
) -> None:
    """The audit resolves the frames once; the oracle converts every point through the
    profile's frame chain (``to_world``, ``from_world``) and tests the boxes plainly."""
    audit = StepAudit(TURNED)
    for point in points:
        audit(point)
    flags = [_profile_says_bad(p) for p in points]
    result = audit.result()
    assert (result.steps, result.outside) == (len(points), sum(flags))
    first = next((p for p, f in zip(points, flags, strict=True) if f), None)
    expected = None if first is None else tuple(round(float(v), 4) for v in first)
    assert result.first_outside == expected


def test_turned_frames_judge_points_a_micrometre_either_side_of_every_face() -> None:
    """Points a micrometre inside and outside each face of each box (in the box's own
    frame, taken to the base frame by the profile): the audit agrees with the oracle on
    every one, and the pair straddling a face of the workspace is split by it."""
    boxes = [TURNED.workspace, *TURNED.keep_out]
    verdicts: list[bool] = []
    for index, box in enumerate(boxes):
        centre = [(lo + hi) / 2 for lo, hi in zip(box.min, box.max, strict=True)]
        for axis in range(3):
            for face, sign in ((box.min[axis], -1.0), (box.max[axis], 1.0)):
                pair = []
                for offset in (-1e-6 * sign, 1e-6 * sign):
                    local = list(centre)
                    local[axis] = face + offset
                    point = TURNED.from_world(TURNED.to_world(tuple(local), box.frame), "base")
                    audit = StepAudit(TURNED)
                    audit(point)
                    said = audit.result().outside == 1
                    assert said == _profile_says_bad(point), (box, axis, face, offset)
                    pair.append(said)
                if index == 0:
                    assert pair == [False, True] or pair[0], (axis, face, pair)
                verdicts.extend(pair)
    assert len(verdicts) == len(boxes) * 12 and True in verdicts and False in verdicts
