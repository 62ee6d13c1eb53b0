"""The Brief: the planner contract's grammar, determinism, the token budget, ranking."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness.tokens import TokenEstimator
from scene import OBJECT_LINE, ROBOT_LINE, SceneGraph, render_brief
from scene.brief import Brief
from scene.synthetic import synthetic_scene
from tests.scene_helpers import GRIPPER_STATE, TABLE_TOP, build, cube_on, det, table, tray
from tests.tiers import examples

estimate = TokenEstimator().text

# The contract (BRIEF_CONTRACT.md), written out here independently of scene/brief.py so a
# change to the renderer that breaks the planner's parser fails this file.
REF = r"[a-z0-9_]+"
NUM = r"-?\d+\.\d{3}"
CONTRACT_HEADER = re.compile(rf"^Scene \(world frame, metres; t={NUM}\)$")
CONTRACT_ROBOT = re.compile(
    rf"^robot: gripper at \(({NUM}), ({NUM}), ({NUM})\), (open|closed|unknown), "
    rf"holding (nothing|{REF}(?:, {REF})*)$"
)
CONTRACT_OBJECTS = re.compile(r"^objects \((\d+) of (\d+) shown, most relevant first\):$")
CONTRACT_OBJECT = re.compile(
    rf"^- ({REF}): ([a-z0-9]+(?: [a-z0-9]+)*)(?: \[([^\]]*)\])? at \(({NUM}), ({NUM}), ({NUM})\)"
    r"(.*)$"
)
CONTRACT_TAIL = re.compile(r"^\+(\d+) more objects: (.+); use find_objects$")
RELATION_CLAUSES = {
    "on": re.compile(rf"^on ({REF})$"),
    "in": re.compile(rf"^in ({REF})$"),
    "held": re.compile(r"^held$"),
    "contains": re.compile(rf"^contains ({REF}(?:, {REF})*)$"),
    "near": re.compile(rf"^near ({REF}(?:, {REF})*)$"),
}


def parse_brief(text: str) -> dict[str, object]:
    """Parse a Brief strictly by the contract; fail on any line it does not allow."""
    lines = text.split("\n")
    assert CONTRACT_HEADER.match(lines[0]), lines[0]
    index = 1
    robot = None
    if lines[index].startswith("robot:"):
        robot = CONTRACT_ROBOT.match(lines[index])
        assert robot, lines[index]
        index += 1
    header = CONTRACT_OBJECTS.match(lines[index])
    assert header, lines[index]
    shown, total = int(header.group(1)), int(header.group(2))
    objects: dict[str, dict[str, object]] = {}
    for line in lines[index + 1 : index + 1 + shown]:
        match = CONTRACT_OBJECT.match(line)
        assert match, line
        ref, label, tags, x, y, z, rest = match.groups()
        for number in re.findall(r"-?\d+\.\d+", rest.split(";")[0]):
            assert re.fullmatch(NUM, number), f"size not to 3 decimals: {line}"
        relations: dict[str, object] = {}
        for clause in rest.split("; ")[1:]:
            word = clause.split(" ")[0]
            if word in RELATION_CLAUSES:
                found = RELATION_CLAUSES[word].match(clause)
                assert found, f"bad {word!r} clause {clause!r} in {line}"
                relations[word] = found.group(1).split(", ") if found.groups() else True
        objects[ref] = {
            "label": label,
            "tags": tags.split(", ") if tags else [],
            "position": (float(x), float(y), float(z)),
            "relations": relations,
            "line": line,
        }
    rest_lines = lines[index + 1 + shown :]
    tail = None
    if shown < total:
        tail = CONTRACT_TAIL.match(rest_lines[0])
        assert tail and int(tail.group(1)) == total - shown, rest_lines[0]
        rest_lines = rest_lines[1:]
    assert all(line.startswith("note: ") for line in rest_lines), rest_lines
    return {"robot": robot, "shown": shown, "total": total, "objects": objects, "tail": tail}


def brief_of(graph: SceneGraph, focus: str = "", budget: int = 1500, **kw: object) -> Brief:
    return render_brief(graph, max_tokens=budget, estimate=estimate, focus=focus, **kw)  # type: ignore[arg-type]


def tabletop() -> SceneGraph:
    return build(
        [
            table(),
            tray(),
            det("blue_cube_2", "cube", (0.5, 0.2, TABLE_TOP + 0.024), color="blue"),
            cube_on("red_cube_1", (0.412, -0.105), color="red"),
            cube_on("green_cube_1", (0.46, -0.105), color="green"),
        ],
        t=12.3,
    )


# --------------------------------------------------------------------------- contract


def test_brief_follows_the_contract_and_says_what_the_graph_says() -> None:
    graph = tabletop()
    brief = brief_of(graph, "put the red cube in the tray")
    parsed = parse_brief(brief.text)
    assert brief.text.splitlines()[0] == "Scene (world frame, metres; t=12.300)"
    assert parsed["robot"].groups() == ("0.300", "0.000", "1.000", "open", "nothing")  # type: ignore[union-attr]
    objects = parsed["objects"]
    assert isinstance(objects, dict) and set(objects) == {n.ref for n in graph.objects()}
    for ref, seen in objects.items():
        node = graph.node(ref)
        assert seen["position"] == pytest.approx(node.position, abs=0.0005)
        assert seen["label"] == node.display_label
        rel = graph.relations_of(ref)
        assert seen["relations"].get("on") == ([rel["on"]] if "on" in rel else None)
        assert seen["relations"].get("in") == ([rel["in"]] if "in" in rel else None)
        assert seen["relations"].get("contains") == rel.get("contains")
    tray_line = objects["tray_1"]
    assert tray_line["tags"] == ["container", "open"]
    assert tray_line["relations"]["contains"] == ["blue_cube_2"]
    assert objects["red_cube_1"]["label"] == "red cube"
    assert "; conf 1.00; seen 0.0s ago" in objects["red_cube_1"]["line"]


def test_contract_example_lines_match_the_exported_patterns() -> None:
    """The examples in BRIEF_CONTRACT.md, verbatim."""
    examples = [
        "- red_cube_1: red cube at (0.412, -0.105, 0.645) size 0.040x0.040x0.040; on table_1; "
        "conf 1.00; seen 0.0s ago",
        "- tray_1: tray [container, open] at (0.500, 0.200, 0.630) size 0.200x0.150x0.030; "
        "on table_1; contains red_cube_2; conf 1.00; seen 0.0s ago",
    ]
    for line in examples:
        assert OBJECT_LINE.match(line) and CONTRACT_OBJECT.match(line)
    for line in (
        "robot: gripper at (0.300, 0.000, 0.400), open, holding nothing",
        "robot: gripper at (0.300, 0.000, 0.400), closed, holding red_cube_1",
    ):
        assert ROBOT_LINE.match(line) and CONTRACT_ROBOT.match(line)


def test_held_stale_and_tail_lines() -> None:
    graph = tabletop()
    state = {"ee_position": [0.4, 0.0, 0.9], "gripper_open": False, "holding": "red_cube_1"}
    graph.apply(
        [table(), tray(), cube_on("green_cube_1", (0.46, -0.105), color="green")],
        timestamp=60.0,
        state=state,
    )
    brief = brief_of(graph, "stack things")
    parsed = parse_brief(brief.text)
    assert parsed["robot"].group(5) == "red_cube_1"  # type: ignore[union-attr]
    objects = parsed["objects"]
    assert objects["red_cube_1"]["relations"] == {"held": True}
    assert "; stale (seen 47.7s ago)" in objects["blue_cube_2"]["line"]
    assert next(iter(objects)) == "red_cube_1"  # held first
    small = parse_brief(brief_of(graph, "stack things", budget=110).text)
    assert small["tail"] is not None
    counts = [int(n) for n in re.findall(r"(\d+) \w+", small["tail"].group(2))]  # type: ignore[union-attr]
    assert sum(counts) == small["total"] - small["shown"]


def test_tail_groups_by_kind_and_counts_the_rest() -> None:
    graph = build(synthetic_scene(300, seed=5))
    brief = brief_of(graph, "", budget=300)
    tail = brief.text.splitlines()[-1]
    match = CONTRACT_TAIL.match(tail)
    assert match, tail
    groups = match.group(2).split(", ")
    assert len(groups) == 4 and groups[-1].endswith(" other")
    assert sum(int(g.split(" ")[0]) for g in groups) == brief.omitted


# --------------------------------------------------------------------------- determinism


def test_brief_is_deterministic_whatever_the_insertion_order() -> None:
    detections = synthetic_scene(200, seed=11)
    shuffled = list(detections)
    random.Random(4).shuffle(shuffled)
    a, b = build(detections), build(shuffled)
    focus = "put the red cube in tray_2, then the green ball"
    first = brief_of(a, focus, budget=700)
    assert first == brief_of(a, focus, budget=700)
    assert first.text == brief_of(b, focus, budget=700).text


# --------------------------------------------------------------------------- budget


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.one_of(st.integers(1, 40), st.integers(41, 400), st.sampled_from([1000, 2000])),
    seed=st.integers(0, 10_000),
    budget=st.integers(120, 3000),
    named=st.integers(0, 3),
    hold=st.booleans(),
)
def test_brief_stays_within_budget_and_lists_held_and_named(
    n: int, seed: int, budget: int, named: int, hold: bool
) -> None:
    detections = synthetic_scene(n, seed=seed)
    rng = random.Random(seed)
    refs = [d.ref for d in detections if d.category == "object"]
    assume(refs or not (named or hold))
    held = rng.choice(refs) if hold and refs else None
    state = {"ee_position": [0.0, 0.0, 1.0], "gripper_open": held is None, "holding": held}
    graph = build(detections, state=state)
    names = rng.sample(refs, min(named, len(refs)))
    focus = f"Task: move {' and '.join(names)} somewhere sensible." if names else "tidy up"
    brief = brief_of(graph, focus, budget=budget)
    assert brief.tokens == estimate(brief.text) <= budget
    assert not brief.over_budget
    parsed = parse_brief(brief.text)
    assert parsed["total"] == len(graph.objects())
    if budget >= 400:  # room for the header, robot, tail and four compact lines
        named_only = [ref for ref in names if ref != held]
        must = ([held] if held else []) + named_only
        # held first, then the named ones (in any order), before anything else
        if held:
            assert brief.shown[0] == held
        assert set(brief.shown[: len(must)]) == set(must)


def test_budget_holds_for_a_single_object_and_an_empty_scene() -> None:
    empty = SceneGraph()
    text = brief_of(empty, budget=50).text
    assert (
        text == "Scene (world frame, metres; t=0.000)\nobjects (0 of 0 shown, most relevant first):"
    )
    one = build([cube_on("red_cube_1", (0.0, 0.0), color="red")])
    tiny = brief_of(one, "red cube", budget=60)
    assert tiny.tokens <= 60 and parse_brief(tiny.text)


def test_notes_are_inside_the_budget() -> None:
    graph = build(synthetic_scene(100, seed=2))
    note = "perception failed this turn (TimeoutError); positions may be out of date"
    brief = brief_of(graph, budget=400, notes=[note])
    assert brief.text.endswith(f"note: {note}") and brief.tokens <= 400


# --------------------------------------------------------------------------- ranking


def test_ranking_tiers() -> None:
    graph = build(
        [
            table(),
            tray(),
            cube_on("blue_cube_1", (0.31, 0.0), color="blue"),  # closest to the gripper
            cube_on("red_cube_1", (0.9, 0.3), color="red"),
            cube_on("red_cube_2", (0.8, 0.3), color="red"),
            cube_on("green_cube_1", (0.6, -0.3), color="green"),
            cube_on("yellow_cube_1", (0.1, -0.3), color="yellow"),
        ],
        t=100.0,
    )
    # nothing named: closest to the gripper (0.3, 0, 1) first
    order = brief_of(graph, "", recent_s=0.0).shown
    assert order[0] == "blue_cube_1"
    # by ref; then by label (red cubes with their colour, the tray has none), closest
    # first; then cubes of other colours
    order = brief_of(graph, "put green_cube_1 and the red cubes in the tray", recent_s=0.0).shown
    assert order[:4] == ["green_cube_1", "tray_1", "red_cube_2", "red_cube_1"]
    assert set(order[4:6]) == {"blue_cube_1", "yellow_cube_1"}
    # the last target comes before the merely near
    order = brief_of(graph, "", last_targets=["yellow_cube_1"], recent_s=0.0).shown
    assert order[0] == "yellow_cube_1"
    # recently changed objects come before unchanged ones
    graph.apply(
        [table(), tray(), cube_on("green_cube_1", (0.6, -0.25), color="green")],
        timestamp=101.0,
        state=GRIPPER_STATE,
    )
    assert brief_of(graph, "", recent_s=5.0).shown[0] == "green_cube_1"
    # "cubes" names every cube, "the tray" only trays: tray_1 ranks with the cubes
    assert set(brief_of(graph, "all cubes", recent_s=0.0).shown[:5]) == {
        "blue_cube_1",
        "red_cube_1",
        "red_cube_2",
        "green_cube_1",
        "yellow_cube_1",
    }


def test_a_ref_in_the_focus_does_not_name_its_kind() -> None:
    graph = build([table(), tray("tray_1"), tray("tray_2", (0.9, -0.3)), tray("tray_3", (0.2, 0))])
    order = brief_of(graph, "look at tray_2", recent_s=0.0).shown
    assert order[0] == "tray_2"
    assert order[1] == "tray_3"  # then by distance to the gripper, not "named"


def test_tags_are_flags_and_short_words() -> None:
    node = cube_on(
        "red_cube_1",
        (0.3, 0.0),
        color="red",
        attributes={"fragile": True, "mass_kg": 0.05, "material": "glass", "note": "x" * 40},
    )
    line = brief_of(build([table(), node]), "").text.splitlines()[3]
    assert line.startswith("- red_cube_1: red cube [fragile, material=glass] at (")
