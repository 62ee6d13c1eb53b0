"""The offline planner in worlds with fixtures (drawers, doors, switches): kitchens, living rooms.

Chosen when the tools declared to it include articulated skills (``open``, ``turn_on``...).
Each turn it reads the instruction (:mod:`harness.planner.language`), grounds every mention
in the Brief (:mod:`harness.planner.grounding`) and turns the steps into tool calls:

- put X in/on Y: ``pick`` X, then ``place`` X on Y (the region the words name: "the
  basket" is its inside for "in", "the stove" its cooking area for "on");
- open/close X, turn X on/off: one call on the drawer region or the fixture;
- push X to the front of Y: ``push`` X into the marked table area.

The plan is grounded once, on the first turn, and written into that turn's text (``Plan:``
and a JSON list); later turns read it back from the transcript, because after the first pick
"the bowl between the plate and the ramekin" is no longer between them. Progress is the
transcript's own record: a call whose result succeeded is done; a failed one is tried again
(the object picked again when a place failed) up to :data:`MAX_ATTEMPTS`. A place refused
because its container is closed again ("... is closed; open it first") is remedied once:
the held thing set down, the container opened, then the plan goes on
(:mod:`harness.planner.reopen`).

An instruction it cannot read, a mention nothing in the scene fits or that several fit
equally: it moves nothing and reports why, ending ``not_achieved``."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from harness.messages import AssistantItem, ModelRequest, ModelResponse, ToolCall, new_id
from harness.planner.brief import BriefObject, ParsedBrief, parse_brief
from harness.planner.grounding import (
    VIEWER_LEFT,
    Scene,
    Unresolved,
    ground,
    ground_part,
    is_area,
    viewer_left,
)
from harness.planner.history import find_arguments
from harness.planner.language import Mention, Step, Task, parse_task
from harness.planner.lexicon import stem
from harness.planner.openable import openable
from harness.planner.progress import Action, step_done
from harness.planner.reopen import reopen_step
from harness.planner.resolve import scene_out_of_reach, workspace_of
from harness.planner.shelves import on_which, under
from harness.planner.sides import frame_note, named_left
from harness.prompts import OUTCOME_ACHIEVED_LINE, OUTCOME_NOT_ACHIEVED_LINE

__all__ = ["ARTICULATED_TOOLS", "MAX_ATTEMPTS", "Action", "decide", "plan_actions", "step_done"]

ARTICULATED_TOOLS = frozenset({"open", "close", "turn_on", "turn_off", "push"})
"""Tools whose presence says the world has fixtures: this planner takes over."""
MAX_ATTEMPTS = 3
MAX_QUESTIONS = 2
"""Questions to the user about one instruction before an ambiguity is a refusal."""
PLAN_PREFIX = "Plan: "
_SIDE_WORD = {"right_of": "right", "left_of": "left", "front_of": "front", "behind": "back"}

"""One tool call of the plan: (tool name, arguments)."""
_GIVE_UP: Action = ("", {})


def applies(tools: dict[str, Any]) -> bool:
    return bool(ARTICULATED_TOOLS & set(tools))


def decide(
    request: ModelRequest,
    instruction: str,
    tools: dict[str, Any],
    *,
    found: dict[str, BriefObject] | None = None,
    queried: set[str] | None = None,
) -> ModelResponse:
    """This turn's tool call, or the final report (see the module docstring). ``found``
    are objects ``find_objects`` reported, ``queried`` what it was asked."""
    items = list(request.items)
    plan = _plan_of(items)
    if plan is None:
        task = parse_task(instruction)
        if not task.ok:
            return _report(f"I did not move anything: {task.problem}.", achieved=False)
        brief_text = request.refreshed.brief if request.refreshed else ""
        if not brief_text:
            return _report("I cannot see the scene (no Scene Brief), so I did not move.", False)
        brief = parse_brief(brief_text)
        embodiment = "\n".join(b.text for b in request.system if b.name == "embodiment")
        answers = _answers(items)
        notes: list[str] = []
        try:
            plan = plan_actions(
                task, brief, found=found, left=viewer_left(embodiment), answers=answers, notes=notes
            )
        except Unresolved as exc:
            if exc.candidates and "query_user" in tools and len(answers) < MAX_QUESTIONS:
                return _call(
                    "query_user",
                    {"question": f"{exc}. Which one do you mean: {', '.join(exc.candidates)}?"},
                    text=f"The instruction is ambiguous ({exc}); asking.",
                )
            if (
                exc.missing
                and brief.omitted
                and "find_objects" in tools
                and exc.missing not in (queried or set())
            ):
                return _call(
                    "find_objects",
                    find_arguments(tools, exc.missing),
                    text=f"The Brief leaves objects out; looking for the {exc.missing}.",
                )
            named = f" (candidates: {', '.join(exc.candidates)})" if exc.candidates else ""
            return _report(f"I did not move anything: {exc}{named}.", achieved=False)
        missing = ", ".join(sorted({name for name, _ in plan if name not in tools}))
        why = f"the plan needs {missing}, which this world does not offer" if missing else ""
        why = why or scene_out_of_reach(_refs(plan), brief.objects, workspace_of(request))
        if why:  # a tool missing, or a thing out of reach as the scene starts
            return _report(f"I did not move anything: {why}.", achieved=False)
        text = PLAN_PREFIX + json.dumps([[n, a] for n, a in plan], separators=(",", ":"))
        if (first := _next(plan, items, brief)) is None:  # the scene starts with it done
            ends = [_args_text(a) for _, a in plan if "target" in a]
            said = "; ".join(ends or [f"{n} {_args_text(a)} done" for n, a in plan])
            return _report(
                f"{text}\nI did not move anything: the Brief already shows {said}.", True
            )
        return _call(*first[1], text="\n".join([text, *notes, first[0]]))
    brief = parse_brief(request.refreshed.brief) if request.refreshed else ParsedBrief()
    remedy = reopen_step(items, brief, tools)  # a container closed again: open it, place again
    step = _next(plan, items, brief) if remedy is None else (remedy[0], remedy[1] or _GIVE_UP)
    notes_text = "".join(f"\n{line}" for line in _notes_of(items))
    frame = notes_text + frame_note(instruction, request, brief)
    if step is None:
        return _report(_summary(plan, items, done=True) + frame, achieved=True)
    note, action = step
    if action is _GIVE_UP:
        return _report(_summary(plan, items, done=False, reason=note) + frame, achieved=False)
    return _call(*action, text=note)


# ====================================================================== planning


def plan_actions(
    task: Task,
    brief: ParsedBrief,
    *,
    found: dict[str, BriefObject] | None = None,
    left: tuple[float, float] = VIEWER_LEFT,
    answers: tuple[str, ...] = (),
    notes: list[str] | None = None,
) -> list[Action]:
    """The tool calls that do ``task`` in the scene ``brief`` shows (and the objects
    ``find_objects`` reported); raises :class:`Unresolved` for a mention it cannot
    ground. ``left`` is the viewer's left (:func:`~harness.planner.grounding.viewer_left`);
    ``answers`` the user's answers to its questions, which settle ambiguities; ``notes``
    receives the report's lines on things taken for words they do not fit."""
    scene = Scene({**(found or {}), **brief.objects}, left=left, answers=answers)
    scene.notes = notes if notes is not None else []
    actions = [a for step in task.steps for a in _step_actions(step, scene)]
    named = named_left(scene.items.values())
    if named is None or named.agrees(left):
        return actions
    # the scene's own names put left on the other side (sides.py): read that way too
    try:
        other = Scene(scene.items, left=named.direction, answers=answers)
        other.notes = []
        alt = [a for step in task.steps for a in _step_actions(step, other)]
    except Unresolved:
        return actions
    differ = [(a, b) for a, b in zip(_refs(actions), _refs(alt), strict=False) if a != b] or [
        (str(actions), str(alt))
    ]
    camera, scene_own = differ[0]
    if alt == actions:
        return actions
    for answer in reversed(answers):
        if camera in answer and scene_own not in answer:
            return actions
        if scene_own in answer and camera not in answer:
            scene.notes[:] = other.notes
            return alt
    raise Unresolved(
        f"left as the camera sees it and as the scene's own names have it ({named.text()}) "
        f"are opposite sides: {camera} by the camera, {scene_own} by the scene's names",
        candidates=(camera, scene_own),
    )


def _refs(actions: list[Action]) -> list[str]:
    """The things a plan's calls name, in order."""
    return [str(a[key]) for _, a in actions for key in ("ref", "target") if key in a]


def _step_actions(step: Step, scene: Scene) -> list[Action]:
    if step.action in ("open", "close"):
        return [(step.action, {"ref": openable(step.subject, scene)})]
    if step.action in ("turn_on", "turn_off"):
        refs = ground(step.subject, scene, movable=False)
        return [(step.action, {"ref": refs[0]})]
    subjects = ground(step.subject, scene, movable=True)
    if step.action == "pick":
        return [("pick", {"ref": ref}) for ref in subjects]
    assert step.target is not None
    target, relation = _destination(step, scene)
    if any(target == ref or target.startswith(ref + "_") for ref in subjects):
        raise Unresolved(f"{step.subject.text()} cannot go {relation} itself")
    if step.action == "push":
        return [("push", {"ref": ref, "target": target}) for ref in subjects]
    actions: list[Action] = []
    for ref in subjects:
        actions.append(("pick", {"ref": ref}))
        arguments = {"ref": ref, "target": target}
        if relation in ("in", "on"):
            arguments["relation"] = relation
        actions.append(("place", arguments))
    return actions


def _destination(step: Step, scene: Scene) -> tuple[str, str]:
    """(target ref, relation) of a place or push."""
    assert step.target is not None
    relation = step.relation
    if relation in _SIDE_WORD:
        return _table_area(step.target, _SIDE_WORD[relation], scene), "on"
    if relation == "under":  # on the surface below the one the target names
        on = _destination(Step(action="place", subject=step.subject, target=step.target), scene)
        return under(scene.items[on[0]], step.target, scene), "on"
    if step.target.part:
        region = ground_part(step.target, scene)
        if relation is None:
            relation = "in" if "container" in region.tags else "on"
        return region.ref, relation
    refs = ground(step.target, scene, movable=None)
    item = scene.items[refs[0]]
    regions = [r for r in scene.regions_of(item.ref) if not is_area(r)]
    inside = [r for r in regions if "container" in r.tags]
    surfaces = [r for r in regions if "surface" in r.tags]
    if relation is None:
        relation = "in" if inside and not surfaces else "on"
    if relation == "in" and inside:
        if len(inside) > 1:
            names = ", ".join(sorted(r.ref for r in inside))
            raise Unresolved(f"{step.target.text()} has several insides ({names}); which one?")
        return inside[0].ref, "in"
    if relation == "on" and surfaces:
        tops = [r for r in surfaces if r.label.split()[:1] == ["top"]] or surfaces
        if len(tops) > 1:
            tops = on_which(step.target, item, tops, scene)
        if len(tops) > 1:
            names = ", ".join(sorted(r.ref for r in tops))
            raise Unresolved(f"{step.target.text()} has several surfaces ({names}); which one?")
        return tops[0].ref, "on"
    return item.ref, relation or "on"


def _table_area(anchor: Mention, side: str, scene: Scene) -> str:
    """The marked table area on ``side`` of what ``anchor`` names ("the front of the
    stove", "the right of the plate")."""
    refs = ground(anchor, scene, movable=None)
    owner = scene.items[refs[0]]
    nouns = {stem(w) for w in owner.label.split()}
    areas = [
        a
        for a in scene.table_areas()
        if side in a.label.split() and nouns & {stem(w) for w in a.label.split()}
    ]
    if len(areas) != 1:
        found = "no" if not areas else "more than one"
        raise Unresolved(f"I see {found} marked area to the {side} of {owner.ref}")
    return areas[0].ref


# ====================================================================== progress


def _answers(items: list[Any]) -> tuple[str, ...]:
    """The user's answers to ``query_user`` in this task, oldest first."""
    from harness.messages import ToolResultItem

    return tuple(
        item.text.removeprefix("The user answered:").strip()
        for item in items
        if isinstance(item, ToolResultItem) and item.name == "query_user" and not item.is_error
    )


def _plan_of(items: list[Any]) -> list[Action] | None:
    for item in items:
        if isinstance(item, AssistantItem) and item.text.startswith(PLAN_PREFIX):
            line = item.text.splitlines()[0].removeprefix(PLAN_PREFIX)
            try:
                return [(str(n), dict(a)) for n, a in json.loads(line)]
            except (ValueError, TypeError):
                return None
    return None


def _notes_of(items: list[Any]) -> list[str]:
    """The plan's notes (:mod:`harness.planner.standins`), written under it on turn one."""
    for item in items:
        if isinstance(item, AssistantItem) and item.text.startswith(PLAN_PREFIX):
            return [line for line in item.text.splitlines()[1:] if line.startswith("Note: ")]
    return []


def _results(items: list[Any]) -> list[tuple[ToolCall, bool, bool]]:
    """(call, succeeded, refused for good: blocked by the envelope, or answered as repeating a
    refusal whose reason still holds) for every call that has a result."""
    from harness.messages import ToolResultItem

    calls: dict[str, ToolCall] = {}
    out: list[tuple[ToolCall, bool, bool]] = []
    for item in items:
        if isinstance(item, AssistantItem):
            for call in item.tool_calls:
                calls[call.id] = call
        elif isinstance(item, ToolResultItem) and item.call_id in calls:
            failed = item.is_error or (
                item.evaluation is not None and item.evaluation.status == "failure"
            )
            final = item.error_kind in ("blocked", "repeated_refusal")
            out.append((calls[item.call_id], not failed, final))
    return out


def _next(plan: list[Action], items: list[Any], brief: ParsedBrief) -> tuple[str, Action] | None:
    """(why, the next call) or None when the whole plan is done.

    A place is done when the Brief shows its object resting on / in the target (the world
    derives those relations from its own predicates), not merely when the call reported
    success; the pick before it is done while the object is in the gripper or placed.
    Other calls are done once a result of theirs succeeded. The next call is the first not
    done; each call is tried at most :data:`MAX_ATTEMPTS` times, and one the envelope
    blocked is not asked again."""
    results = _results(items)

    def reason(call_id: str) -> str:
        texts = [i.text for i in items if getattr(i, "call_id", None) == call_id]
        return texts[-1].splitlines()[0][:300] if texts else "no reason given"

    tries: Counter[int] = Counter()
    succeeded: set[int] = set()
    last: dict[int, bool] = {}  # each call's latest verdict
    judged: dict[int, int] = {}  # and where among the results it came
    for position, (call, ok, blocked) in enumerate(results):
        for index, (name, arguments) in enumerate(plan):
            if (call.name, call.arguments) == (name, arguments):
                if blocked:  # refused for a reason that still holds: asking again changes nothing
                    failed = (c for c, good, _ in results if not good and c.name == name)
                    first = next(c for c in failed if c.arguments == arguments)
                    why = f"{name} {_args_text(arguments)} was refused: {reason(first.id)}"
                    return why, _GIVE_UP
                tries[index] += 1
                last[index] = ok
                judged[index] = position
                if ok:
                    succeeded.add(index)
                break
    for index, at in judged.items():  # a failure a later call on the same thing may undo:
        ref = plan[index][1].get("ref")  # the Brief, the state now, says (a book perched on
        if not last[index] and any(c.arguments.get("ref") == ref for c, _, _ in results[at + 1 :]):
            del last[index]  # the caddy, judged not in it, knocked in by the next pick)
    for index, (name, arguments) in enumerate(plan):
        if step_done(plan, index, brief, succeeded, last):
            continue
        if tries[index] >= MAX_ATTEMPTS:
            return f"{name} {_args_text(arguments)} tried {tries[index]} times", _GIVE_UP
        retry = f" (attempt {tries[index] + 1} of {MAX_ATTEMPTS})" if tries[index] else ""
        text = f"Step {index + 1} of {len(plan)}: {name} {_args_text(arguments)}{retry}."
        return text, (name, arguments)
    return None


def _args_text(arguments: dict[str, Any]) -> str:
    ref = arguments.get("ref", "")
    if "target" in arguments:
        return f"{ref} {arguments.get('relation', 'to')} {arguments['target']}"
    return str(ref)


def _summary(plan: list[Action], items: list[Any], *, done: bool, reason: str = "") -> str:
    lines = ["Plan: " + "; ".join(f"{n} {_args_text(a)}" for n, a in plan) + "."]
    if done:
        lines.append(f"All {len(plan)} steps succeeded (offline planner, privileged skills).")
    else:
        lines.append(f"Gave up: {reason}.")
    return "\n".join(lines)


# ====================================================================== responses


def _call(name: str, arguments: dict[str, Any], *, text: str) -> ModelResponse:
    return ModelResponse(
        text=text, tool_calls=[ToolCall(id=new_id("call"), name=name, arguments=arguments)]
    )


def _report(text: str, achieved: bool) -> ModelResponse:
    line = OUTCOME_ACHIEVED_LINE if achieved else OUTCOME_NOT_ACHIEVED_LINE
    return ModelResponse(text=f"{text}\n{line}")
