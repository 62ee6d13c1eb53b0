"""Which steps of the offline planner's plan are done: by the Brief and by the verdicts.

A step is done when the Brief (the world's relations and tags, as they are now) shows its
result, and its latest verdict (the world's evaluator, judging the state right after it ran)
does not deny it. A verdict speaks for the moment it was given: a later call on the same
thing may have undone a success or mended a failure, and then the Brief, the state now, is
the better evidence (:mod:`harness.planner.household` drops such failures before asking).
"""

from __future__ import annotations

from typing import Any

from harness.planner.brief import ParsedBrief
from harness.planner.grounding import is_area, is_movable

__all__ = ["Action", "step_done"]

Action = tuple[str, dict[str, Any]]
"""One tool call of a plan: (tool name, arguments)."""


def step_done(
    plan: list[Action],
    index: int,
    brief: ParsedBrief,
    succeeded: set[int],
    last: dict[int, bool] | None = None,
) -> bool:
    """Whether step ``index`` of ``plan`` is done: by the Brief, successes and verdicts."""
    name, arguments = plan[index]
    last = last or {}
    if name == "pick" and brief.holding == arguments["ref"]:
        return True
    after = plan[index + 1][1] if _needs_pick(plan, index + 1) else None
    if (
        name == "pick"
        and after is not None
        and last.get(index + 1) is not False
        and _resting(arguments["ref"], after["target"], brief)
    ):
        return True  # already where its place puts it, whatever the pick's own verdict
    # a call whose latest try the evaluator judged failed is not done (nor the pick before a
    # place judged failed), whatever the Brief's own relations say: a world's own 'on' check
    # found no contact where the scene graph saw the bowl above the plate
    if last.get(index) is False or (
        name == "pick" and _needs_pick(plan, index + 1) and last.get(index + 1) is False
    ):
        return False
    if name in _STATE_TAGS or name == "push":
        # succeeded when it ran, and still so now: a later step may have undone it
        return index in succeeded and _holds(name, arguments, brief) is not False
    if name == "place":
        if brief.holding == arguments["ref"] and index in succeeded and _picked_again(plan, index):
            # held again by the plan's later pick of it ("stack the left bowl on the right
            # bowl and place them in the tray": the stack is carried on), not undone
            return True
        where = _resting(arguments["ref"], arguments["target"], brief)
        return index in succeeded if where is None else where
    if name == "pick" and _needs_pick(plan, index + 1):
        if brief.holding == arguments["ref"]:
            return True
        where = _resting(arguments["ref"], plan[index + 1][1]["target"], brief)
        return (index + 1 in succeeded) if where is None else where
    return index in succeeded


_STATE_TAGS = {
    "open": ("open", "closed"),
    "close": ("closed", "open"),
    "turn_on": ("state=on", "state=off"),
    "turn_off": ("state=off", "state=on"),
}
"""Brief tags saying an articulated step's result holds / does not hold now."""


def _holds(name: str, arguments: dict[str, Any], brief: ParsedBrief) -> bool | None:
    """Whether the Brief shows the result of an articulated step or a push now (the world
    writes those tags and relations from its own task predicates); None when it does not
    say."""
    if name == "push":
        return _resting(arguments["ref"], arguments["target"], brief)
    item = brief.objects.get(arguments.get("ref", ""))
    if item is None or name not in _STATE_TAGS:
        return None
    yes, no = _STATE_TAGS[name]
    if yes in item.tags:
        return True
    if no in item.tags:
        return False
    return None


def _resting(ref: str, target: str, brief: ParsedBrief) -> bool | None:
    """Whether the Brief shows ``ref`` on / in ``target`` (or a part of it); None when the
    Brief does not list ``ref``, or shows it resting on another thing, which may stand
    within the marked area ``target`` or not (the step's own verdict decides)."""
    item = brief.objects.get(ref)
    if item is None:
        return None
    if item.held or brief.holding == ref:
        return False
    # a marked area of the table is not reached by standing anywhere on the table
    # ("on main_table" is not "on main_table_stove_front_region")
    area = brief.objects.get(target)
    exact = area is not None and is_area(area)
    for where in (item.on, item.inside):
        if where and (
            where == target
            or where.startswith(target + "_")
            or (not exact and target.startswith(where + "_"))
        ):
            return True
    below = brief.objects.get(item.on or "")  # on a neighbour: the area is not seen from it
    return None if exact and below is not None and is_movable(below) else False


def _picked_again(plan: list[Action], index: int) -> bool:
    """Whether a later call of the plan picks up the object the place ``index`` put down."""
    ref = plan[index][1].get("ref")
    return any(call == ("pick", {"ref": ref}) for call in plan[index + 1 :])


def _needs_pick(plan: list[Action], index: int) -> bool:
    """Whether the plan's call ``index`` is a place right after the pick of its object."""
    if not 0 < index < len(plan) or plan[index][0] != "place":
        return False
    return plan[index - 1] == ("pick", {"ref": plan[index][1].get("ref")})
