"""Words that fit nothing in the scene (:mod:`harness.planner.standins`): a replaced object.

LIBERO-PRO's ``_object`` variants keep a task's words and replace the thing: "the book"
where a black bowl stands (libero_10 task 5), "the yellow and white mug" where a red mug
stands beside the white one (task 9). The rule, written here as a user would state it and
checked against scenes the tests build: the thing of the named kind is taken when it is the
only one and contradicts no colour said (and the report says it stood in); otherwise the
planner asks which of the things of that kind (else which movable thing) is meant where a
user can answer, takes the one the answer names (and says so), and refuses naming them
where nobody can.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.messages import Verdict
from harness.planner.brief import parse_brief
from harness.planner.grounding import Unresolved
from harness.planner.household import plan_actions
from harness.planner.language import parse_task
from harness.planner.lexicon import COLOURS
from tests.libero_briefs import CONT, FIX, OBJ, SURF, brief
from tests.planner.test_planner_requests import BASE_TOOLS, Episode
from tests.tiers import examples


def _microwave_scene(mugs: list[tuple[str, str]]) -> list[Any]:
    """A libero_10 task 9-like kitchen: a closed microwave and the mugs given."""
    return [
        ("microwave_1", "microwave", FIX + ", closed", (0.65, 0.34, 0.01), ""),
        ("microwave_1_heating_region", "inside of microwave", CONT, (0.65, 0.35, 0.10), ""),
        *[
            (ref, label, OBJ, (0.55, -0.25 + 0.2 * i, 0.05), "on kitchen_table")
            for i, (ref, label) in enumerate(mugs)
        ],
    ]


def _caddy_scene(things: list[tuple[str, str]]) -> list[Any]:
    """A libero_10 task 5-like study table: a desk caddy and the things given."""
    return [
        ("desk_caddy_1", "desk caddy", FIX, (0.36, -0.14, -0.02), ""),
        (
            "desk_caddy_1_back_contain_region",
            "back compartment of desk caddy",
            CONT,
            (0.33, -0.14, 0.06),
            "",
        ),
        *[
            (ref, label, OBJ, (0.55 + 0.1 * i, 0.14 - 0.16 * i, 0.0), "on study_table")
            for i, (ref, label) in enumerate(things)
        ],
        ("study_table_area_1", "table area desk caddy right", SURF, (0.35, 0.15, -0.04), ""),
    ]


T9 = "put the yellow and white mug in the microwave and close it"
T9_MUGS = [("porcelain_mug_1", "white mug"), ("red_coffee_mug_1", "red coffee mug")]
T5 = "pick up the book and place it in the back compartment of the caddy"
T5_THINGS = [("black_bowl_1", "black bowl"), ("white_yellow_mug_1", "yellow and white mug")]


def _plan(instruction: str, entries: list[Any], answers: tuple[str, ...] = ()) -> Any:
    task = parse_task(instruction)
    assert task.ok, task.problem
    notes: list[str] = []
    actions = plan_actions(task, parse_brief(brief(entries)), answers=answers, notes=notes)
    return actions, notes


@pytest.mark.parametrize(
    ("instruction", "entries", "said", "candidates"),
    [
        (T9, _microwave_scene(T9_MUGS), "the mugs here", ("porcelain_mug_1", "red_coffee_mug_1")),
        (T5, _caddy_scene(T5_THINGS), "could move", ("black_bowl_1", "white_yellow_mug_1")),
    ],
)
def test_a_replaced_thing_with_two_candidates_is_a_question(
    instruction: str, entries: list[Any], said: str, candidates: tuple[str, ...]
) -> None:
    """LIBERO-PRO libero_10_object tasks 9 and 5: refused before with "I see no yellow" and
    "I see no book", naming nothing; the white mug fits "white" better than the red one
    does, so only the user can say the red one is meant."""
    with pytest.raises(Unresolved) as caught:
        _plan(instruction, entries)
    assert caught.value.candidates == tuple(sorted(candidates))
    assert said in str(caught.value)


@pytest.mark.parametrize(
    ("instruction", "entries", "answer", "want"),
    [
        (T9, _microwave_scene(T9_MUGS), "the red one", "red_coffee_mug_1"),
        (T9, _microwave_scene(T9_MUGS), "porcelain_mug_1", "porcelain_mug_1"),
        (T5, _caddy_scene(T5_THINGS), "the bowl", "black_bowl_1"),
        (T5, _caddy_scene(T5_THINGS), "I meant the mug", "white_yellow_mug_1"),
    ],
)
def test_the_users_answer_picks_the_stand_in_and_the_note_says_so(
    instruction: str, entries: list[Any], answer: str, want: str
) -> None:
    actions, notes = _plan(instruction, entries, answers=(answer,))
    assert actions[0] == ("pick", {"ref": want})
    assert notes and want in notes[0] and "you chose" in notes[0]


def test_the_only_thing_of_the_kind_is_taken_and_the_report_says_so() -> None:
    """The wine bottle that is a white bottle: taken as before, and now the report names
    the stand-in plainly, next to LIBERO's verdict."""
    entries = [
        ("white_bottle_1", "white bottle", OBJ, (0.45, 0.05, 0.1), "on main_table"),
        ("wine_rack_1", "wine rack", FIX, (0.4, -0.25, 0.2), ""),
        ("wine_rack_1_top_region", "top of wine rack", SURF, (0.4, -0.2, 0.25), ""),
    ]
    episode = Episode("put the wine bottle on the rack", BASE_TOOLS)
    ok = Verdict(status="success", evidence="LIBERO predicate")
    first = episode.turn(brief(entries), evaluation=ok)
    assert first.tool_calls[0].arguments == {"ref": "white_bottle_1"}
    episode.turn(brief(entries, holding="white_bottle_1"), evaluation=ok)
    on_rack = "on wine_rack_1_top_region"
    placed = [(*e[:4], on_rack) if e[0] == "white_bottle_1" else e for e in entries]
    report = episode.turn(brief(placed), evaluation=ok).text
    assert "Note: nothing here is exactly the wine bottle; I took white_bottle_1" in report
    assert "the only one of the kind 'bottle' here" in report
    assert report.endswith("Outcome: achieved")


def test_without_a_user_the_refusal_names_what_it_sees() -> None:
    report = Episode(T5, BASE_TOOLS).turn(brief(_caddy_scene(T5_THINGS))).text
    assert "I see no book in the scene" in report
    assert "black_bowl_1" in report and "white_yellow_mug_1" in report
    assert report.endswith("Outcome: not achieved")


def test_with_a_user_it_asks_then_acts_on_the_answer() -> None:
    episode = Episode(T9, [*BASE_TOOLS, "query_user"])
    asked = episode.turn(brief(_microwave_scene(T9_MUGS)), result="the red coffee mug")
    assert asked.tool_calls[0].name == "query_user"
    acted = episode.turn(brief(_microwave_scene(T9_MUGS)))
    assert acted.tool_calls[0].arguments == {"ref": "red_coffee_mug_1"}
    note = "Note: nothing here is the yellow and white mug; you chose red_coffee_mug_1"
    assert note in acted.text


def test_a_made_up_name_is_still_refused_where_nobody_can_answer() -> None:
    """LIBERO-PRO's corrupted instructions ("the snelzun") stay refusals."""
    report = Episode(T5.replace("book", "snelzun"), BASE_TOOLS).turn(brief(_caddy_scene(T5_THINGS)))
    assert not report.tool_calls
    assert report.text.endswith("Outcome: not achieved")


# ====================================================================== attack


KINDS = ["mug", "bowl", "bottle", "book", "plate"]
PAINT = ["red", "white", "yellow", "black", "green"]


@settings(max_examples=examples(150), deadline=None)
@given(
    scene=st.lists(st.tuples(st.sampled_from(PAINT), st.sampled_from(KINDS)), max_size=4),
    colours=st.lists(st.sampled_from(PAINT), max_size=2, unique=True),
    kind=st.sampled_from(KINDS),
    bare=st.booleans(),
)
def test_nothing_is_taken_unless_it_is_of_the_kind_and_fits_or_the_user_named_it(
    scene: list[tuple[str, str]], colours: list[str], kind: str, bare: bool
) -> None:
    """The oracle, from the rule: a thing is taken only when it is the only thing of the
    named kind carrying every colour said; an unanswered refusal names as candidates the
    things of the kind when there are any, else every movable thing."""
    things = [(f"thing_{i + 1}", f"{c} {k}") for i, (c, k) in enumerate(scene)]
    colours = [] if bare else colours
    words = " ".join([" and ".join(colours), kind]).strip()
    instruction = f"put the {words} in the back compartment of the caddy"
    task = parse_task(instruction)
    assert task.ok, task.problem
    fits = [
        ref
        for ref, label in things
        if label.split()[-1] == kind and all(c in label.split() for c in colours)
    ]
    of_kind = [ref for ref, label in things if label.split()[-1] == kind]
    try:
        actions, _ = _plan(instruction, _caddy_scene(things))
    except Unresolved as refused:
        assert len(fits) != 1, f"{instruction!r} in {things}: {fits} fits alone"
        if len(fits) > 1:
            return  # several fit every word: the ordinary ambiguity
        expected = of_kind or [ref for ref, _ in things]
        assert set(refused.candidates) == set(expected)
        return
    picked = [a[1]["ref"] for a in actions if a[0] == "pick"]
    if len(picked) == 2:  # read as two things, "the red and the yellow mug": each fits its words
        labels = dict(things)
        first, last = (labels[r].split() for r in picked)
        assert colours[0] in first and colours[1] in last and last[-1] == kind
        return
    assert len(fits) == 1, f"{instruction!r} in {things} took {actions[0]}"
    assert actions[0] == ("pick", {"ref": fits[0]})


def test_the_attack_covers_colours_the_lexicon_knows() -> None:
    assert set(PAINT) <= COLOURS
