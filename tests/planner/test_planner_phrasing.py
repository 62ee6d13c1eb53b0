"""Requests not said as commands read as the command they ask for (issue 40, item 5).

A hold-out run of fresh rewordings of the published LIBERO instructions (written after the
parser, never seen by it) was refused for sentences a person reads at once: "I'd like the
black bowl on the wooden cabinet moved onto the plate", "the tomato sauce goes in the
basket", "the black bowl that sits between the plate and the ramekin", "place both of the
moka pots on the stove", and "..., then close the drawer" after "the bottom drawer of the
cabinet" (refused as any of three drawers). The oracle is the parse of the plain command
said with the same words, for every published instruction of that shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.planner.language import parse_task
from harness.planner.phrasing import as_command
from tests.tiers import examples

DATA = json.loads(
    (Path(__file__).parents[1] / "libero_data" / "published_instructions.json").read_text()
)
_PUT = re.compile(
    r"^(?:put|place) (?P<what>the .+?) (?P<rest>(?:in|on|into|onto|on top of|to the (?:left|right)"
    r" of) the .+)$"
)
PLACES = sorted(
    {
        (m["what"], m["rest"])
        for t in DATA["tasks"]
        if " and " not in t["instruction"]
        and (m := _PUT.match(t["instruction"].lower())) is not None
    }
)
WISHES = [
    "i'd like {what} put {rest}",
    "I would like {what} put {rest}",
    "we need {what} put {rest}",
]
PASSIVES = [
    "{what} should be put {rest}",
    "{what} needs to be put {rest}",
    "{what} must be put {rest}",
]
BELONGS = ["{what} goes {rest}", "{what} should go {rest}", "{what} belongs {rest}"]
# round 3: a wish with where and no participle, "end up", a modal "be", a question
ROUND3 = [
    "i want {what} {rest}",
    "i'd like {what} {rest}",
    "{what} should end up {rest}",
    "{what} needs to end up {rest}",
    "{what} should be {rest}",
    "can {what} go {rest}",
    "could {what} be put {rest}",
]
FORMS = WISHES + PASSIVES + BELONGS + ROUND3


def test_there_are_published_places_to_reword() -> None:
    assert len(PLACES) >= 15


@pytest.mark.parametrize(("what", "rest"), PLACES)
@pytest.mark.parametrize("form", FORMS)
def test_a_wish_a_passive_or_where_a_thing_goes_is_the_put_it_asks_for(
    what: str, rest: str, form: str
) -> None:
    plain = parse_task(f"put {what} {rest}")
    assert not plain.problem
    assert parse_task(form.format(what=what, rest=rest)) == plain


@given(
    st.sampled_from(PLACES),
    st.sampled_from(FORMS),
    st.sampled_from(["", "please, ", "hey robot, ", "okay, "]),
    st.sampled_from(["", ", please", " thanks"]),
)
@settings(max_examples=examples(200), deadline=None)
def test_reworded_forms_with_courtesy_keep_their_meaning(
    place: tuple[str, str], form: str, before: str, after: str
) -> None:
    what, rest = place
    text = form.format(what=what, rest=rest)
    assert parse_task(f"{before}{text}{after}") == parse_task(f"put {what} {rest}")


@pytest.mark.parametrize(
    "sentence",
    [
        "the bowl is on the plate",
        "the drawer was opened",
        "where does the bowl go",
        "the mug looks nice",
    ],
)
def test_a_statement_of_fact_is_not_made_a_command(sentence: str) -> None:
    assert as_command(sentence) == sentence
    assert parse_task(sentence).problem


@pytest.mark.parametrize(
    ("participle", "verb"),
    [
        ("opened", "open"),
        ("closed", "close"),
        ("turned on", "turn on"),
        ("switched off", "turn off"),
    ],
)
def test_a_passive_of_an_articulation_or_a_switch_is_that_action(
    participle: str, verb: str
) -> None:
    thing = "the stove" if "on" in verb or "off" in verb else "the top drawer of the cabinet"
    if " " in participle:
        done, state = participle.split()
        said = f"{thing} needs to be {done} {state}"
    else:
        said = f"{thing} should be {participle}"
    assert parse_task(said) == parse_task(f"{verb} {thing}")


@pytest.mark.parametrize(
    "posture",
    ["that sits", "that is sitting", "which stands", "standing", "that is located", "lying"],
)
@pytest.mark.parametrize(
    ("qualifier", "anchors"),
    [
        ("between", "the plate and the ramekin"),
        ("next to", "the cookie box"),
        ("on", "the stove"),
        ("in", "the top drawer of the wooden cabinet"),
    ],
)
def test_how_a_thing_stands_where_it_is_does_not_change_which_it_is(
    posture: str, qualifier: str, anchors: str
) -> None:
    plain = parse_task(f"put the black bowl {qualifier} {anchors} on the plate")
    assert not plain.problem
    said = parse_task(f"put the black bowl {posture} {qualifier} {anchors} on the plate")
    assert said == plain


@pytest.mark.parametrize("count", ["both", "two"])
def test_both_of_the_is_both(count: str) -> None:
    plain = parse_task(f"put {count} moka pots on the stove")
    assert parse_task(f"place {count} of the moka pots on the stove") == plain
    assert plain.steps[0].subject.count == 2


@pytest.mark.parametrize(
    ("determiner", "noun"),
    [("the", "drawer"), ("that", "drawer"), ("this", "drawer"), ("the", "cabinet drawer")],
)
def test_the_drawer_after_the_bottom_drawer_is_that_drawer(determiner: str, noun: str) -> None:
    told = parse_task("put the black bowl in the bottom drawer of the cabinet and close it")
    said = parse_task(
        "place the black bowl into the bottom drawer of the cabinet, then close "
        f"{determiner} {noun}"
    )
    if noun == "drawer":
        assert said == told
    else:  # a word of its own: read afresh, not as the drawer just named
        assert said.steps[1].subject != told.steps[1].subject


def test_a_drawer_named_anew_is_not_the_one_before() -> None:
    task = parse_task("put the bowl in the bottom drawer and then open the top drawer")
    assert task.steps[1].subject.part == ("top", "drawer")
    pronoun = parse_task("open the top drawer, put the bowl in the drawer")
    assert pronoun.steps[1].target == pronoun.steps[0].subject


# Round 2 of the hold-out rewordings (written after round 1's fixes) was refused for three
# more shapes: two statements of where things go joined by "and", a request ending in "too",
# and the receiver said first ("the plate should get the black bowl ...").

JOINS = [" and ", ", and ", ", then ", " and then "]
_RECEIVER = re.compile(r"^(?:in|on|into|onto|on top of) (?P<where>the .+)$")
RECEIVERS = [(what, m["where"]) for what, rest in PLACES if (m := _RECEIVER.match(rest))]


@given(
    st.lists(st.sampled_from(PLACES), min_size=2, max_size=3),
    st.lists(st.sampled_from(FORMS), min_size=3, max_size=3),
    st.lists(st.sampled_from(JOINS), min_size=2, max_size=2),
)
@settings(max_examples=examples(200), deadline=None)
def test_requests_of_any_shape_joined_are_each_the_put_they_ask_for(
    places: list[tuple[str, str]], forms: list[str], joins: list[str]
) -> None:
    said = [form.format(what=w, rest=r) for (w, r), form in zip(places, forms, strict=False)]
    plain = [f"put {w} {r}" for w, r in places]
    sentence, command = said[0], plain[0]
    for join, one, put in zip(joins, said[1:], plain[1:], strict=False):
        sentence, command = f"{sentence}{join}{one}", f"{command}{join}{put}"
    expected = parse_task(command)
    assert not expected.problem
    assert parse_task(sentence) == expected


def test_the_round_two_sentence_of_two_mugs_is_two_places() -> None:
    said = parse_task(
        "the white mug goes on the left plate and the yellow and white mug goes on the right plate"
    )
    assert said == parse_task(
        "put the white mug on the left plate and put the yellow and white mug on the right plate"
    )
    assert len(said.steps) == 2


@pytest.mark.parametrize("additive", ["too", "as well", "also"])
@pytest.mark.parametrize("form", ["put {what} {rest}", *FORMS])
def test_too_or_as_well_after_a_request_adds_nothing(form: str, additive: str) -> None:
    first, (what, rest) = "put the alphabet soup in the basket", PLACES[0]
    one = form.format(what=what, rest=rest)
    assert parse_task(f"{one} {additive}") == parse_task(f"put {what} {rest}")
    assert parse_task(f"{first} and {one} {additive}") == parse_task(
        f"{first} and put {what} {rest}"
    )


@pytest.mark.parametrize(("what", "where"), RECEIVERS)
@pytest.mark.parametrize("verb", ["should get", "needs to get", "gets", "should receive"])
def test_the_receiver_said_first_is_a_move_to_it(what: str, where: str, verb: str) -> None:
    plain = parse_task(f"move {what} to {where}")
    assert not plain.problem
    assert parse_task(f"{where} {verb} {what}") == plain


def test_things_joined_inside_one_request_stay_one_request() -> None:
    said = parse_task("both the alphabet soup and the cream cheese box go in the basket")
    assert said == parse_task("put both the alphabet soup and the cream cheese box in the basket")


@pytest.mark.parametrize(
    "sentence",
    [
        "the bowl is on the plate and the mug goes on the tray",
        "the bowl is on the plate and the basket should get the ketchup",
        "the drawer was opened and the bowl should be put in it",
    ],
)
def test_a_statement_of_fact_before_a_request_is_no_part_of_its_object(sentence: str) -> None:
    assert parse_task(sentence).problem


# Round 3 (written after round 2's fixes; parsed before any episode ran): 11 of 40 refused
# or misread. The shapes beyond the forms above:


@pytest.mark.parametrize(("what", "where"), RECEIVERS)
@pytest.mark.parametrize("verb", ["get", "take", "grab"])
def test_a_fetch_verb_with_into_is_a_put(what: str, where: str, verb: str) -> None:
    assert parse_task(f"{verb} {what} into {where}") == parse_task(f"put {what} into {where}")


def test_a_fetch_verb_with_on_still_says_which_thing() -> None:
    task = parse_task("grab the black bowl on the stove and put it onto the plate")
    assert [s.action for s in task.steps] == ["place"]
    assert task.steps[0].subject.qualifiers[0].relation == "on"


@pytest.mark.parametrize("join", [", then ", ", and ", " and then "])
def test_a_verb_said_once_carries_to_the_next_place(join: str) -> None:
    said = parse_task(f"put the white mug on the left plate{join}the red mug on the right plate")
    told = parse_task(
        f"put the white mug on the left plate{join}put the red mug on the right plate"
    )
    assert said == told
    assert len(said.steps) == 2


@pytest.mark.parametrize("additive", ["", " as well", " too"])
def test_a_bare_thing_after_a_place_goes_where_the_last_went(additive: str) -> None:
    said = parse_task(f"place the cream cheese box in the basket, and the butter{additive}")
    told = parse_task("place the cream cheese box in the basket, and put the butter in the basket")
    assert said == told


def test_a_bare_thing_first_is_still_no_request() -> None:
    assert parse_task("the butter").problem


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("said", ["on the {s} side of", "to the {s} hand side of", "on the {s} of"])
def test_a_side_said_with_side_is_that_side(side: str, said: str) -> None:
    told = parse_task(f"put the chocolate pudding to the {side} of the plate")
    assert parse_task(f"put the chocolate pudding {said.format(s=side)} the plate") == told
    assert told.steps[0].relation == f"{side}_of"


@pytest.mark.parametrize("word", ["both", "all"])
def test_a_quantifier_after_the_things_is_the_quantifier_before_them(word: str) -> None:
    said = parse_task(f"the alphabet soup and the cream cheese box {word} go in the basket")
    told = parse_task(f"put {word} the alphabet soup and the cream cheese box in the basket")
    assert said == told


@pytest.mark.parametrize("joined", ["and also", ", also", "and then also"])
def test_also_between_things_or_requests_adds_nothing(joined: str) -> None:
    said = parse_task(f"put the alphabet soup {joined} the tomato sauce in the basket")
    plain = parse_task(
        f"put the alphabet soup {joined.replace('also', '').strip()} "
        "the tomato sauce in the basket".replace("  ", " ")
    )
    assert said == plain


@pytest.mark.parametrize(
    ("said", "told"),
    [
        ("the stove should be on", "turn on the stove"),
        ("the stove must be off", "turn off the stove"),
        ("the top drawer of the cabinet should be open", "open the top drawer of the cabinet"),
        ("the microwave needs to be closed", "close the microwave"),
        ("the microwave should be shut", "close the microwave"),
    ],
)
def test_a_state_asked_for_is_the_action_that_makes_it(said: str, told: str) -> None:
    assert parse_task(said) == parse_task(told)
    assert not parse_task(told).problem


@pytest.mark.parametrize("to", ["to", "onto"])
def test_over_before_to_is_the_way_not_a_place(to: str) -> None:
    """Round 3 at states 30-31: "move the black bowl that is on the stove over to the plate"
    was refused ("I see no stove over")."""
    said = parse_task(f"move the black bowl that is on the stove over {to} the plate")
    assert said == parse_task(f"move the black bowl that is on the stove {to} the plate")
    assert not said.problem
