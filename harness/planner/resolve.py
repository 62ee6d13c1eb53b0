"""A pick-and-place goal resolved against the scene: which objects move where, what blocks a
step, and what lies outside the workspace the embodiment profile states."""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.messages import ModelRequest
from harness.planner.brief import BriefObject, ParsedBrief
from harness.planner.grammar import Goal, Phrase

__all__ = [
    "HELD",
    "REACH_MARGIN_M",
    "SCENE_FAULT",
    "Step",
    "scene_out_of_reach",
    "step_text",
    "workspace_of",
]

HELD = "gripper"
"""The target of a "pick up X" step: held in the gripper."""
SCENE_FAULT = "the scene's doing"
"""What a refusal says when the scene as given, not a skill, makes the task impossible (a
thing out of reach before anything moved); an eval's failure table groups on it."""


@dataclass(frozen=True)
class Step:
    """One subgoal: put ``ref`` ``relation`` ``target``."""

    ref: str
    target: str
    relation: str


def step_text(step: Step) -> str:
    """``red_cube_1 in tray_1``; ``red_cube_1 held up`` for a pick-up."""
    if step.relation == "held":
        return f"{step.ref} held up"
    return f"{step.ref} {step.relation} {step.target}"


# ====================================================================== resolving the goal


def resolve_phrase(
    goal: Goal, world: dict[str, BriefObject], brief: ParsedBrief
) -> tuple[list[Step], list[str], list[Phrase]]:
    steps: list[Step] = []
    problems: list[str] = []
    missing: list[Phrase] = []
    for clause in goal.clauses:
        if clause.relation == "held":  # pick it up and hold it: no target in the scene
            one = _one(clause.subject, world)
            if one is None:
                problems.append(f"no {clause.subject.text().removeprefix('the ')} in the scene")
                missing.append(clause.subject)
            elif all(s.ref != one for s in steps):
                steps.append(Step(ref=one, target=HELD, relation="held"))
            continue
        target = _one(clause.target, world)
        if target is None:
            problems.append(f"no {clause.target.text().removeprefix('the ')} in the scene")
            missing.append(clause.target)
            continue
        relation = clause.relation or ("in" if world[target].is_container else "on")
        if world[target].is_container:
            relation = "in"
        if clause.clear_table:
            table = table_ref(world)
            subjects = [
                o.ref
                for o in world.values()
                if _movable(o) and (o.on == table or o.held or o.inside == target)
            ]
        elif clause.subject.every:
            subjects = [
                o.ref for o in world.values() if _movable(o) and phrase_matches(clause.subject, o)
            ]
            if (
                brief.omitted
                and clause.subject.kind
                and clause.subject.kind in brief.omitted_summary
            ):
                missing.append(clause.subject)
        else:
            one = _one(clause.subject, world)
            if one is None:
                problems.append(f"no {clause.subject.text().removeprefix('the ')} in the scene")
                missing.append(clause.subject)
                continue
            subjects = [one]
        for ref in sorted(subjects):
            if ref != target and all(s.ref != ref for s in steps):
                steps.append(Step(ref=ref, target=target, relation=relation))
    return steps, problems, missing


def _movable(item: BriefObject) -> bool:
    return not item.is_container and item.kind not in {"table", "surface", "floor", "shelf"}


def phrase_matches(phrase: Phrase, item: BriefObject) -> bool:
    if phrase.ref:
        return item.ref == phrase.ref
    if phrase.kind and item.kind != phrase.kind:
        return False
    return not (phrase.color and item.color != phrase.color)


def _one(phrase: Phrase, world: dict[str, BriefObject]) -> str | None:
    if phrase.ref:
        return phrase.ref if phrase.ref in world else None
    if phrase.kind == "table":
        return table_ref(world)
    candidates = sorted(o.ref for o in world.values() if phrase_matches(phrase, o))
    return candidates[0] if candidates else None


def table_ref(world: dict[str, BriefObject]) -> str | None:
    tables = sorted(o.ref for o in world.values() if o.kind == "table")
    return tables[0] if tables else None


def satisfied(step: Step, world: dict[str, BriefObject]) -> bool:
    item = world.get(step.ref)
    if step.relation == "held":
        return item is not None and item.held
    if item is None or item.held:
        return False
    return item.inside == step.target if step.relation == "in" else item.on == step.target


def blocker_of(step: Step, world: dict[str, BriefObject]) -> str:
    if step.ref not in world:
        return f"{step.ref} is no longer in the scene"
    if step.relation == "on":
        on_target = [o.ref for o in world.values() if o.on == step.target and o.ref != step.ref]
        if on_target:
            return f"{', '.join(on_target)} already on {step.target}"
        on_subject = [o.ref for o in world.values() if o.on == step.ref]
        if on_subject:
            return f"{', '.join(on_subject)} is on top of {step.ref}"
    return ""


_WORKSPACE = re.compile(
    r"^Reachable workspace \(world frame\): x (?P<x0>-?[\d.]+)\.\.(?P<x1>-?[\d.]+), "
    r"y (?P<y0>-?[\d.]+)\.\.(?P<y1>-?[\d.]+)",
    re.MULTILINE,
)
REACH_MARGIN_M = 0.02
"""How far outside the stated workspace an object may be and still be tried (the envelope
clamps overshoots that small)."""


def workspace_of(request: ModelRequest) -> tuple[float, float, float, float] | None:
    """The reachable x and y ranges the embodiment profile states, if it states them."""
    for block in request.system:
        if block.name == "embodiment" and (match := _WORKSPACE.search(block.text)):
            return tuple(float(match.group(k)) for k in ("x0", "x1", "y0", "y1"))  # type: ignore[return-value]
    return None


def out_of_reach(
    step: Step, world: dict[str, BriefObject], reach: tuple[float, float, float, float] | None
) -> str:
    """Why ``step`` cannot be done within the workspace (the object or its target lies
    outside it), or "": a model that knows the profile declines instead of asking the
    safety envelope to block the motion."""
    if reach is None:
        return ""
    x0, x1, y0, y1 = reach
    for ref in (step.ref, step.target):
        item = world.get(ref)
        if item is None or item.held:
            continue
        x, y, _ = item.position
        if not (x0 - REACH_MARGIN_M <= x <= x1 + REACH_MARGIN_M) or not (
            y0 - REACH_MARGIN_M <= y <= y1 + REACH_MARGIN_M
        ):
            return (
                f"{ref} at ({x:.3f}, {y:.3f}) is out of reach (the workspace is x "
                f"{x0:.2f}..{x1:.2f}, y {y0:.2f}..{y1:.2f}); not attempted"
            )
    return ""


def scene_out_of_reach(
    refs: list[str], world: dict[str, BriefObject], reach: tuple[float, float, float, float] | None
) -> str:
    """Why a plan naming ``refs`` cannot be done at all, read before anything moves: one of
    them (or the thing a region of it belongs to: ``basket_1`` for
    ``basket_1_contain_region``) lies outside the stated workspace in the scene as it starts;
    "" otherwise. A benchmark's perturbed scene may put the basket 10 m off the table, or
    throw it or the thing to pick off when its published state settles (objects overlapping
    where they start): the honest answer is that the scene has it out of reach, not a
    skill's failure after the first half of the task was done."""
    for ref in refs:
        owners = [r for r in world if ref == r or ref.startswith(r + "_")]
        if not owners:
            continue
        owner = max(owners, key=len)
        why = out_of_reach(Step(owner, owner, "at"), world, reach)
        if why:
            return (
                f"{why.removesuffix('; not attempted')}, in the scene as it was given "
                f"before anything moved: the task cannot be done here ({SCENE_FAULT}, not "
                "a skill's)"
            )
    return ""
