"""Exact geometry of points and straight segments against axis-aligned boxes.

The safety envelope's path checks rest on three facts about a convex box: the Euclidean
distance from a point moving along a line to the box is convex in the line parameter, the
penetration depth of a point inside it is concave, and so either one is monotone along
a segment as soon as its derivative at the segment's start has the right sign. That is
what lets the envelope accept a "move straight out of the zone" from a reading that is
already inside a keep-out margin, and nothing else.

Boxes are given as ``(low, high)`` corner triples in the frame the points are in.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "box_box_distance",
    "box_depth",
    "moves_away_from_box",
    "point_box_distance",
    "point_text",
    "segment_box_distance",
    "segment_hits_box",
]

Point = Sequence[float]


def point_box_distance(point: Point, low: Point, high: Point) -> float:
    """Euclidean distance from ``point`` to the box (0 inside or on it)."""
    return math.sqrt(sum(_gap(p, lo, hi) ** 2 for p, lo, hi in zip(point, low, high, strict=True)))


def box_depth(point: Point, low: Point, high: Point) -> float:
    """How far inside the box ``point`` is (distance to its nearest face; 0 outside)."""
    depth = min(min(p - lo, hi - p) for p, lo, hi in zip(point, low, high, strict=True))
    return max(0.0, depth)


def segment_box_distance(start: Point, end: Point, low: Point, high: Point) -> float:
    """The smallest distance between the segment start->end and the box, exactly.

    Along the segment each axis' gap to the box is piecewise linear, with breaks where
    the coordinate crosses the box's faces; between breaks the squared distance is a
    quadratic, minimised at its vertex or an end of the piece.
    """
    delta = [e - s for s, e in zip(start, end, strict=True)]
    breaks = {0.0, 1.0}
    for s, d, lo, hi in zip(start, delta, low, high, strict=True):
        if abs(d) > 1e-15:
            for face in (lo, hi):
                t = (face - s) / d
                if 0.0 < t < 1.0:
                    breaks.add(t)
    ordered = sorted(breaks)
    candidates = list(ordered)
    for t0, t1 in itertools.pairwise(ordered):
        middle = (t0 + t1) / 2
        quadratic = linear = 0.0
        for s, d, lo, hi in zip(start, delta, low, high, strict=True):
            value = s + d * middle
            if value < lo:  # gap = lo - s - d t
                offset, slope = lo - s, -d
            elif value > hi:  # gap = s + d t - hi
                offset, slope = s - hi, d
            else:
                continue
            quadratic += slope * slope
            linear += 2 * offset * slope
        if quadratic > 0:
            vertex = -linear / (2 * quadratic)
            if t0 < vertex < t1:
                candidates.append(vertex)
    return min(
        point_box_distance([s + d * t for s, d in zip(start, delta, strict=True)], low, high)
        for t in candidates
    )


def box_box_distance(low_a: Point, high_a: Point, low_b: Point, high_b: Point) -> float:
    """Euclidean distance between two boxes (0 when they touch or overlap)."""
    return math.sqrt(
        sum(
            max(0.0, lb - ha, la - hb) ** 2
            for la, ha, lb, hb in zip(low_a, high_a, low_b, high_b, strict=True)
        )
    )


def moves_away_from_box(start: Point, end: Point, low: Point, high: Point) -> bool:
    """Whether the segment never gets closer to (or deeper into) the box than its start.

    Outside the box the distance is convex along the segment, so it never decreases when
    its derivative at the start is not negative. Inside, the depth is concave, so it
    decreases all the way out when its derivative at the start is negative: the segment
    must head out through a nearest face (sliding along inside the box is not leaving it).
    """
    direction = [e - s for s, e in zip(start, end, strict=True)]
    if not any(abs(d) > 1e-15 for d in direction):
        return False
    if point_box_distance(start, low, high) > 0:
        nearest = [min(hi, max(lo, p)) for p, lo, hi in zip(start, low, high, strict=True)]
        outward = [p - q for p, q in zip(start, nearest, strict=True)]
        return sum(o * d for o, d in zip(outward, direction, strict=True)) >= 0
    depth = box_depth(start, low, high)
    rates = []
    for p, d, lo, hi in zip(start, direction, low, high, strict=True):
        if abs((p - lo) - depth) <= 1e-12:
            rates.append(d)  # distance to the low face changes by +d
        if abs((hi - p) - depth) <= 1e-12:
            rates.append(-d)
    return min(rates) < 0


def segment_hits_box(start: Point, end: Point, low: Point, high: Point) -> bool:
    """Whether the straight segment start->end touches the box."""
    return segment_box_distance(start, end, low, high) == 0.0


def rounded_point(point: Any) -> tuple[float, float, float]:
    """A point rounded to the millimetre (what detections and evidence report)."""
    return tuple(round(float(v), 3) for v in point)  # type: ignore[return-value]


def point_text(point: Any) -> str:
    """A point as evidence text: ``(0.450, -0.120, 0.645)``, millimetres shown."""
    return "(" + ", ".join(f"{float(v):.3f}" for v in point) + ")"


def _gap(value: float, low: float, high: float) -> float:
    return max(low - value, 0.0, value - high)
