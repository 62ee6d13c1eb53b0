"""Which of several alike an instruction's direction word picks: "the left plate", "the
butter at the back", "the middle black bowl", in the planner's stated frame (left and
right as the camera sees them, :func:`~harness.planner.grounding.viewer_left`; front away
from the robot, +x; the middle between the others along the line they spread on). Split
from :mod:`harness.planner.grounding`, which matches words and qualifiers first and leaves
the choice by position to these."""

from __future__ import annotations

import math

from harness.planner.brief import BriefObject
from harness.planner.language import Mention
from harness.planner.standins import Unresolved

__all__ = ["MARGIN_M", "by_direction", "middle"]

MARGIN_M = 0.03
"""How much closer the best candidate must be than the next for a spatial qualifier to
decide between them."""


def by_direction(
    candidates: list[BriefObject], direction: str, mention: Mention, left: tuple[float, float]
) -> list[BriefObject]:
    """The one of ``candidates`` farthest towards ``direction`` in the stated frame (left
    and right as the scene's viewer sees them, front away from the robot, +x), the highest
    or lowest for top and bottom, the one between the others for middle
    (:func:`middle`); :class:`Unresolved` naming them when two are level."""
    if direction in ("middle", "center"):
        return [middle(candidates, mention)]
    axes = {
        "left": left,
        "right": (-left[0], -left[1]),
        "front": (1.0, 0.0),
        "back": (-1.0, 0.0),
    }
    if direction not in axes:
        if direction in ("top", "bottom"):
            sign = 1.0 if direction == "top" else -1.0
            ranked = sorted(candidates, key=lambda c: -sign * c.position[2])
            return ranked[:1]
        raise Unresolved(f"I do not know which one is the {direction} {mention.text()}")
    ax, ay = axes[direction]
    ranked = sorted(candidates, key=lambda c: -(c.position[0] * ax + c.position[1] * ay))
    if len(ranked) >= 2:
        first = ranked[0].position[0] * ax + ranked[0].position[1] * ay
        second = ranked[1].position[0] * ax + ranked[1].position[1] * ay
        if first - second < MARGIN_M:
            raise Unresolved(
                f"{ranked[0].ref} and {ranked[1].ref} are side by side",
                candidates=(ranked[0].ref, ranked[1].ref),
            )
    return ranked[:1]


def middle(candidates: list[BriefObject], mention: Mention) -> BriefObject:
    """The one of ``candidates`` in the middle: the line they spread along runs between
    the two that stand farthest apart (the row's ends), and the middle one is the median
    of the others along it. A person says "the middle bowl" of three or five in a row; of
    one, two or four there is no middle, and where the ends or the middle are level
    (two pairs as far apart, two at the same point along the row: within
    :data:`MARGIN_M`) the row does not say which, so :class:`Unresolved` names the
    candidates."""
    refs = tuple(sorted(c.ref for c in candidates))
    if len(candidates) < 3 or len(candidates) % 2 == 0:
        raise Unresolved(
            f"{mention.text()}: there is no one in the middle of {len(candidates)} "
            f"({', '.join(refs)})",
            candidates=refs,
        )
    pairs = sorted(
        (
            (math.dist(a.position[:2], b.position[:2]), a, b)
            for i, a in enumerate(candidates)
            for b in candidates[i + 1 :]
        ),
        key=lambda p: -p[0],
    )
    (far, end_a, end_b), next_far = pairs[0], pairs[1][0]
    if far - next_far < MARGIN_M:
        raise Unresolved(
            f"{mention.text()}: {', '.join(refs)} do not stand in a row (no two are clearly "
            "its ends)",
            candidates=refs,
        )
    dx = end_b.position[0] - end_a.position[0]
    dy = end_b.position[1] - end_a.position[1]

    def along(item: BriefObject) -> float:
        return (
            (item.position[0] - end_a.position[0]) * dx
            + (item.position[1] - end_a.position[1]) * dy
        ) / far

    ranked = sorted(candidates, key=along)
    middle = len(ranked) // 2
    gaps = (
        along(ranked[middle]) - along(ranked[middle - 1]),
        along(ranked[middle + 1]) - along(ranked[middle]),
    )
    if min(gaps) < MARGIN_M:
        raise Unresolved(
            f"{mention.text()}: {', '.join(refs)} stand level along their row",
            candidates=refs,
        )
    return ranked[middle]
