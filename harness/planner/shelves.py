"""The surfaces of a piece of furniture that "on the shelf", "on top of the shelf" and
"under the shelf" name: a shelf unit's board (covered by its top, above its floor), its
open top (which nothing of it covers, so a place lowered from above reaches it) and the
surface below the board. Split from :mod:`harness.planner.grounding`, which calls these
where words alone leave several of a fixture's regions (two labelled "top of")."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from harness.planner.brief import BriefObject
from harness.planner.language import Mention
from harness.planner.lexicon import equivalent
from harness.planner.standins import Unresolved

if TYPE_CHECKING:
    from harness.planner.grounding import Scene

__all__ = [
    "SHELF_WORDS",
    "below",
    "is_shelving",
    "on_which",
    "shelf_board",
    "surfaces_of",
    "uncovered",
    "under",
]

SHELF_WORDS = frozenset({"shelf", "shelving", "bookcase", "bookshelf"})
"""Label nouns of furniture whose surfaces are shelf boards."""
LEVEL_M = 0.03
"""How much higher one surface must be than another to lie above it."""
OVER_M = 0.10
"""How far apart in the plane two surfaces of one piece may be and one still lie over the
other (a shelf unit's boards share their middle within a few centimetres)."""


def surfaces_of(owner: BriefObject, scene: Scene) -> list[BriefObject]:
    """The owner's regions to put things on (not its insides, drawers or marked areas)."""
    areas = {a.ref for a in scene.table_areas()}
    return [
        r
        for r in scene.regions_of(owner.ref)
        if r.ref not in areas and "container" not in r.tags and "drawer" not in r.label.split()
    ]


def _above(upper: BriefObject, lower: BriefObject) -> bool:
    return (
        upper.position[2] > lower.position[2] + LEVEL_M
        and math.dist(upper.position[:2], lower.position[:2]) < OVER_M
    )


def uncovered(regions: list[BriefObject], scene: Scene) -> list[BriefObject]:
    """The regions no other surface of their owner lies over: where a place that lowers
    the held thing from above (the ``place`` skill) can set it down."""
    out = []
    for region in regions:
        owner = scene.owner_of(region)
        others = surfaces_of(owner, scene) if owner is not None else []
        if not any(_above(o, region) for o in others if o is not region):
            out.append(region)
    return out


def is_shelving(item: BriefObject) -> bool:
    """Whether the label's noun says shelf boards ("wooden two layer shelf")."""
    return bool(item.label) and any(equivalent(item.kind, w) for w in SHELF_WORDS)


def shelf_board(owner: BriefObject, mention: Mention, scene: Scene) -> BriefObject:
    """A shelf unit's shelf board ("put the pan on the cabinet shelf"): of its surfaces,
    the one with another of them over it (so not its open top, which is "on top of" it)
    and another under it (so not its floor, which is under the shelf); a unit with one
    covered surface only has that one. Several: :class:`Unresolved` naming them."""
    surfaces = surfaces_of(owner, scene)
    covered = [r for r in surfaces if r not in uncovered([r], scene)]
    raised = [r for r in covered if any(_above(r, o) for o in surfaces if o is not r)]
    boards = raised or covered
    if len(boards) == 1:
        return boards[0]
    if not boards:
        raise Unresolved(f"I see no shelf board in {owner.ref} for {mention.text()}")
    refs = tuple(sorted(r.ref for r in boards))
    raise Unresolved(f"{mention.text()} could be any of {', '.join(refs)}", candidates=refs)


def below(region: BriefObject, scene: Scene) -> BriefObject | None:
    """The owner's surface right under ``region`` (the highest of those it lies over):
    "under the shelf" is the layer below the shelf board."""
    owner = scene.owner_of(region)
    if owner is None:
        return None
    under = [r for r in surfaces_of(owner, scene) if _above(region, r)]
    return max(under, key=lambda r: r.position[2]) if under else None


def on_which(
    mention: Mention, item: BriefObject, tops: list[BriefObject], scene: Scene
) -> list[BriefObject]:
    """Which of a fixture's several surfaces called its top "on <it>" means: for a shelf
    unit named as a shelf ("on the shelf"), its shelf board (:func:`shelf_board`: "on
    top of the shelf" is its roof, "under the shelf" the layer below the board); for
    anything else the one nothing of it covers (:func:`uncovered`), where the ``place``
    skill, which lowers things from above, can set something down."""
    said = mention.words[-1:] or mention.part[-1:]
    if is_shelving(item) and said and said[0] in ("shelf", "shelving"):
        try:
            return [shelf_board(item, mention, scene)]
        except Unresolved:
            return tops
    return uncovered(tops, scene) or tops


def under(region: BriefObject, mention: Mention, scene: Scene) -> str:
    """The surface a place "under" what ``mention`` names puts things on, given the one it
    names (``region``): the owner's surface right under it (:func:`below`: "under the
    shelf" is the unit's lower layer); :class:`Unresolved` where there is none."""
    lower = below(region, scene)
    if lower is None:
        raise Unresolved(f"I see no place to put things under {mention.text()}")
    return lower.ref
