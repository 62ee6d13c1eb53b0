"""The Brief: the scene graph as a short, deterministic text the model reads every turn.

The line grammar is a contract with the offline planner, which parses it
(``BRIEF_CONTRACT.md``; :data:`OBJECT_LINE` is its object line as a regular expression)::

    Scene (world frame, metres; t=12.300)
    robot: gripper at (0.300, 0.000, 0.400), closed, holding red_cube_1
    objects (2 of 42 shown, most relevant first):
    - red_cube_1: red cube at (0.412, -0.105, 0.645) size 0.040x0.040x0.040; held; ...
    - tray_1: tray [container, open] at (0.500, 0.200, 0.630) ...; contains blue_cube_2; ...
    +40 more objects: 12 cups, 10 cubes, 18 other; use find_objects

**Bounded**: the text never exceeds ``max_tokens`` as measured by the ``estimate`` function
the caller passes (the harness passes its own token estimator, so this package stays
independent of it). **Relevant first**: objects are ranked in tiers (held; named by ref in
the focus text; named by label, with the colour when the focus gives one; the last action's
target; recently changed), each tier closest to the gripper or last target first, stale
objects last, ties by ref; objects that do not fit are counted in one summary line.
Ranking sorts once, so rendering is O(n log n) in objects; only shown lines are formatted.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from scene.graph import SceneGraph
from scene.nodes import SceneNode, label_words, plural, singular

__all__ = [
    "OBJECT_LINE",
    "ROBOT_LINE",
    "Brief",
    "Ranked",
    "object_line",
    "rank_objects",
    "render_brief",
]

_NUM = r"-?\d+\.\d{3}"
OBJECT_LINE = re.compile(
    r"^- (?P<ref>[a-z0-9_]+): (?P<label>[^\W_]+(?: [^\W_]+)*)"
    r"(?: \[(?P<tags>[^\]]*)\])?"
    rf" at \((?P<x>{_NUM}), (?P<y>{_NUM}), (?P<z>{_NUM})\)"
    r"(?P<rest>.*)$"
)
"""An object line of the Brief (the contract's grammar; ``rest`` holds size and clauses)."""
ROBOT_LINE = re.compile(
    rf"^robot: gripper at \(({_NUM}), ({_NUM}), ({_NUM})\), (open|closed|unknown), "
    r"holding (nothing|[a-z0-9_]+(?:, [a-z0-9_]+)*)$"
)

HELD, NAMED_REF, NAMED_LABEL, LAST_TARGET, RECENT, OTHER = range(6)
MUST_SHOW = NAMED_LABEL
"""Tiers up to this one are shown even in the compact form when a full line does not fit."""
CONTAINS_SHOWN = 6
NEAR_SHOWN = 3
TAIL_GROUPS = 3
TAIL_LABEL_CHARS = 24
_TAG_CHARS = re.compile(r"[^\w=.\- ]+")


class Brief(BaseModel):
    """A rendered Brief and what it left out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    tokens: int
    shown: list[str] = Field(default_factory=list)
    total: int = 0
    """Objects in the graph (robot excluded)."""
    over_budget: bool = False
    """True only when even the header and robot line exceed the budget."""

    @property
    def omitted(self) -> int:
        return self.total - len(self.shown)


class Ranked(NamedTuple):
    node: SceneNode
    tier: int


# ====================================================================== ranking


def _focus_words(focus: str, graph: SceneGraph) -> tuple[set[str], set[str]]:
    """(ref-like tokens, singular words) of the focus text. A ref names one object, not
    its kind: "tray_1" does not make every tray relevant."""
    tokens = set(re.findall(r"[a-z0-9_]+", focus.lower()))
    words = {
        singular(word) for token in tokens if token not in graph for word in label_words(token)
    }
    return tokens, words


def rank_objects(
    graph: SceneGraph,
    *,
    focus: str = "",
    last_targets: Sequence[str] = (),
    recent_s: float = 10.0,
) -> list[Ranked]:
    """Every object, most relevant first (see the module docstring for the tiers)."""
    tokens, words = _focus_words(focus, graph)
    objects = graph.objects()
    held = set(graph.held())
    targets = [t for t in last_targets if t in graph]
    anchors = [graph.node(t).position for t in targets]
    gripper = graph.robot().gripper
    if gripper is not None:
        anchors.append(gripper)
    colours_named = {
        colour
        for colour in {node.color for node in objects if node.color}
        if set(label_words(colour)) <= tokens
    }
    target_set = set(targets)
    now = graph.now

    named: dict[tuple[str, str | None], bool] = {}
    keyed: list[tuple[tuple[int, bool, float, float, str], Ranked]] = []
    for node in objects:
        kind = (node.label, node.color)
        if kind not in named:
            named[kind] = _label_named(node, words, tokens, colours_named)
        recency = 0.0
        if node.ref in held:
            tier = HELD
        elif node.ref in tokens:
            tier = NAMED_REF
        elif named[kind]:
            tier = NAMED_LABEL
        elif node.ref in target_set:
            tier = LAST_TARGET
        elif now - node.changed_at <= recent_s:
            tier = RECENT
            recency = -node.changed_at
        else:
            tier = OTHER
        distance = min((math.dist(node.position, a) for a in anchors), default=0.0)
        keyed.append(((tier, node.stale, recency, distance, node.ref), Ranked(node, tier)))
    keyed.sort(key=lambda pair: pair[0])
    return [ranked for _, ranked in keyed]


def _label_named(
    node: SceneNode, words: set[str], tokens: set[str], colours_named: set[str]
) -> bool:
    label = {singular(word) for word in label_words(node.label)}
    if not label or not label <= words:
        return False
    if not colours_named or node.color is None:
        return True
    return set(label_words(node.color)) <= tokens


# ====================================================================== lines


def _num(value: float) -> str:
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text


def _xyz(values: Sequence[float]) -> str:
    return f"({_num(values[0])}, {_num(values[1])}, {_num(values[2])})"


def _tags(node: SceneNode) -> list[str]:
    tags: list[str] = []
    if node.category in ("container", "surface"):
        tags.append(node.category)
    if node.is_open is not None:
        tags.append("open" if node.is_open else "closed")
    # Flags and short words only ("fragile", "material=glass"); numbers such as a mass
    # would cost tokens on every line and are in find_objects' records.
    extra: list[str] = []
    for key in sorted(node.attributes):
        value = node.attributes[key]
        if value is True:
            extra.append(str(key))
        elif isinstance(value, str) and value and len(value) <= 16:
            extra.append(f"{key}={value}")
    for tag in extra[:3]:
        clean = _TAG_CHARS.sub("", tag).strip()[:24]
        if clean and clean not in tags:
            tags.append(clean)
    return tags


def object_line(
    node: SceneNode, relations: dict[str, object], now: float, *, compact: bool = False
) -> str:
    """One object's line. ``compact`` drops tags, size, near and provenance clauses."""
    head = f"- {node.ref}: {node.display_label}"
    tags = [] if compact else _tags(node)
    if tags:
        head += f" [{', '.join(tags)}]"
    head += f" at {_xyz(node.position)}"
    if node.size is not None and not compact:
        head += " size " + "x".join(_num(v) for v in node.size)
    clauses: list[str] = []
    if "held_by" in relations:
        clauses.append("held")
    if "in" in relations:
        clauses.append(f"in {relations['in']}")
    if "on" in relations:
        clauses.append(f"on {relations['on']}")
    contains = list(relations.get("contains", ()))  # type: ignore[call-overload]
    if contains:
        limit = 2 if compact else CONTAINS_SHOWN
        clauses.append("contains " + ", ".join(contains[:limit]))
        if len(contains) > limit:
            clauses.append(f"{len(contains) - limit} more inside")
    near = list(relations.get("near", ()))  # type: ignore[call-overload]
    if near and not compact:
        clauses.append("near " + ", ".join(near[:NEAR_SHOWN]))
    clauses.append(f"conf {node.confidence:.2f}")
    age = max(0.0, now - node.last_seen)
    clauses.append(f"stale (seen {age:.1f}s ago)" if node.stale else f"seen {age:.1f}s ago")
    if not compact and node.provenance == "evaluator":
        clauses.append("confirmed by evaluator, position approximate until seen")
    elif not compact and node.provenance == "user":
        clauses.append("reported by user")
    if node.frame != "world":
        clauses.append(f"frame {node.frame}, not world")
    return head + "; " + "; ".join(clauses)


def _robot_line(graph: SceneGraph) -> str | None:
    robot = graph.robot()
    if robot.gripper is None:
        return None
    state = {True: "open", False: "closed", None: "unknown"}[robot.gripper_open]
    holding = ", ".join(robot.holding) if robot.holding else "nothing"
    return f"robot: gripper at {_xyz(robot.gripper)}, {state}, holding {holding}"


def _objects_header(shown: int, total: int) -> str:
    return f"objects ({shown} of {total} shown, most relevant first):"


def _tail(groups: Counter[str], omitted: int) -> str:
    ordered = sorted(groups.items(), key=lambda item: (-item[1], item[0]))
    parts = [
        f"{count} {(plural(name) if count != 1 else name)[:TAIL_LABEL_CHARS]}"
        for name, count in ordered[:TAIL_GROUPS]
    ]
    rest = sum(count for _, count in ordered[TAIL_GROUPS:])
    if rest:
        parts.append(f"{rest} other")
    return f"+{omitted} more objects: {', '.join(parts)}; use find_objects"


def _worst_tail(labels: set[str], total: int) -> str:
    """A tail line at least as long as any this scene can produce (the budget reserve):
    the longest group names, with the largest counts."""
    names = heapq.nlargest(TAIL_GROUPS, (len(plural(label)[:TAIL_LABEL_CHARS]) for label in labels))
    groups = [f"{total} " + "x" * length for length in names]
    return f"+{total} more objects: {', '.join(groups)}, {total} other; use find_objects"


# ====================================================================== render


def render_brief(
    graph: SceneGraph,
    *,
    max_tokens: int,
    estimate: Callable[[str], int],
    focus: str = "",
    last_targets: Sequence[str] = (),
    recent_s: float = 10.0,
    notes: Sequence[str] = (),
) -> Brief:
    """Render the Brief of ``graph`` within ``max_tokens`` (see the module docstring).

    ``focus`` is the text that names what matters (instruction, revisions, Task Notes);
    ``last_targets`` are the refs the last confirmed action involved; ``notes`` are extra
    lines (``note: ...``) such as a perception failure, kept within the budget.
    """
    now = graph.now
    ranked = rank_objects(graph, focus=focus, last_targets=last_targets, recent_s=recent_s)
    total = len(ranked)
    head = [f"Scene (world frame, metres; t={_num(now)})"]
    robot = _robot_line(graph)
    if robot is not None:
        head.append(robot)
    note_lines = [f"note: {' '.join(note.split())}" for note in notes]

    def cost(line: str) -> int:
        return estimate(line + "\n")

    fixed = sum(cost(line) for line in (*head, *note_lines)) + cost(_objects_header(total, total))
    reserve = cost(_worst_tail({r.node.label for r in ranked}, total))
    lines: list[str] = []
    used = 0
    for index, (node, tier) in enumerate(ranked):
        allowance = max_tokens - fixed - (0 if index == total - 1 else reserve)
        relations = graph.relations_of(node.ref)
        line = object_line(node, relations, now)
        if used + cost(line) > allowance and tier <= MUST_SHOW:
            line = object_line(node, relations, now, compact=True)
        if used + cost(line) > allowance:
            break
        lines.append(line)
        used += cost(line)

    groups: Counter[str] = Counter(ranked_node.node.label for ranked_node in ranked[len(lines) :])

    def assemble(count: int) -> str:
        body = [*head, _objects_header(count, total), *lines[:count]]
        if count < total:
            omitted = Counter(groups)
            for ranked_node in ranked[count : len(lines)]:
                omitted[ranked_node.node.label] += 1
            body.append(_tail(omitted, total - count))
        return "\n".join([*body, *note_lines])

    count = len(lines)
    text = assemble(count)
    tokens = estimate(text)
    while tokens > max_tokens and count > 0:
        count -= 1
        text = assemble(count)
        tokens = estimate(text)
    return Brief(
        text=text,
        tokens=tokens,
        shown=[ranked_node.node.ref for ranked_node in ranked[:count]],
        total=total,
        over_budget=tokens > max_tokens,
    )
