"""Geometric relations between axis-aligned boxes: ``on``, ``inside``, ``near``, ``holding``.

The rules, with the tolerances of :class:`RelationTolerances` (all metres):

- **on** (``a on b``): a's bottom is within ``contact_m`` of b's top, a's centre lies over
  b's footprint (which may be overhung by ``footprint_margin_m``), and b's top is below a's
  top. When several boxes qualify, a rests on the highest one (then the smaller footprint).
- **inside** (``a inside b``): b is a container, a's centre lies over b's footprint, and a's
  bottom is between b's bottom (minus ``contact_m``) and ``rim_m`` below b's rim. The
  innermost (smallest) container wins. An object inside a container is never also ``on``
  the container or on what the container stands on.
- **near** (``a near b``, both ways): neither is a surface, robot or held object, they are
  not on or inside one another, and the gap between their boxes is at most ``near_m``.
- **holding** (fallback only, when the robot state does not say what is held): the gripper
  is closed and an object's centre is within ``grasp_m`` of the gripper; the closest wins.

An object whose size is unknown is treated as a cube of ``assumed_size_m`` when it rests on
something, and can support or contain nothing. A uniform grid over x/y keeps the search
close to linear in the number of objects.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Body",
    "GeoRelation",
    "RelationTolerances",
    "box_gap",
    "compute_relations",
    "grasped_body",
]


class RelationTolerances(BaseModel):
    """Tolerances of the geometric relation rules (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    contact_m: float = Field(0.02, gt=0)
    """How far a's bottom may be from b's top and still rest on it (pose noise, padding)."""
    footprint_margin_m: float = Field(0.01, ge=0)
    """How far a's centre may overhang b's footprint edge."""
    rim_m: float = Field(0.005, ge=0)
    """a's bottom must be at least this far below a container's rim to be inside it."""
    near_m: float = Field(0.15, gt=0)
    """Largest gap between two boxes that still counts as near."""
    grasp_m: float = Field(0.05, gt=0)
    """Geometric holding fallback: object centre within this of a closed gripper."""
    assumed_size_m: float = Field(0.04, gt=0)
    """Extent assumed for an object whose size perception does not report."""


class Body(NamedTuple):
    """What the rules need of one node: its box and what kind of thing it is."""

    ref: str
    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    sized: bool
    """Size reported by perception (only sized bodies support or contain things)."""
    container: bool
    surface: bool
    held: bool = False

    @property
    def centre(self) -> tuple[float, float, float]:
        return (
            (self.lo[0] + self.hi[0]) / 2,
            (self.lo[1] + self.hi[1]) / 2,
            (self.lo[2] + self.hi[2]) / 2,
        )

    @property
    def footprint_area(self) -> float:
        return (self.hi[0] - self.lo[0]) * (self.hi[1] - self.lo[1])

    @property
    def volume(self) -> float:
        return self.footprint_area * (self.hi[2] - self.lo[2])


class GeoRelation(NamedTuple):
    source: str
    relation: str
    target: str
    distance_m: float


def box_gap(a: Body, b: Body) -> float:
    """Euclidean distance between two axis-aligned boxes (0 when they touch or overlap)."""
    total = 0.0
    for axis in range(3):
        d = max(b.lo[axis] - a.hi[axis], a.lo[axis] - b.hi[axis], 0.0)
        total += d * d
    return math.sqrt(total)


class _Grid:
    """A uniform x/y grid; boxes covering more than ``max_cells`` cells go to ``large``."""

    def __init__(self, cell: float, *, max_cells: int = 1024) -> None:
        self.cell = cell
        self.max_cells = max_cells
        self.cells: dict[tuple[int, int], list[Body]] = defaultdict(list)
        self.large: list[Body] = []

    def _span(self, lo: float, hi: float) -> range:
        return range(math.floor(lo / self.cell), math.floor(hi / self.cell) + 1)

    def insert(self, body: Body, grow: float) -> None:
        xs = self._span(body.lo[0] - grow, body.hi[0] + grow)
        ys = self._span(body.lo[1] - grow, body.hi[1] + grow)
        if len(xs) * len(ys) > self.max_cells:
            self.large.append(body)
            return
        for i in xs:
            for j in ys:
                self.cells[(i, j)].append(body)

    def at_point(self, x: float, y: float) -> Iterable[Body]:
        key = (math.floor(x / self.cell), math.floor(y / self.cell))
        yield from self.cells.get(key, ())
        yield from self.large

    def over_box(self, body: Body, grow: float) -> Iterable[Body]:
        for i in self._span(body.lo[0] - grow, body.hi[0] + grow):
            for j in self._span(body.lo[1] - grow, body.hi[1] + grow):
                yield from self.cells.get((i, j), ())
        yield from self.large


def _over_footprint(x: float, y: float, b: Body, margin: float) -> bool:
    return b.lo[0] - margin <= x <= b.hi[0] + margin and b.lo[1] - margin <= y <= b.hi[1] + margin


def _inside(a: Body, b: Body, tol: RelationTolerances) -> bool:
    x, y, _ = a.centre
    return (
        _over_footprint(x, y, b, tol.footprint_margin_m)
        and b.lo[2] - tol.contact_m <= a.lo[2] <= b.hi[2] - tol.rim_m
        and a.volume <= b.volume
    )


def _on(a: Body, b: Body, tol: RelationTolerances) -> bool:
    x, y, _ = a.centre
    return (
        abs(a.lo[2] - b.hi[2]) <= tol.contact_m
        and b.hi[2] < a.hi[2]
        and _over_footprint(x, y, b, tol.footprint_margin_m)
    )


def compute_relations(
    bodies: Sequence[Body],
    tol: RelationTolerances,
    *,
    fixed_support: frozenset[str] = frozenset(),
    fixed_pairs: frozenset[tuple[str, str]] = frozenset(),
) -> list[GeoRelation]:
    """All ``on``/``inside``/``near`` relations among ``bodies``.

    ``fixed_support`` are refs whose on/inside relation is asserted elsewhere (perception,
    evaluator): no geometric support is computed for them. ``fixed_pairs`` are (a, b)
    pairs already related by such an assertion, so they are not also called near.
    Deterministic: the result is sorted.
    """
    supports = _Grid(max(tol.near_m, 0.05))
    for body in bodies:
        if body.sized and not body.held:
            supports.insert(body, tol.footprint_margin_m)

    relations: list[GeoRelation] = []
    related: set[tuple[str, str]] = set(fixed_pairs)
    for a in bodies:
        if a.held or a.ref in fixed_support:
            continue
        x, y, _ = a.centre
        container: Body | None = None
        for b in supports.at_point(x, y):
            innermost = container is None or (b.volume, b.ref) < (container.volume, container.ref)
            if b.ref != a.ref and b.container and innermost and _inside(a, b, tol):
                container = b
        support: Body | None = None
        for b in supports.at_point(x, y):
            if b.ref == a.ref or not _on(a, b, tol):
                continue
            if container is not None and (
                b.ref == container.ref or b.hi[2] <= container.lo[2] + tol.contact_m
            ):
                continue
            if support is None or (-b.hi[2], b.footprint_area, b.ref) < (
                -support.hi[2],
                support.footprint_area,
                support.ref,
            ):
                support = b
        if container is not None:
            relations.append(GeoRelation(a.ref, "inside", container.ref, 0.0))
            related.add((a.ref, container.ref))
        if support is not None:
            relations.append(GeoRelation(a.ref, "on", support.ref, 0.0))
            related.add((a.ref, support.ref))

    neighbours = _Grid(max(tol.near_m, 0.05))
    candidates = [b for b in bodies if not (b.surface or b.held)]
    for body in candidates:
        neighbours.insert(body, tol.near_m / 2)
    for a in candidates:
        seen: set[str] = set()
        for b in neighbours.over_box(a, tol.near_m / 2):
            if b.ref <= a.ref or b.ref in seen:
                continue
            seen.add(b.ref)
            if (a.ref, b.ref) in related or (b.ref, a.ref) in related:
                continue
            gap = box_gap(a, b)
            if gap <= tol.near_m:
                relations.append(GeoRelation(a.ref, "near", b.ref, gap))
                relations.append(GeoRelation(b.ref, "near", a.ref, gap))
    relations.sort()
    return relations


def grasped_body(
    bodies: Iterable[Body],
    gripper_ref: str,
    gripper: tuple[float, float, float],
    tol: RelationTolerances,
) -> GeoRelation | None:
    """The holding fallback: the object whose centre is closest to a closed gripper, if
    within ``grasp_m`` (ties broken by ref)."""
    best: tuple[float, str] | None = None
    for body in bodies:
        if body.surface:
            continue
        distance = math.dist(body.centre, gripper)
        if distance <= tol.grasp_m and (best is None or (distance, body.ref) < best):
            best = (distance, body.ref)
    if best is None:
        return None
    return GeoRelation(gripper_ref, "holding", best[1], best[0])
