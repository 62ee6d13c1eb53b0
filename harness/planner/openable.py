"""Which fixture "open X" / "close X" names: a drawer region, or a fixture that opens and
closes as a whole (a microwave, by its door). Split from :mod:`harness.planner.household`,
which turns the grounded steps into tool calls."""

from __future__ import annotations

from harness.planner.grounding import (
    Scene,
    Unresolved,
    ground,
    ground_part,
    is_movable,
    word_score,
)
from harness.planner.language import Mention

__all__ = ["openable"]


def openable(mention: Mention, scene: Scene) -> str:
    """A drawer region, or a fixture with a door ("the microwave", "the microwave door",
    "close door"). A door is no region of the Brief: the fixture itself opens and closes
    (its ``open``/``closed`` tag), so "door" names the one such fixture the words allow."""
    if mention.part in (("door",), ("lid",)):
        return _door(mention, scene)
    if mention.part:
        return ground_part(mention, scene).ref
    refs = ground(mention, scene, movable=False)
    item = scene.items[refs[0]]
    if any(tag in ("open", "closed") for tag in item.tags) and not scene.regions_of(item.ref):
        return item.ref
    drawers = [r for r in scene.regions_of(item.ref) if "drawer" in r.label.split()]
    if any(tag in ("open", "closed") for tag in item.tags) or not drawers:
        return item.ref
    refs = ", ".join(sorted(r.ref for r in drawers))
    raise Unresolved(
        f"{mention.text()} has several drawers ({refs}); the instruction does not say which"
    )


def _door(mention: Mention, scene: Scene) -> str:
    """The fixture whose door "door" (or "the X door") names: of the fixtures that open and
    close as a whole, those the words fit; one is the answer, none or several a refusal."""
    hinged = [
        o
        for o in scene.things()
        if not is_movable(o) and any(tag in ("open", "closed") for tag in o.tags)
    ]
    if mention.words:
        hinged = [o for o in hinged if word_score(mention.words, o) is not None]
    if len(hinged) == 1:
        return hinged[0].ref
    owner = " ".join(mention.words) or "anything here"
    if not hinged:
        raise Unresolved(f"I see no {' '.join(mention.part)} of {owner}")
    refs = ", ".join(sorted(o.ref for o in hinged))
    raise Unresolved(
        f"{mention.text()} could be the door of any of {refs}",
        candidates=tuple(sorted(o.ref for o in hinged)),
    )
