"""Which way the scene's own names say "left" is: the evidence the planner weighs against
the camera's left before it reads "the left moka pot".

The planner reads left and right as seen through the embodiment's first camera (the
picture a person describing the scene looks at: :func:`~harness.planner.grounding.viewer_left`).
A scene may also name its places by side: a living room with "table area: plate left" and
"plate right", a kitchen with "moka pot left init" and "moka pot right init". A pair of
things whose labels differ only by "left" and "right" says which way its author called left
(from the right one to the left one). Where that agrees with the camera the report says
so; where it is the other way round the two readings of the instruction are both
defensible (a benchmark's own goals may use the camera's left in one task and the robot's
in another), and the planner asks which thing is meant where a user can answer, and refuses
otherwise, naming them (:func:`~harness.planner.household.plan_actions`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from harness.messages import ModelRequest
from harness.planner.brief import BriefObject, ParsedBrief
from harness.planner.grounding import viewer_left

__all__ = ["NamedLeft", "frame_note", "named_left", "named_note"]

_WORD = re.compile(r"[a-z]+")
MIN_APART_M = 0.02
"""A pair closer than this says nothing about a direction."""


@dataclass(frozen=True)
class NamedLeft:
    """The direction (xy, unit) the scene's names call left, and one pair that shows it."""

    direction: tuple[float, float]
    left: str
    right: str

    def agrees(self, left: tuple[float, float]) -> bool:
        """Whether ``left`` (a direction) is on the same side as the scene's left."""
        return self.direction[0] * left[0] + self.direction[1] * left[1] > 0

    def text(self) -> str:
        return f"'{self.left}' lies that way from '{self.right}'"


def named_left(objects: Iterable[BriefObject]) -> NamedLeft | None:
    """The scene's own left, from the pairs of things whose labels differ only by "left"
    and "right" (their mean direction from the right one to the left one), or None when
    no such pair stands apart."""
    pairs: dict[tuple[str, ...], dict[str, BriefObject]] = {}
    for item in objects:
        words = _WORD.findall(item.label.lower())
        sides = [w for w in words if w in ("left", "right")]
        if len(sides) != 1:
            continue
        key = tuple("*" if w in ("left", "right") else w for w in words)
        pairs.setdefault(key, {})[sides[0]] = item
    sx = sy = 0.0
    shown: tuple[str, str] | None = None
    for pair in pairs.values():
        if "left" not in pair or "right" not in pair:
            continue
        (lx, ly, _), (rx, ry, _) = pair["left"].position, pair["right"].position
        apart = math.hypot(lx - rx, ly - ry)
        if apart < MIN_APART_M:
            continue
        sx, sy = sx + (lx - rx) / apart, sy + (ly - ry) / apart
        shown = shown or (pair["left"].label, pair["right"].label)
    norm = math.hypot(sx, sy)
    if shown is None or norm < 1e-6:
        return None
    return NamedLeft((sx / norm, sy / norm), *shown)


_SIDE = re.compile(r"\b(?:left|right|front|back|rear|middle|center|centre)\b")


def frame_note(instruction: str, request: ModelRequest, brief: ParsedBrief | None = None) -> str:
    """The frame the instruction's relative positions were read in, for the report (an
    empty string when it names none): left and right as seen through the embodiment's
    first camera (:func:`~harness.planner.grounding.viewer_left`), front and behind along
    the robot's reach, the middle one between the others
    (:func:`~harness.planner.positions.middle`)."""
    if not _SIDE.search(instruction.lower()):
        return ""
    embodiment = "\n".join(b.text for b in request.system if b.name == "embodiment")
    lx, ly = (v + 0.0 for v in viewer_left(embodiment))  # no "-0.00"
    camera = _CAMERA_NAME.search(embodiment)
    seen = f"camera {camera['name']}" if camera else "a camera facing the robot (none stated)"
    return (
        f"\nFrame: left/right as seen through {seen}: left is the robot-base direction "
        f"({lx:.2f}, {ly:.2f}), right the opposite; front is away from the robot (+x), "
        "back towards it; the middle one of several alike is the one between the others "
        "along the line they spread on (the two farthest apart are its ends); "
        'marked areas ("the front of the stove") are the scene\'s own.'
        + named_note(brief, (lx, ly))
    )


def named_note(brief: ParsedBrief | None, left: tuple[float, float]) -> str:
    """What the scene's own names say about that left (sides.py), for the frame note."""
    named = named_left(brief.objects.values()) if brief is not None else None
    if named is None:
        return ""
    if named.agrees(left):
        return f" The scene's own names agree: {named.text()}."
    return f" The scene's own names put left the other way ({named.text()})."


_CAMERA_NAME = re.compile(r"^Camera (?P<name>[a-z0-9_]+):", re.MULTILINE)
