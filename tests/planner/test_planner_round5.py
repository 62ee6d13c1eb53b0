"""Hold-out round 5: forty rewordings written after round 4, never seen by the parser.

Parsed before any change, 13 of 40 were refused or misread: a label first ("your task:
..."), two sentences ("grab the salad dressing. drop it in the basket."), where said first
("on the plate, place the bowl ..."), the thing said first and pointed back to ("the bowl
on the cookie box: move it onto the plate"), the verb left out ("the cream cheese, into the
basket"), "stick" and "pop" for put, "atop", and "before closing it, put ...". The oracle
for each is the plain command said with the same words, which the parser read before this
round; three more were read differently in form only, and plan the same calls.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.planner.language import parse_task
from tests.libero_briefs import kitchen_10
from tests.planner.test_planner_household import plan, plans_the_same_calls
from tests.tiers import examples

_ROUND_5 = [
    (
        "your task: pick up the black bowl between the plate and the ramekin and put it on"
        " the plate",
        "pick up the black bowl between the plate and the ramekin and put it on the plate",
    ),
    (
        "grab the black bowl that's next to the ramekin. put it on the plate.",
        "grab the black bowl that is next to the ramekin and put it on the plate",
    ),
    (
        "on the plate, place the black bowl from the table center",
        "place the black bowl from the table center on the plate",
    ),
    (
        "the black bowl on the cookie box: move it onto the plate",
        "move the black bowl on the cookie box onto the plate",
    ),
    (
        "i want you to transfer the black bowl on the ramekin to the plate",
        "transfer the black bowl on the ramekin to the plate",
    ),
    (
        "pick up the black bowl by the cookie box, then place it on the plate, thanks",
        "pick up the black bowl by the cookie box, then place it on the plate",
    ),
    (
        "relocate the black bowl on the stove onto the plate",
        "move the black bowl on the stove onto the plate",
    ),
    (
        "can you pick the black bowl up from the wooden cabinet and put it on the plate?",
        "pick the black bowl up from the wooden cabinet and put it on the plate",
    ),
    (
        "task: pick up the alphabet soup and place it in the basket",
        "pick up the alphabet soup and place it in the basket",
    ),
    ("the cream cheese, into the basket please", "put the cream cheese into the basket"),
    (
        "grab the salad dressing. drop it in the basket.",
        "grab the salad dressing and drop it in the basket",
    ),
    ("could the bbq sauce go into the basket?", "put the bbq sauce into the basket"),
    ("put away the ketchup in the basket", "put the ketchup in the basket"),
    ("load the tomato sauce into the basket", "put the tomato sauce into the basket"),
    ("i need you to place the butter in the basket", "place the butter in the basket"),
    ("stick the milk in the basket", "put the milk in the basket"),
    ("pop the chocolate pudding into the basket", "put the chocolate pudding into the basket"),
    ("move the orange juice over into the basket", "move the orange juice into the basket"),
    ("pull out the middle drawer of the cabinet", "open the middle drawer of the cabinet"),
    ("the bowl should go on the stove", "put the bowl on the stove"),
    (
        "move the wine bottle up onto the top of the cabinet",
        "move the wine bottle onto the top of the cabinet",
    ),
    (
        "open the top drawer. put the bowl inside it.",
        "open the top drawer and put the bowl inside it",
    ),
    ("set the bowl atop the cabinet", "set the bowl on top of the cabinet"),
    (
        "slide the plate over to the front of the stove",
        "slide the plate to the front of the stove",
    ),
    ("drop the cream cheese into the bowl", "put the cream cheese into the bowl"),
    ("switch the stove on", "turn on the stove"),
    ("can you set the bowl onto the plate?", "set the bowl onto the plate"),
    ("place the wine bottle onto the rack", "place the wine bottle on the rack"),
    (
        "the alphabet soup and the tomato sauce both belong in the basket",
        "put both the alphabet soup and the tomato sauce in the basket",
    ),
    (
        "put the cream cheese box into the basket, and the butter too",
        "put the cream cheese box into the basket and put the butter into the basket",
    ),
    (
        "switch on the stove, then set the moka pot on it",
        "turn on the stove, then set the moka pot on it",
    ),
    (
        "before closing it, put the black bowl in the bottom drawer of the cabinet",
        "put the black bowl in the bottom drawer of the cabinet and close it",
    ),
    (
        "on the left plate, put the white mug, and on the right plate, put the yellow and white"
        " mug",
        "put the white mug on the left plate and put the yellow and white mug on the right plate",
    ),
    (
        "lift the book and put it into the back compartment of the caddy",
        "pick up the book and put it into the back compartment of the caddy",
    ),
    (
        "put the white mug onto the plate; put the chocolate pudding on the right side of"
        " the plate",
        "put the white mug onto the plate and put the chocolate pudding to the right of the plate",
    ),
    (
        "both the alphabet soup and the cream cheese box need to go in the basket",
        "put both the alphabet soup and the cream cheese box in the basket",
    ),
    (
        "put the yellow and white mug in the microwave, then shut its door",
        "put the yellow and white mug in the microwave and close it",
    ),
]


@pytest.mark.parametrize(("said", "told"), _ROUND_5)
def test_a_round_5_rewording_asks_what_the_plain_command_asks(said: str, told: str) -> None:
    assert not parse_task(told).problem
    assert parse_task(said) == parse_task(told)


@pytest.mark.parametrize(
    ("said", "told", "layout"),
    [
        (
            "take the black bowl out of the top drawer of the wooden cabinet and set it on"
            " the plate",
            "take the black bowl in the top drawer of the wooden cabinet and set it on the plate",
            "in_drawer",
        ),
        (
            "robot, put the black bowl that is next to the plate on top of the plate",
            "put the black bowl that is next to the plate on the plate",
            "next_to_plate",
        ),
    ],
)
@pytest.mark.parametrize("swap", [False, True])
def test_a_rewording_read_in_another_form_plans_the_same_calls(
    said: str, told: str, layout: str, swap: bool
) -> None:
    plans_the_same_calls(said, told, layout, swap)


def test_two_moka_pots_are_both_moka_pots() -> None:
    said = plan("place the two moka pots on the stove", kitchen_10())
    assert said == plan("put both moka pots on the stove", kitchen_10())
    assert {c[1]["ref"] for c in said if c[0] == "pick"} == {"moka_pot_1", "moka_pot_2"}


@pytest.mark.parametrize(
    "text",
    [
        "the black bowl on the plate",  # a noun with where it is: no request
        "the soup is in the basket",  # a statement
    ],
)
def test_a_thing_and_where_it_is_is_still_no_request(text: str) -> None:
    assert parse_task(text).problem


_THINGS = [
    "the black bowl",
    "the plate",
    "the cream cheese",
    "the basket",
    "a moka pot",
    "the stove",
]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.sampled_from(_THINGS),
    st.sampled_from(["on", "in", "next to", "near", "by", "under", "behind", "beside", "inside"]),
    st.sampled_from(_THINGS),
    st.sampled_from(["", "please", "thanks"]),
)
def test_a_thing_named_with_where_it_is_never_becomes_a_command(
    thing: str, where: str, other: str, tail: str
) -> None:
    """The shorthand forms ("the cream cheese, into the basket"; "the bowl ...: move it
    ...") never read a noun with where it stands as a request: without a comma before the
    place, and a way into or onto it, nothing is asked."""
    assert parse_task(f"{thing} {where} {other} {tail}".strip()).problem


@pytest.mark.parametrize(
    "text",
    [
        # where said first without a comma: the words could be a shuffle of another command's
        "on the left plate put the white mug, and on the right plate put the yellow and white mug",
        "in the bottle wine put the bowl",  # LIBERO-PRO's shuffle of "put the wine bottle in ..."
    ],
)
def test_where_said_first_without_a_comma_is_refused(text: str) -> None:
    """Round 5 read "on the left plate put the white mug, and ..." as the plain command
    (and passed in the simulator), but the same rule read LIBERO-PRO's shuffled "in the
    bottle wine put the bowl" as "put the bowl in the wine bottle": the corruption sweep
    found it. Where said first needs its comma; without it the sentence is refused."""
    assert parse_task(text).problem
