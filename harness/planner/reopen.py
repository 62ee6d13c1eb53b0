"""A place refused because its container is closed again: open it once, then place again.

A drawer the plan opened can read closed by the time the place comes (the arm bumped it
while picking, it slid back): the world refuses the place with words that name the remedy
("top drawer ... is closed; open it first"), and so does a door opened too little for the
hand to carry the thing in beside its leaf ("microwave_1 is not open far enough: ...; open
microwave_1 wider first"). Sent again unchanged, the place is
refused again and the harness answers that repeat with a notice, so without a remedy the
plan gives up one step short. A model reads the remedy and acts on it; so does this
planner, driven by the refusal's words and the tools offered, never by a world's names:

1. the refusal of a ``place`` says the container is closed and to open it, or to open it
   wider (the ref to open is the one the refusal names first, when the Brief knows it,
   else the place's target);
2. with the thing still in the hand (opening needs the hand free), it is set down first on
   the marked table area nearest it away from the container (``place`` ... ``on``); done
   once the hand is free, whatever the evaluator says of the area;
3. ``open`` on the container, once per task and container (:data:`MAX_REOPENS`);
4. then the plan's own steps go on: the thing is picked again and placed again.

A second such refusal after the reopen, or a set-down that failed, ends the task with the
refusal's reason: bounded, no loops.
"""

from __future__ import annotations

import math
import re
from typing import Any

from harness.messages import AssistantItem, ToolCall, ToolResultItem
from harness.planner.brief import ParsedBrief
from harness.planner.grounding import is_area

__all__ = ["MAX_REOPENS", "REOPEN_PREFIX", "SET_DOWN_PREFIX", "reopen_step"]

MAX_REOPENS = 1
"""Remedial opens of one container in one task."""
REOPEN_PREFIX = "Reopening"
SET_DOWN_PREFIX = "Setting down"
"""How the planner's own remedial turns start: read back to count them (it is stateless)."""

_CLOSED = re.compile(r"\b(?:is|was|are) (?:still )?(?:closed|shut)\b", re.IGNORECASE)
_OPEN_FIRST = re.compile(r"\bopen (?:it|them|\S+) first\b", re.IGNORECASE)
_WIDER_FIRST = re.compile(r"\bopen (?:it|them|\S+) wider first\b", re.IGNORECASE)

Action = tuple[str, dict[str, Any]]


def closed_refusal(text: str) -> bool:
    """Whether a refusal's words say its container is closed and name opening it, or name
    opening it wider (a microwave's door open too little to carry a mug in beside it)."""
    return bool((_CLOSED.search(text) and _OPEN_FIRST.search(text)) or _WIDER_FIRST.search(text))


def _calls(items: list[Any]) -> list[tuple[ToolCall, str, ToolResultItem | None]]:
    """(call, the text of the turn that made it, its result or None) in order."""
    out: list[tuple[ToolCall, str, ToolResultItem | None]] = []
    index: dict[str, int] = {}
    for item in items:
        if isinstance(item, AssistantItem):
            for call in item.tool_calls:
                index[call.id] = len(out)
                out.append((call, item.text, None))
        elif isinstance(item, ToolResultItem) and item.call_id in index:
            call, text, _ = out[index[item.call_id]]
            out[index[item.call_id]] = (call, text, item)
    return out


def _failed(result: ToolResultItem) -> bool:
    return result.is_error or (
        result.evaluation is not None and result.evaluation.status == "failure"
    )


def _to_open(text: str, target: str, brief: ParsedBrief) -> str:
    """The ref the refusal names first when the Brief knows it (a door of the fixture the
    region belongs to), else the place's target."""
    first = text.split(maxsplit=1)[0] if text.split() else ""
    return first if first in brief.objects else target


def _set_down_spot(ref: str, container: str, brief: ParsedBrief) -> str | None:
    """The marked table area (a surface) nearest the held thing of those farther from the
    container than it is (opening sweeps the space in front of a drawer or a door: set
    down back where it stood, a bowl under the opened drawer's corner pushed the drawer
    further in), else the nearest; of those nothing else stands on when there are any
    (a mug refused at a microwave's door was set down on the 2 cm area another mug stood
    on, toppled over it and could not be picked again); None when the Brief marks no
    area."""
    held = brief.objects.get(ref)
    areas = [o for o in brief.objects.values() if is_area(o) and "container" not in o.tags]
    if held is None or not areas:
        return None
    taken = {o.on for o in brief.objects.values() if o.ref != ref and o.on}
    areas = [a for a in areas if a.ref not in taken] or areas
    opening = brief.objects.get(container)
    if opening is not None:
        near = math.dist(held.position[:2], opening.position[:2])
        away = [a for a in areas if math.dist(a.position[:2], opening.position[:2]) > near]
        areas = away or areas
    return min(areas, key=lambda a: math.dist(a.position[:2], held.position[:2])).ref


def reopen_step(
    items: list[Any], brief: ParsedBrief, tools: dict[str, Any]
) -> tuple[str, Action | None] | None:
    """(why, the remedial call) while a closed-container refusal is being remedied;
    (why, None) when it cannot be (the task ends with that reason); None otherwise (the
    plan goes on). See the module docstring."""
    if "open" not in tools:
        return None
    calls = _calls(items)
    last = max(
        (
            i
            for i, (call, _, result) in enumerate(calls)
            if call.name == "place"
            and result is not None
            and result.is_error
            and closed_refusal(result.text)
        ),
        default=None,
    )
    if last is None:
        return None
    place, _, refused = calls[last]
    assert refused is not None
    held = str(place.arguments.get("ref", ""))
    target = _to_open(refused.text, str(place.arguments.get("target", "")), brief)
    reason = refused.text.splitlines()[0][:300]
    reopened = [
        (call, result)
        for call, text, result in calls
        if call.name == "open"
        and call.arguments.get("ref") == target
        and text.startswith(REOPEN_PREFIX)
    ]
    after = calls[last + 1 :]
    if not after:  # just refused
        if len(reopened) >= MAX_REOPENS:
            return f"{place.name} of {held} was refused again after reopening: {reason}", None
        if brief.holding == held and "place" in tools:
            spot = _set_down_spot(held, target, brief)
            if spot is None:
                return f"{reason}; no free place to set {held} down to open it", None
            return (
                f"{SET_DOWN_PREFIX} {held} on {spot}: {target} must be opened again "
                f"({reason}), and opening needs the hand free.",
                ("place", {"ref": held, "target": spot, "relation": "on"}),
            )
        return _reopen(target, reason)
    _, text, result = after[-1]
    if text.startswith(SET_DOWN_PREFIX) and len(after) == 1:
        if result is None:
            return None
        # what matters is the free hand, not where exactly the thing came to rest (a world
        # may judge a marked area strictly: a bowl set down was judged beside the area)
        if _failed(result) and brief.holding == held:
            first = result.text.splitlines()[0][:200] if result.text else "it failed"
            return f"could not set {held} down to open {target} again ({first})", None
        return _reopen(target, reason)
    return None


def _reopen(target: str, reason: str) -> tuple[str, Action]:
    return (
        f"{REOPEN_PREFIX} {target}: the place was refused ({reason}); opening it, then "
        "placing again.",
        ("open", {"ref": target}),
    )
