"""Hold-out round 6: forty rewordings written at the start of a session, never seen by the parser.

Parsed before any change, 8 of 40 differed from the plain command said with the same words
(the oracle, which the parser already read). Three were misread or refused for want of
general English: a tag question ("..., would you?"), "&" for "and", and a second thing put
where the first went ("put the soup in the basket and also the cheese box" was one place
into "the basket and the cheese box"). Four are read in another form only and plan the same
calls. One, "BBQ sauce in the basket, please", is a thing named with where it is and no
verb, which the parser refuses by design (round 5's guard).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.planner.language import parse_task
from harness.planner.standins import Unresolved
from tests.libero_briefs import groceries, kitchen, kitchen_10
from tests.planner.test_planner_household import GROCERIES, plan, plans_the_same_calls
from tests.tiers import examples

_ROUND_6 = [
    (
        "Carefully pick up the black bowl between the plate and the ramekin, then put it on"
        " the plate.",
        "pick up the black bowl between the plate and the ramekin, then put it on the plate",
    ),
    (
        "Would you mind placing the black bowl next to the ramekin on the plate?",
        "place the black bowl next to the ramekin on the plate",
    ),
    (
        "I'd like the black bowl from table center on the plate",
        "put the black bowl from table center on the plate",
    ),
    (
        "Get the black bowl that sits on the cookie box onto the plate",
        "put the black bowl on the cookie box onto the plate",
    ),
    (
        "PICK UP THE BLACK BOWL ON THE RAMEKIN AND PLACE IT ON THE PLATE",
        "pick up the black bowl on the ramekin and place it on the plate",
    ),
    (
        "make sure the black bowl next to the cookie box ends up on the plate",
        "put the black bowl next to the cookie box on the plate",
    ),
    (
        "put the black bowl that's sitting on the stove onto the plate",
        "put the black bowl on the stove onto the plate",
    ),
    (
        "you should move the black bowl beside the plate onto the plate",
        "move the black bowl beside the plate onto the plate",
    ),
    ("get the alphabet soup into the basket", "put the alphabet soup into the basket"),
    ("Would you put the cream cheese in the basket?", "put the cream cheese in the basket"),
    ("carefully place the salad dressing in the basket", "place the salad dressing in the basket"),
    ("the ketchup goes in the basket", "put the ketchup in the basket"),
    (
        "Could you please pick up the tomato sauce and put it into the basket?",
        "pick up the tomato sauce and put it into the basket",
    ),
    ("make sure the butter ends up in the basket", "put the butter in the basket"),
    ("I'd like the milk in the basket", "put the milk in the basket"),
    (
        "put the chocolate pudding in the basket, would you?",
        "put the chocolate pudding in the basket",
    ),
    (
        "Pick up the orange juice & place it in the basket",
        "pick up the orange juice and place it in the basket",
    ),
    ("Could you open the cabinet's middle drawer?", "open the middle drawer of the cabinet"),
    ("carefully put the bowl onto the stove", "put the bowl onto the stove"),
    (
        "the wine bottle should be placed on top of the cabinet",
        "place the wine bottle on top of the cabinet",
    ),
    (
        "Open the top drawer, then put the bowl into it.",
        "open the top drawer, then put the bowl into it",
    ),
    ("I'd like the bowl on top of the cabinet", "put the bowl on top of the cabinet"),
    ("push the plate towards the front of the stove", "push the plate to the front of the stove"),
    ("put the cream cheese inside the bowl", "put the cream cheese in the bowl"),
    ("Could you turn the stove on?", "turn on the stove"),
    ("set the bowl down on the plate", "set the bowl on the plate"),
    (
        "place the alphabet soup in the basket, then the tomato sauce",
        "place the alphabet soup in the basket, then place the tomato sauce in the basket",
    ),
    (
        "both the cream cheese box and the butter go into the basket",
        "put both the cream cheese box and the butter into the basket",
    ),
    (
        "Turn the stove on and place the moka pot onto it",
        "turn on the stove and place the moka pot onto it",
    ),
    (
        "put the black bowl into the cabinet's bottom drawer, then close the drawer",
        "put the black bowl into the bottom drawer of the cabinet, then close it",
    ),
    (
        "put the white mug on the plate on the left and the yellow and white mug on the plate"
        " on the right",
        "put the white mug on the left plate and put the yellow and white mug on the right plate",
    ),
    (
        "take the book and put it in the caddy's back compartment",
        "pick up the book and put it in the back compartment of the caddy",
    ),
    (
        "put the chocolate pudding to the right of the plate and the white mug on the plate",
        "put the chocolate pudding to the right of the plate and put the white mug on the plate",
    ),
    (
        "put the alphabet soup in the basket and also the cream cheese box",
        "put the alphabet soup in the basket and put the cream cheese box in the basket",
    ),
    (
        "put the yellow and white mug inside the microwave and shut the microwave",
        "put the yellow and white mug in the microwave and close it",
    ),
]


@pytest.mark.parametrize(("said", "told"), _ROUND_6)
def test_a_round_6_rewording_asks_what_the_plain_command_asks(said: str, told: str) -> None:
    assert not parse_task(told).problem
    assert parse_task(said) == parse_task(told)


@pytest.mark.parametrize(
    ("said", "told", "layout"),
    [
        (
            "take the black bowl from the top drawer of the wooden cabinet to the plate",
            "move the black bowl in the top drawer of the wooden cabinet to the plate",
            "in_drawer",
        ),
        (
            "Please, pick up the black bowl on top of the wooden cabinet and place it on the"
            " plate!",
            "pick up the black bowl on the wooden cabinet and place it on the plate",
            "on_cabinet",
        ),
    ],
)
@pytest.mark.parametrize("swap", [False, True])
def test_a_rewording_read_in_another_form_plans_the_same_calls(
    said: str, told: str, layout: str, swap: bool
) -> None:
    plans_the_same_calls(said, told, layout, swap)


def test_each_moka_pot_is_both() -> None:
    said = plan("place each moka pot on the stove", kitchen_10())
    assert said == plan("put both moka pots on the stove", kitchen_10())
    assert {c[1]["ref"] for c in said if c[0] == "pick"} == {"moka_pot_1", "moka_pot_2"}


def test_the_wine_rack_is_the_rack() -> None:
    scene = [
        *kitchen({}),
        ("wine_bottle_1", "wine bottle", "object, kind=movable", (0.5, 0.1, 0.05), ""),
    ]
    said = plan("move the wine bottle onto the wine rack", scene)
    assert said == plan("move the wine bottle onto the rack", scene)
    assert said[-1][1]["target"] == "wine_rack_1_top_region"


def test_a_second_thing_after_and_goes_where_the_first_went() -> None:
    scene = groceries(GROCERIES)
    calls = plan("put the alphabet soup in the basket and also the cream cheese", scene)
    assert [c for c in calls if c[0] == "pick"] == [
        ("pick", {"ref": "alphabet_soup_1"}),
        ("pick", {"ref": "cream_cheese_1"}),
    ]
    assert {c[1]["target"] for c in calls if c[0] == "place"} == {"basket_1_contain_region"}


_MOVABLE = ["the alphabet soup", "the cream cheese", "the butter", "the milk", "the ketchup"]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.sampled_from(["put", "place", "set", "drop"]),
    st.sampled_from(_MOVABLE),
    st.sampled_from(["in", "into", "on", "onto", "inside"]),
    st.sampled_from(["the basket", "the plate", "the bowl"]),
    st.sampled_from(_MOVABLE),
    st.sampled_from(["", " too", " as well"]),
    st.booleans(),
)
def test_put_x_somewhere_and_y_is_two_puts_there(
    verb: str, first: str, where: str, place: str, second: str, tail: str, also: bool
) -> None:
    """The oracle is the sentence said twice in full: "put X in B and Y" asks what "put X
    in B, then put Y in B" asks, never one put into "B and Y"."""
    said = f"{verb} {first} {where} {place} and {'also ' if also else ''}{second}{tail}"
    told = f"{verb} {first} {where} {place}, then {verb} {second} {where} {place}"
    assert parse_task(said) == parse_task(told)


@pytest.mark.parametrize(
    "text",
    [
        "put the bowl between the plate and the ramekin on the plate",
        "pick up the black bowl on the plate and the ramekin",
        "put the bowl on the yellow and white mug",
        "put the bowl next to the plate and the ramekin on the stove",
    ],
)
def test_an_and_inside_a_noun_or_a_qualifier_is_not_a_second_put(text: str) -> None:
    task = parse_task(text)
    assert not task.problem
    assert len(task.steps) == 1


@pytest.mark.parametrize(
    "text", ["BBQ sauce in the basket, please", "the black bowl on the plate, please"]
)
def test_a_thing_and_where_it_is_without_a_verb_is_still_refused(text: str) -> None:
    assert parse_task(text).problem


@pytest.mark.parametrize(
    ("near", "far", "meant"),
    [
        (0.314, 0.38, "akita_black_bowl_1"),  # the farthest a published "next to" bowl lies
        (0.25, 0.30, "akita_black_bowl_1"),
        (0.40, 0.45, None),  # nothing is next to the plate
    ],
)
def test_the_bowl_next_to_the_plate_is_the_nearest_within_reason(
    near: float, far: float, meant: str | None
) -> None:
    """A bowl 31.4 cm (centre to centre) from the plate, the other 38 cm, is "the bowl next
    to the plate"; with the nearer 40 cm away nothing is, and the sentence is refused."""
    px, py = 0.62, 0.14
    scene = kitchen(
        {"akita_black_bowl_1": (px, py + near, 0.04), "akita_black_bowl_2": (px - far, py, 0.04)}
    )
    text = "pick up the black bowl next to the plate and place it on the plate"
    if meant is None:
        with pytest.raises(Unresolved, match="nothing that is"):
            plan(text, scene)
        return
    assert plan(text, scene)[0] == ("pick", {"ref": meant})


@pytest.mark.parametrize(
    "text",
    [
        # shuffles of published instructions that planned a motion: hypothesis found the
        # first two (seed 6796), a sweep of 1.2 million corruptions the rest (seeds 220-2219)
        "the cream Pick it the in cheese place basket and",
        "the put cheese box basket and the ketchup both in cream the",
        "the alphabet Pick it and place in the soup basket",
        "the basket butter in Pick it and the place",
        "the bowl from lift it plate black on put table and the the center",
        "the cookie on black plate and bowl grab it box set the beside",
        "the box the ketchup and the cheese basket both in put cream",
    ],
)
def test_a_shuffle_of_a_command_is_refused(text: str) -> None:
    """A name never ends with an article, a conjunction or a preposition, has no article
    inside it ("the box the ketchup"), and a thing said first is pointed back to only after
    a pause ("the bowl on the box: move it ..."): without these, each of these shuffles was
    read as a command and planned."""
    assert parse_task(text).problem


@settings(max_examples=examples(200), deadline=None)
@given(
    st.sampled_from(["pick up", "put", "move", "place"]),
    st.sampled_from(_MOVABLE),
    st.sampled_from(["the", "a", "and", "of", "in", "on", "to", "with", "between"]),
    st.sampled_from(["", " in the basket", " on the plate"]),
)
def test_a_name_cut_short_never_becomes_a_command(
    verb: str, thing: str, last: str, where: str
) -> None:
    assert parse_task(f"{verb} {thing} {last}{where}").problem


@pytest.mark.parametrize(
    ("said", "told"),
    [
        (
            "the black bowl on the cookie box: move it onto the plate",
            "move the black bowl on the cookie box onto the plate",
        ),
        (
            "the black bowl on the cookie box, move it onto the plate",
            "move the black bowl on the cookie box onto the plate",
        ),
    ],
)
def test_a_thing_said_first_then_pointed_back_to_after_a_pause(said: str, told: str) -> None:
    assert parse_task(said) == parse_task(told)
    assert parse_task(said.replace(":", "").replace(",", "")).problem
