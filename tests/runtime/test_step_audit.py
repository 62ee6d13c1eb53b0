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
