"""The offline planner in a world with fixtures (LIBERO's scenes): it reads the instruction
into a typed goal, grounds every mention in the Brief by words and positions, and refuses
what it cannot ground. Oracles are independent of the planner: the published BDDL goals
(test data, tests/libero_data) say which predicates a task needs; the scene layouts say
which bowl a spatial phrase means."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.fleet.corrupt import KINDS, corrupt
from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    RefreshedBlock,
    SystemBlock,
    ToolResultItem,
    ToolSpec,
    Verdict,
)
from harness.planner import Planner
from harness.planner.brief import parse_brief
from harness.planner.grounding import Unresolved
from harness.planner.household import plan_actions
from harness.planner.language import parse_task
from tests.libero_briefs import (
    CONT,
    FIX,
    GROCERIES,
    OBJ,
    SURF,
    brief,
    groceries,
    kitchen,
    kitchen_10,
    living_room,
)
from tests.tiers import examples

TRAY = "wooden_tray_1_contain_region"
DATA = json.loads(
    (Path(__file__).parents[1] / "libero_data" / "published_instructions.json").read_text()
)
TOOLS = ["pick", "place", "open", "close", "turn_on", "turn_off", "push", "update_task_notes"]


def plan(instruction: str, entries: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    task = parse_task(instruction)
    assert task.ok, task.problem
    return plan_actions(task, parse_brief(brief(entries)))


# ====================================================================== the words


def _goal_actions(goal: str, instruction: str) -> Counter[str]:
    """What the BDDL goal needs, as tool names (the independent oracle)."""
    needed: Counter[str] = Counter()
    if re.search(r"\b(?:open|opening)\b", instruction.lower()) and "Open" not in goal:
        needed["open"] += 1  # "open the drawer and put the bowl inside": In needs it open
    for predicate in goal.replace("(And", "").replace(")", " ").split("(")[1:]:
        name = predicate.split()[0]
        if name in ("On", "In"):
            # pushed, slid, or moved (neither carried nor slid) to a marked table area
            to_area = re.search(r"_table_\w+_region", predicate)
            pushed = re.match(r"^(?:push|slide the plate)\b", instruction.lower()) or (
                to_area and re.match(r"^(?:move|relocate)\b", instruction.lower())
            )
            verb = "push" if pushed else "place"
            needed[verb] += 1
        else:
            needed[
                {"Open": "open", "Close": "close", "Turnon": "turn_on"}.get(name, "turn_off")
            ] += 1
    return needed


def _step_actions(instruction: str) -> Counter[str]:
    task = parse_task(instruction)
    assert task.ok, f"{instruction!r}: {task.problem}"
    counted: Counter[str] = Counter()
    for step in task.steps:
        many = max(step.subject.count, len(step.subject.conjuncts) if step.subject.both else 1)
        if step.subject.conjuncts and not step.subject.both:
            many = 1 if "yellow" in step.subject.words else len(step.subject.conjuncts)
        counted[step.action] += many
    return counted


@pytest.mark.parametrize("task", DATA["tasks"], ids=lambda t: f"{t['suite']}:{t['instruction']}")
def test_every_published_instruction_parses_into_what_its_goal_needs(task: dict[str, str]) -> None:
    """120 published and LIBERO-PRO (rephrased, changed-task) instructions: the parsed
    steps do what the BDDL goal's predicates ask, one place per On/In."""
    if "not between" in task["instruction"]:
        pytest.skip("negated qualifier: grounding decides, tested below")
    if "Turnon" in task["goal"] and not re.search(r"turn|switch|ignite", task["instruction"]):
        pytest.xfail("the BDDL goal also asks for the stove on, which the instruction never says")
    assert _step_actions(task["instruction"]) == _goal_actions(task["goal"], task["instruction"])


@pytest.mark.parametrize("entry", DATA["rephrasings"], ids=lambda r: r["instruction"])
def test_every_libero_pro_rephrasing_parses(entry: dict[str, str]) -> None:
    """LIBERO-PRO's 119 language perturbations (ood_language.yaml) all read as a goal."""
    task = parse_task(entry["instruction"])
    assert task.ok, task.problem
    assert all(step.action in {"place", "open", "close", "turn_on", "push"} for step in task.steps)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "the butter the basket",
        "basket the in butter put",
        "please",
        "and then",
        "pick",
        "put the butter in the",
        "place it on the plate",
        "open it",
    ],
)
def test_instructions_without_a_goal_are_problems(text: str) -> None:
    assert not parse_task(text).ok


# ====================================================================== spatial grounding

FAR = (0.35, 0.35, 0.02)
LAYOUTS: dict[
    str, tuple[tuple[float, float, float], str, tuple[float, float, float], list[str]]
] = {
    # qualifier: (target bowl position, its relation clause, distractor, phrasings)
    "between": (
        (0.54, 0.17, 0.02),
        "on main_table",
        (0.80, -0.10, 0.02),
        [
            "between the plate and the ramekin",
            "between plate and ramekin",
            "from between the plate and the ramekin",
        ],
    ),
    "next_to_box": (
        (0.78, -0.08, 0.02),
        "on main_table",
        FAR,
        ["next to the cookies box", "beside the cookie box", "near cookie box", "by the cookies"],
    ),
    "on_box": (
        (0.73, 0.03, 0.07),
        "on cookies_1",
        FAR,
        [
            "on the cookies box",
            "on the cookie box",
            "resting on cookie box",
            "off the cookie box",
            "from the cookie box",
        ],
    ),
    "on_ramekin": (
        (0.46, 0.20, 0.07),
        "on glazed_rim_porcelain_ramekin_1",
        (0.80, -0.10, 0.02),
        ["on the ramekin", "from the ramekin", "sitting on the ramekin", "off ramekin"],
    ),
    "on_stove": (
        (0.25, -0.14, 0.06),
        "on flat_stove_1_cook_region",
        FAR,
        ["on the stove", "from the stove", "off the stove", "on the cooktop"],
    ),
    "in_drawer": (
        (0.62, -0.27, 0.15),
        "in wooden_cabinet_1_top_region",
        FAR,
        [
            "in the top layer of the wooden cabinet",
            "in the top drawer of the wooden cabinet",
            "from the top drawer",
            "inside the top drawer",
            "in the cabinet top drawer",
            "in the cabinet's top drawer",
        ],
    ),
    "on_cabinet": (
        (0.69, -0.27, 0.26),
        "on wooden_cabinet_1_top_side",
        FAR,
        [
            "on the wooden cabinet",
            "on top of the cabinet",
            "on the cabinet top",
            "from the cabinet",
        ],
    ),
    "center": (
        (0.58, 0.0, 0.02),
        "on main_table",
        FAR,
        [
            "from table center",
            "from the table center",
            "at the center of the table",
            "in the middle of the table",
        ],
    ),
    "next_to_plate": (
        (0.62, 0.31, 0.02),
        "on main_table",
        (0.35, -0.35, 0.02),
        ["next to the plate", "beside the plate", "by the plate"],
    ),
    "next_to_ramekin": (
        (0.40, 0.31, 0.02),
        "on main_table",
        (0.80, -0.10, 0.02),
        ["next to the ramekin", "beside ramekin", "near the ramekin"],
    ),
}
SENTENCES = [
    "pick the {bowl} {where} and place it on the plate",
    "Pick up the {bowl} {where} and place it on the plate",
    "lift the {bowl} {where} and set it on plate",
    "grab the {bowl} {where} and put it onto the plate",
    "take {bowl} {where} and place on plate",
    "move the {bowl} {where} onto the plate",
    "move the {bowl} {where} to the plate",
]
BOWLS = ["akita black bowl", "black bowl", "bowl"]


def spatial_scene(layout: str, swap: bool, offset: tuple[float, float]) -> tuple[list[Any], str]:
    target, rest, distractor, _ = LAYOUTS[layout]
    chosen, other = (
        ("akita_black_bowl_2", "akita_black_bowl_1")
        if swap
        else ("akita_black_bowl_1", "akita_black_bowl_2")
    )
    entries = kitchen({chosen: target, other: distractor}, {chosen: rest})
    dx, dy = offset
    moved = [(r, lab, tags, (x + dx, y + dy, z), tail) for r, lab, tags, (x, y, z), tail in entries]
    return moved, chosen


def plans_the_same_calls(said: str, told: str, layout: str, swap: bool) -> None:
    """``said`` plans exactly the calls ``told`` plans in the spatial scene ``layout``, and
    picks the bowl the layout means first (a rewording read in another form)."""
    entries, chosen = spatial_scene(layout, swap=swap, offset=(0.0, 0.0))
    calls = plan(said, entries)
    assert calls == plan(told, entries)
    assert calls[0] == ("pick", {"ref": chosen})


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layout=st.sampled_from(sorted(LAYOUTS)),
    phrasing=st.integers(0, 10),
    sentence=st.sampled_from(SENTENCES),
    bowl=st.sampled_from(BOWLS),
    swap=st.booleans(),
    dx=st.floats(-0.2, 0.2),
    dy=st.floats(-0.2, 0.2),
)
def test_the_bowl_a_spatial_phrase_names_is_the_one_there(
    layout: str, phrasing: int, sentence: str, bowl: str, swap: bool, dx: float, dy: float
) -> None:
    """Ten qualifiers, their rephrasings, seven sentence shapes, three ways to name the bowl,
    the bowls' refs swapped (LIBERO-PRO's swap) and the whole scene moved: the bowl picked
    is the one the phrase describes, and it goes on the plate."""
    phrases = LAYOUTS[layout][3]
    where = phrases[phrasing % len(phrases)]
    entries, chosen = spatial_scene(layout, swap, (dx, dy))
    actions = plan(sentence.format(bowl=bowl, where=where), entries)
    assert actions == [
        ("pick", {"ref": chosen}),
        ("place", {"ref": chosen, "target": "plate_1", "relation": "on"}),
    ]


@pytest.mark.parametrize("swap", [False, True])
def test_not_between_is_the_other_bowl(swap: bool) -> None:
    entries, chosen = spatial_scene("between", swap, (0.0, 0.0))
    actions = plan(
        "Pick the akita black bowl not between the plate and the ramekin and place it on the plate",
        entries,
    )
    other = {"akita_black_bowl_1", "akita_black_bowl_2"} - {chosen}
    assert actions[0] == ("pick", {"ref": other.pop()})


def test_two_bowls_alike_and_no_qualifier_is_a_refusal() -> None:
    entries = kitchen({"akita_black_bowl_1": (0.5, 0.3, 0.02), "akita_black_bowl_2": FAR})
    with pytest.raises(Unresolved, match="could be any of"):
        plan("put the bowl on the plate", entries)


def test_two_bowls_equally_between_is_a_refusal() -> None:
    mid = (0.54, 0.17, 0.02)
    entries = kitchen({"akita_black_bowl_1": mid, "akita_black_bowl_2": (0.545, 0.175, 0.02)})
    with pytest.raises(Unresolved, match="equally"):
        plan("pick the bowl between the plate and the ramekin and put it on the plate", entries)


def _bottle_scene(*bottles: tuple[str, str]) -> list[Any]:
    return [
        *[
            (ref, label, OBJ, (0.45, 0.05 * i, 0.1), "on main_table")
            for i, (ref, label) in enumerate(bottles)
        ],
        ("brown_rack_1", "brown rack", FIX, (0.4, -0.25, 0.2), ""),
        ("brown_rack_1_top_region", "top of brown rack", SURF, (0.4, -0.2, 0.25), ""),
    ]


def test_a_replaced_object_of_the_named_kind_is_taken_when_it_is_the_only_one() -> None:
    """LIBERO-PRO's _object variants keep the words ("the wine bottle") and replace the
    thing (a white bottle): the only bottle there is taken, the plan naming it; before,
    "I see no wine bottle" ended 2 of libero_goal_object's 10 episodes."""
    entries = _bottle_scene(("white_bottle_1", "white bottle"))
    actions = plan("put the wine bottle on the rack", entries)
    assert actions[0] == ("pick", {"ref": "white_bottle_1"})
    assert actions[1][1]["target"] == "brown_rack_1_top_region"


@pytest.mark.parametrize(
    ("instruction", "bottles"),
    [
        # two of the kind: which one is a question, not a guess
        (
            "put the wine bottle on the rack",
            [("white_bottle_1", "white bottle"), ("ketchup_1", "ketchup bottle")],
        ),
        # a colour said that the only one lacks
        ("put the red bottle on the rack", [("white_bottle_1", "white bottle")]),
        # another kind altogether
        ("put the wine glass on the rack", [("white_bottle_1", "white bottle")]),
    ],
)
def test_no_replaced_object_is_guessed(instruction: str, bottles: list[tuple[str, str]]) -> None:
    with pytest.raises(Unresolved):
        plan(instruction, _bottle_scene(*bottles))


# ====================================================================== fixtures and parts


ONE_BOWL = {"akita_black_bowl_1": (0.5, 0.3, 0.02)}


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [
        (
            "Open the middle layer of the drawer",
            [("open", {"ref": "wooden_cabinet_1_middle_region"})],
        ),
        ("open the cabinet's middle drawer", [("open", {"ref": "wooden_cabinet_1_middle_region"})]),
        (
            "pull the middle drawer of the cabinet",
            [("open", {"ref": "wooden_cabinet_1_middle_region"})],
        ),
        ("slide out the middle drawer", [("open", {"ref": "wooden_cabinet_1_middle_region"})]),
        (
            "open the bottom drawer of the cabinet",
            [("open", {"ref": "wooden_cabinet_1_bottom_region"})],
        ),
        ("Turn on the stove", [("turn_on", {"ref": "flat_stove_1"})]),
        ("switch on the stove", [("turn_on", {"ref": "flat_stove_1"})]),
        ("turn the stove on", [("turn_on", {"ref": "flat_stove_1"})]),
        ("ignite the stove", [("turn_on", {"ref": "flat_stove_1"})]),
        ("Turn off the stove", [("turn_off", {"ref": "flat_stove_1"})]),
        (
            "Push the plate to the front of the stove",
            [("push", {"ref": "plate_1", "target": "main_table_stove_front_region"})],
        ),
        (
            "slide the plate toward the front of the stove",
            [("push", {"ref": "plate_1", "target": "main_table_stove_front_region"})],
        ),
        (
            "push the plate forward to the stove",
            [("push", {"ref": "plate_1", "target": "main_table_stove_front_region"})],
        ),
    ],
)
def test_fixtures_and_their_parts(instruction: str, expected: list[Any]) -> None:
    assert plan(instruction, kitchen(ONE_BOWL)) == expected


BOWL_PLACES = {
    "Put the bowl on the stove": "flat_stove_1_cook_region",
    "place the bowl on the stove": "flat_stove_1_cook_region",
    "set the bowl down on the stove": "flat_stove_1_cook_region",
    "Put the bowl on the top of the drawer": "wooden_cabinet_1_top_side",
    "put the bowl on top of the cabinet": "wooden_cabinet_1_top_side",
    "put the bowl above the cabinet": "wooden_cabinet_1_top_side",
    "set the bowl down on the cabinet top": "wooden_cabinet_1_top_side",
    "Put the bowl on the plate": "plate_1",
    "place the bowl on top of the plate": "plate_1",
    "put the bowl onto the plate": "plate_1",
}


@pytest.mark.parametrize(("instruction", "target"), sorted(BOWL_PLACES.items()))
def test_place_targets_are_the_regions_the_words_name(instruction: str, target: str) -> None:
    actions = plan(instruction, kitchen(ONE_BOWL))
    assert actions[0] == ("pick", {"ref": "akita_black_bowl_1"})
    assert actions[1][1]["target"] == target and actions[1][1]["relation"] == "on"


@pytest.mark.parametrize(
    "instruction",
    [
        "Open the top layer of the drawer and put the bowl inside",
        "slide open the top drawer and place the bowl in it",
        "put the bowl inside the top drawer after opening it",
        "open the cabinet's top drawer and insert the bowl",
    ],
)
def test_open_then_put_inside(instruction: str) -> None:
    assert plan(instruction, kitchen(ONE_BOWL)) == [
        ("open", {"ref": "wooden_cabinet_1_top_region"}),
        ("pick", {"ref": "akita_black_bowl_1"}),
        (
            "place",
            {
                "ref": "akita_black_bowl_1",
                "target": "wooden_cabinet_1_top_region",
                "relation": "in",
            },
        ),
    ]


@pytest.mark.parametrize(
    "instruction",
    [
        "put the black bowl in the bottom drawer of the cabinet and close it",
        "put black bowl inside bottom drawer and close it",
        "place black bowl in cabinet's bottom drawer and shut",
        "insert black bowl in lower drawer and close",
    ],
)
def test_put_in_a_drawer_and_close_it(instruction: str) -> None:
    assert plan(instruction, kitchen(ONE_BOWL)) == [
        ("pick", {"ref": "akita_black_bowl_1"}),
        (
            "place",
            {
                "ref": "akita_black_bowl_1",
                "target": "wooden_cabinet_1_bottom_region",
                "relation": "in",
            },
        ),
        ("close", {"ref": "wooden_cabinet_1_bottom_region"}),
    ]


@pytest.mark.parametrize(
    ("instruction", "subjects"),
    [
        (
            "put both the alphabet soup and the cream cheese box in the basket",
            ["alphabet_soup_1", "cream_cheese_1"],
        ),
        ("put alphabet soup and cream cheese box in basket", ["alphabet_soup_1", "cream_cheese_1"]),
        ("add cream cheese box with butter into basket", ["butter_1", "cream_cheese_1"]),
        ("put tomato sauce and alphabet soup into basket", ["alphabet_soup_1", "tomato_sauce_1"]),
        ("Pick the ketchup and place it in the basket", ["ketchup_1"]),
        ("grab cream cheese and put into basket", ["cream_cheese_1"]),
        ("place pudding in basket", ["chocolate_pudding_1"]),
        ("move bbq sauce into basket", ["bbq_sauce_1"]),
    ],
)
def test_groceries_into_the_basket(instruction: str, subjects: list[str]) -> None:
    actions = plan(instruction, groceries(GROCERIES))
    picked = sorted(a["ref"] for name, a in actions if name == "pick")
    assert picked == sorted(subjects)
    assert {a["target"] for name, a in actions if name == "place"} == {"basket_1_contain_region"}


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [
        (
            "put the white mug on the left plate and put the yellow and white mug on the right "
            "plate",
            [("porcelain_mug_1", "plate_1"), ("white_yellow_mug_1", "plate_2")],
        ),
        (
            "place white mug on left plate and yellow-white mug on right plate",
            [("porcelain_mug_1", "plate_1"), ("white_yellow_mug_1", "plate_2")],
        ),
        (
            "put the yellow and white mug on the left plate and put the white mug on the right "
            "plate",
            [("white_yellow_mug_1", "plate_1"), ("porcelain_mug_1", "plate_2")],
        ),
        ("put the red mug on the left plate", [("red_coffee_mug_1", "plate_1")]),
        ("put the coffee mug on the right plate", [("red_coffee_mug_1", "plate_2")]),
        (
            "put the chocolate pudding to the right of the right plate",
            [("chocolate_pudding_1", "living_room_table_plate_right_region")],
        ),
    ],
)
@pytest.mark.parametrize(
    "labels", [("porcelain mug", "white yellow mug"), ("white mug", "yellow and white mug")]
)
def test_mugs_plates_left_and_right(
    instruction: str, expected: list[tuple[str, str]], labels: tuple[str, str]
) -> None:
    """By the mugs' makes or by the words the LIBERO world labels them with."""
    actions = plan(instruction, living_room(*labels))
    places = [(a["ref"], a["target"]) for name, a in actions if name == "place"]
    assert places == expected


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [
        (
            "put the yellow and white mug in the microwave and close it",
            [
                ("pick", "white_yellow_mug_1"),
                ("place", "white_yellow_mug_1"),
                ("close", "microwave_1"),
            ],
        ),
        (
            "put both moka pots on the stove",
            [
                ("pick", "moka_pot_1"),
                ("place", "moka_pot_1"),
                ("pick", "moka_pot_2"),
                ("place", "moka_pot_2"),
            ],
        ),
        (
            "turn on the stove and put the moka pot on it",
            None,  # two moka pots: which one? a refusal
        ),
        (
            "turn on the stove and put the pan on it",
            [
                ("turn_on", "flat_stove_1"),
                ("pick", "chefmate_8_frypan_1"),
                ("place", "chefmate_8_frypan_1"),
            ],
        ),
        (
            "put the left moka pot on the stove",
            [("pick", "moka_pot_1"), ("place", "moka_pot_1")],
        ),
        (
            "pick up the book and place it in the back compartment of the caddy",
            [("pick", "black_book_1"), ("place", "black_book_1")],
        ),
        ("put the book in the caddy", None),  # two compartments: which?
    ],
)
def test_libero_10_kitchen(instruction: str, expected: list[tuple[str, str]] | None) -> None:
    if expected is None:
        with pytest.raises(Unresolved):
            plan(instruction, kitchen_10())
        return
    actions = plan(instruction, kitchen_10())
    assert [(name, a["ref"]) for name, a in actions] == expected
    if "caddy" in instruction:
        assert actions[1][1]["target"] == "desk_caddy_1_back_contain_region"
    if "stove" in instruction and "pot" in instruction:
        assert actions[1][1]["target"] == "flat_stove_1_cook_region"


# ====================================================================== corrupted


def _union_scene() -> list[Any]:
    seen: set[str] = set()
    entries = []
    for entry in [
        *kitchen({"akita_black_bowl_1": (0.54, 0.17, 0.02)}),
        *groceries(GROCERIES),
        *living_room(),
        *kitchen_10(),
        ("wine_bottle_1", "wine bottle", OBJ, (0.3, 0.1, 0.1), ""),
    ]:
        if entry[0] not in seen:
            seen.add(entry[0])
            entries.append(entry)
    return entries


UNION = parse_brief(brief(_union_scene()))


@settings(max_examples=examples(600), deadline=None)
@given(
    task=st.sampled_from(DATA["tasks"]), seed=st.integers(0, 10_000), kind=st.sampled_from(KINDS)
)
def test_a_corrupted_instruction_never_becomes_a_plan(
    task: dict[str, str], seed: int, kind: str
) -> None:
    """Every published instruction, garbled by each corruption kind and seed, in a scene
    holding every object the suites use: the planner refuses (a parse problem or an
    ungrounded mention), it never plans a motion."""
    text = corrupt(task["instruction"], seed=seed, kind=kind)
    parsed = parse_task(text)
    if not parsed.ok:
        return
    with pytest.raises(Unresolved):
        plan_actions(parsed, UNION)


def test_corruption_sweep_counts() -> None:
    """The same property over all 120 instructions x 5 kinds x 20 seeds (12,000 tries),
    counted: 0 plans."""
    planned = []
    for task in DATA["tasks"]:
        for kind in KINDS:
            for seed in range(20):
                text = corrupt(task["instruction"], seed=seed, kind=kind)
                parsed = parse_task(text)
                if not parsed.ok:
                    continue
                try:
                    plan_actions(parsed, UNION)
                except Unresolved:
                    continue
                planned.append(text)
    assert planned == []


@pytest.mark.parametrize(
    "instruction",
    [
        "pick the purple elephant and place it in the basket",
        "pick the alphabet soup and place it in the dishwasher",
        "open the fridge",
        "turn on the television",
        "put the blue mug on the left plate",
        "push the sofa to the front of the stove",
    ],
)
def test_things_not_in_the_scene_are_refusals(instruction: str) -> None:
    parsed = parse_task(instruction)
    assert parsed.ok
    with pytest.raises(Unresolved):
        plan_actions(parsed, UNION)


# ====================================================================== the turn loop


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, parameters={"type": "object", "properties": {}})


class Episode:
    def __init__(self, instruction: str) -> None:
        self.items: list[Any] = [InstructionItem(text=instruction)]
        self.planner = Planner()
        self.tools = [_spec(n) for n in TOOLS]

    def turn(self, brief_text: str, *, fail: bool = False) -> Any:
        request = ModelRequest(
            system=[SystemBlock(name="system", text="...")],
            tools=self.tools,
            items=self.items,
            refreshed=RefreshedBlock(brief=brief_text),
        )
        response = self.planner.decide(request)
        self.items.append(AssistantItem(text=response.text, tool_calls=response.tool_calls))
        for call in response.tool_calls:
            status = "failure" if fail else "success"
            self.items.append(
                ToolResultItem(
                    call_id=call.id,
                    name=call.name,
                    text="ok" if not fail else "the grasp slipped",
                    is_error=fail,
                    evaluation=Verdict(status=status, evidence="LIBERO predicate"),
                )
            )
        return response


def test_the_plan_is_grounded_once_and_carried_out_call_by_call() -> None:
    entries, chosen = spatial_scene("between", swap=True, offset=(0.0, 0.0))
    episode = Episode(
        "Pick the akita black bowl between the plate and the ramekin and place it on the plate"
    )
    first = episode.turn(brief(entries))
    assert first.tool_calls[0].name == "pick" and first.tool_calls[0].arguments == {"ref": chosen}
    assert first.text.startswith("Plan: ")
    # the bowl is now lifted: no longer between anything, the plan still holds
    lifted = [(r, lab, t, (0.3, 0.0, 0.3) if r == chosen else p, "") for r, lab, t, p, _ in entries]
    second = episode.turn(brief(lifted, holding=chosen))
    assert second.tool_calls[0].name == "place"
    assert second.tool_calls[0].arguments == {"ref": chosen, "target": "plate_1", "relation": "on"}
    placed = [
        (r, lab, t, p, "on plate_1" if r == chosen else rest) for r, lab, t, p, rest in lifted
    ]
    final = episode.turn(brief(placed))
    assert not final.tool_calls and final.text.endswith("Outcome: achieved")


def test_a_place_the_brief_does_not_confirm_is_done_again_and_bounded() -> None:
    """The place reports success but the Brief shows the bowl beside the plate (the
    world's own predicate does not hold): the planner picks and places again, three tries
    in all, then reports not achieved rather than claiming success."""
    entries, chosen = spatial_scene("between", swap=False, offset=(0.0, 0.0))
    episode = Episode("put the black bowl between the plate and the ramekin on the plate")
    calls = []
    for _ in range(12):
        held = calls[-1:] == ["pick"]
        response = episode.turn(brief(entries, holding=chosen if held else "nothing"))
        if not response.tool_calls:
            break
        calls.append(response.tool_calls[0].name)
    assert calls == ["pick", "place"] * 3
    assert response.text.endswith("Outcome: not achieved")


def test_them_after_a_stacking_is_the_stack_carried_by_its_bottom() -> None:
    """libero_90 task 63: "stack the red bowl on the blue bowl and place them in the tray":
    "them" is the stack, carried by the bowl at its bottom (the other in it); the stacking
    step, its bowl carried along, stays done, and set down in the tray, the top bowl is in
    the tray and still on the other: achieved. (Before, "them" was the top bowl alone, and
    the stacking step was done again while it was held.)"""
    table = [
        ("wooden_tray_1", "wooden tray", FIX, (0.5, 0.25, 0.0), "on main_table"),
        ("wooden_tray_1_contain_region", "tray", CONT, (0.5, 0.25, 0.01), ""),
    ]

    def scene(red: str, blue: str, holding: str = "nothing") -> str:
        bowls = [
            ("bowl_1", "red bowl", OBJ, (0.4, -0.15, 0.02), red),
            ("bowl_2", "blue bowl", OBJ, (0.4, 0.05, 0.02), blue),
        ]
        return brief(bowls + table, holding=holding)

    episode = Episode("stack the red bowl on the blue bowl and place them in the tray")
    on_table = "on main_table"
    steps = [
        (scene(on_table, on_table), ("pick", {"ref": "bowl_1"})),
        (scene("", on_table, "bowl_1"), ("place", {"ref": "bowl_1", "target": "bowl_2"})),
        (scene("on bowl_2", on_table), ("pick", {"ref": "bowl_2"})),
        (scene("on bowl_2", "", "bowl_2"), ("place", {"ref": "bowl_2", "target": TRAY})),
    ]
    for text, (name, arguments) in steps:
        call = episode.turn(text).tool_calls[0]
        assert call.name == name
        assert {k: call.arguments[k] for k in arguments} == arguments
    final = episode.turn(scene(f"on bowl_2; in {TRAY}", f"in {TRAY}"))
    assert not final.tool_calls and final.text.endswith("Outcome: achieved")


def test_a_place_held_again_by_a_later_pick_stays_done() -> None:
    """A place whose object a later pick of the plan takes up again is done while it is
    held (it was not undone): "put the red bowl on the blue bowl, then put the red bowl in
    the tray" does not put it back on the blue bowl once it is lifted again."""
    from harness.planner.brief import parse_brief
    from harness.planner.progress import step_done

    plan = [
        ("pick", {"ref": "bowl_1"}),
        ("place", {"ref": "bowl_1", "target": "bowl_2", "relation": "on"}),
        ("pick", {"ref": "bowl_1"}),
        ("place", {"ref": "bowl_1", "target": TRAY, "relation": "in"}),
    ]
    entries = [
        ("bowl_1", "red bowl", OBJ, (0.4, -0.15, 0.2), ""),
        ("bowl_2", "blue bowl", OBJ, (0.4, 0.05, 0.02), "on main_table"),
    ]
    held = parse_brief(brief(entries, holding="bowl_1"))
    assert step_done(plan, 1, held, {0, 1})
    assert not step_done(plan, 1, held, {0})  # not before it succeeded
    assert not step_done(plan[:2], 1, held, {0, 1})  # nor with no later pick of it


def test_a_failing_call_is_retried_then_given_up() -> None:
    episode = Episode("turn on the stove")
    scene = brief(kitchen(ONE_BOWL))
    calls = []
    for _ in range(5):
        response = episode.turn(scene, fail=True)
        if not response.tool_calls:
            break
        calls.append(response.tool_calls[0].name)
    assert calls == ["turn_on"] * 3
    assert response.text.endswith("Outcome: not achieved")


@pytest.mark.parametrize("seed", range(10))
def test_a_corrupted_instruction_ends_without_a_call(seed: int) -> None:
    rng = random.Random(seed)
    task = rng.choice(DATA["tasks"])
    episode = Episode(corrupt(task["instruction"], seed=seed))
    response = episode.turn(brief(_union_scene()))
    assert not response.tool_calls
    assert response.text.endswith("Outcome: not achieved")


# ====================================================================== left and right

FRONT_CAMERA = (
    "Camera agentview: at (1.160, 0.000, 0.580) looking at (0.450, 0.000, 0.000), 128x128"
)
BACK_CAMERA = "Camera over_shoulder: at (-0.300, 0.000, 0.800) looking at (0.500, 0.000, 0.000)"


def _unnamed_sides(entries: list[Any]) -> list[Any]:
    """The scene without the things named by side ("table area plate left")."""
    return [e for e in entries if not re.search(r"\b(left|right)\b", e[1])]


@pytest.mark.parametrize(
    ("camera", "left_plate"), [(FRONT_CAMERA, "plate_1"), (BACK_CAMERA, "plate_2"), ("", "plate_1")]
)
def test_left_is_the_first_cameras_left(camera: str, left_plate: str) -> None:
    """A camera facing the robot sees the robot's right as its left; a camera behind the
    robot the other way round; no camera stated: the facing-the-robot convention."""
    from harness.planner.grounding import viewer_left

    task = parse_task("put the red mug on the left plate")
    scene = parse_brief(brief(_unnamed_sides(living_room())))
    actions = plan_actions(task, scene, left=viewer_left(camera))
    assert actions[1][1]["target"] == left_plate
    # the scene's own "plate left" area on the camera's left changes nothing
    if camera != BACK_CAMERA:
        named = parse_brief(brief(living_room()))
        assert plan_actions(task, named, left=viewer_left(camera)) == actions


LEFT_WORDS = [
    "put the red mug on the left plate",
    "place the red mug onto the plate on the left",
    "could you put the red mug on the left-hand plate?",
    "put the red mug on the plate at the left",
]


@pytest.mark.parametrize(
    "instruction",
    [
        *LEFT_WORDS,
        "put the red mug onto the left hand plate",
        "set the red mug down on the plate that is on the left",
    ],
)
def test_a_side_after_the_noun_or_left_hand_reads_as_the_left_one(instruction: str) -> None:
    """ "The plate on the left", "at the left", "the left-hand plate": the same plate as "the
    left plate" (they read "left" as the thing's name before), with the scene's own names
    agreeing with the camera; the report's frame note says they agree."""
    from harness.planner.grounding import viewer_left
    from harness.planner.sides import named_note

    task = parse_task(instruction)
    assert task.ok, task.problem
    scene = parse_brief(brief(living_room()))
    actions = plan_actions(task, scene, left=viewer_left(FRONT_CAMERA))
    assert actions == [
        ("pick", {"ref": "red_coffee_mug_1"}),
        ("place", {"ref": "red_coffee_mug_1", "target": "plate_1", "relation": "on"}),
    ]
    assert "agree" in named_note(scene, viewer_left(FRONT_CAMERA))


@pytest.mark.parametrize(
    "instruction",
    [
        "put the moka pot on the left on the stove",
        "place the left-hand moka pot onto the stove",
        "could you put the moka pot at the left on the stove?",
        "put the leftmost moka pot on the stove",
    ],
)
def test_the_left_moka_pot_rephrased(instruction: str) -> None:
    actions = plan(instruction, kitchen_10())
    assert [(name, a["ref"]) for name, a in actions] == [
        ("pick", "moka_pot_1"),
        ("place", "moka_pot_1"),
    ]


@pytest.mark.parametrize("instruction", LEFT_WORDS)
def test_a_camera_and_scene_names_that_disagree_about_left_are_asked_or_refused(
    instruction: str,
) -> None:
    """The scene's own names ("table area plate left" at -y) put left where a camera
    behind the robot sees its right: both readings are defensible (LIBERO's goals use one
    frame in one task and the other in another), so the planner does not choose: it names
    both plates, asks where a user can answer, and takes the one the answer names."""
    from harness.planner.grounding import viewer_left
    from harness.planner.sides import named_left

    task = parse_task(instruction)
    assert task.ok, task.problem
    scene = parse_brief(brief(living_room()))
    named = named_left(scene.objects.values())
    assert named is not None and named.direction[1] < -0.9  # the scene's left is -y
    left = viewer_left(BACK_CAMERA)
    with pytest.raises(Unresolved) as caught:
        plan_actions(task, scene, left=left)
    assert set(caught.value.candidates) == {"plate_1", "plate_2"}
    for answer, plate in (("plate_1", "plate_1"), ("the plate_2 one", "plate_2")):
        actions = plan_actions(task, scene, left=left, answers=(answer,))
        assert actions[1][1]["target"] == plate


def test_scene_names_by_side_need_a_pair_that_stands_apart() -> None:
    from harness.planner.brief import BriefObject
    from harness.planner.sides import named_left

    def obj(label: str, x: float, y: float) -> BriefObject:
        return BriefObject(ref=label.replace(" ", "_"), label=label, position=(x, y, 0.0))

    assert named_left([]) is None
    assert named_left([obj("table area plate left", 0.5, -0.3)]) is None  # no pair
    pair = [obj("moka pot left init", 0.71, 0.05), obj("moka pot right init", 0.61, 0.25)]
    named = named_left(pair)
    assert named is not None and named.agrees((0.0, -1.0)) and not named.agrees((0.0, 1.0))
    assert named_left([obj("a left b", 0.5, 0.0), obj("a right b", 0.505, 0.0)]) is None


def test_a_pick_that_does_not_hold_the_object_is_retried_three_times_then_given_up() -> None:
    """The pick reports success but the Brief never shows the object in the gripper (a
    missed grasp): the planner picks again instead of placing nothing, three times in all,
    then reports not achieved (it used to loop until max_turns)."""
    episode = Episode("pick the ketchup and place it in the basket")
    scene = brief(groceries(GROCERIES))
    calls = []
    for _ in range(10):
        response = episode.turn(scene)
        if not response.tool_calls:
            break
        calls.append(response.tool_calls[0].name)
    assert calls == ["pick", "pick", "pick"]
    assert response.text.endswith("Outcome: not achieved")


def test_a_failed_place_picks_again_and_is_bounded() -> None:
    episode = Episode("pick the ketchup and place it in the basket")
    free, held = brief(groceries(GROCERIES)), brief(groceries(GROCERIES), holding="ketchup_1")
    calls = []
    for _ in range(12):
        holding = calls[-1:] == ["pick"]
        response = episode.turn(held if holding else free, fail=holding)
        if not response.tool_calls:
            break
        calls.append(response.tool_calls[0].name)
    assert calls == ["pick", "place", "pick", "place", "pick", "place"]
    assert response.text.endswith("Outcome: not achieved")


@pytest.mark.parametrize(
    ("instruction", "call"),
    [
        ("move the plate to the stove’s front", "push"),
        ("put the black bowl in front of the stove", "pick"),
    ],
)
def test_standing_on_the_table_is_not_being_in_one_of_its_marked_areas(
    instruction: str, call: str
) -> None:
    """A Brief that says "on main_table" made the place into "main_table_stove_front_region"
    look done before anything moved (its ref extends the table's), so the first turn found no
    step to take and the planner failed an assertion (LIBERO-PRO's "move the plate to the
    stove's front" in a Brief whose things stand on the table itself)."""
    episode = Episode(instruction)
    first = episode.turn(brief(kitchen(ONE_BOWL)))
    assert first.tool_calls and first.tool_calls[0].name == call
    assert first.text.startswith("Plan: ") and "main_table_stove_front_region" in first.text


@pytest.mark.parametrize("knocked_in", [True, False])
def test_a_failed_place_a_later_pick_mended_is_done_by_the_brief(knocked_in: bool) -> None:
    """libero_90 task 77, state 1: the book's place was judged failed (it lay perched on the
    caddy's wall), the next pick closed on nothing but knocked it into the compartment, and
    the planner, holding to the place's old verdict, picked again and gave up while LIBERO
    said achieved. A verdict speaks for the moment it was given: after a later call on the
    same thing, the Brief (the state now) decides. Not knocked in, the pick is tried again,
    three times in all, and the report says not achieved."""
    basket = "basket_1_contain_region"
    scene = groceries(GROCERIES)

    def where(rest: str, holding: str = "nothing") -> str:
        entries = [(r, lab, t, p, rest if r == "ketchup_1" else e) for r, lab, t, p, e in scene]
        return brief(entries, holding=holding)

    episode = Episode("put the ketchup in the basket")
    made = [episode.turn(brief(scene)).tool_calls[0].name]  # the pick: held
    held = where("", holding="ketchup_1")
    made.append(episode.turn(held, fail=True).tool_calls[0].name)  # the place: judged failed
    for _ in range(4):
        response = episode.turn(where("on floor"), fail=True)  # the picks close on nothing
        if not response.tool_calls:
            break
        made.append(response.tool_calls[0].name)
        if knocked_in:
            scene_after = where(f"in {basket}")
            final = episode.turn(scene_after)
            assert not final.tool_calls and final.text.endswith("Outcome: achieved")
            assert made == ["pick", "place", "pick"]
            return
    assert made == ["pick", "place", "pick", "pick"]
    assert response.text.endswith("Outcome: not achieved")


@pytest.mark.parametrize(("fail", "calls"), [(False, 1), (True, 3)])
def test_a_push_onto_an_area_that_leaves_the_plate_on_a_box_is_judged_by_its_verdict(
    fail: bool, calls: int
) -> None:
    """libero_goal task 5, state 0: the plate carried over the bowl came down on the area
    with one edge on the cream cheese box. LIBERO's On(plate, area) held, the push's own
    verdict said so, and the Brief said "on cream_cheese_1" (one support per line): the
    planner pushed twice more and reported not achieved while the check said achieved.
    Resting on a neighbour says nothing of the area; the step's verdict decides, so a push
    judged failed is still tried again."""
    box = ("cream_cheese_1", "cream cheese", OBJ, (0.40, -0.10, 0.02), "on main_table")
    before = brief([*kitchen(ONE_BOWL), box])
    entries = [
        (r, lab, t, (0.38, -0.12, 0.03), "on cream_cheese_1") if r == "plate_1" else e
        for e in [*kitchen(ONE_BOWL), box]
        for r, lab, t, _, _ in [e]
    ]
    episode = Episode("push the plate to the front of the stove")
    made = [episode.turn(before, fail=fail).tool_calls[0].name]
    for _ in range(4):
        response = episode.turn(brief(entries), fail=fail)
        if not response.tool_calls:
            break
        made.append(response.tool_calls[0].name)
    assert made == ["push"] * calls
    verdict = "not achieved" if fail else "achieved"
    assert response.text.endswith(f"Outcome: {verdict}")


@pytest.mark.parametrize(
    "instruction",
    [
        "place yellow and white mug in microwave and close door",
        "put the yellow and white mug in the microwave and close the microwave door",
        "put the yellow and white mug in the microwave and close its door",
    ],
)
def test_a_door_is_the_fixture_that_opens_and_closes(instruction: str) -> None:
    """LIBERO-PRO libero_10_lan task 9 says "close door": refused before ("I see no door of
    anything here"), as a door is no region of the Brief; the microwave opens as a whole."""
    actions = plan(instruction, kitchen_10())
    assert [(name, a["ref"]) for name, a in actions] == [
        ("pick", "white_yellow_mug_1"),
        ("place", "white_yellow_mug_1"),
        ("close", "microwave_1"),
    ]


def test_a_door_of_two_fixtures_or_of_none_is_a_refusal() -> None:
    two = [*kitchen_10(), ("microwave_2", "microwave", FIX + ", open", (0.70, 0.30, 0.12), "")]
    with pytest.raises(Unresolved, match="microwave_1, microwave_2"):
        plan("close door", two)
    none = [e for e in kitchen_10() if not e[0].startswith("microwave")]
    with pytest.raises(Unresolved, match="no door"):
        plan("close door", none)
    with pytest.raises(Unresolved, match="no door"):
        plan("close the stove door", kitchen_10())
