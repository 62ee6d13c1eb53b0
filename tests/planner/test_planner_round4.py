"""Hold-out round 4: rewordings written after round 3's fixes, never seen by the parser.

Parsed before any change, 9 of 40 were refused or misread: a manner or order word first
("carefully lift ...", "first open ..."), "would you mind putting ...", "make sure the
ketchup is in the basket", "push the plate so it is in front of the stove", and "each of
the moka pots" read as one pot. The oracle for each is the plain command said with the
same words, which the parser read before this round. Round 4's one sentence still refused
at the end of its session, a list said in order and then where all of it goes ("first the
alphabet soup, then the cream cheese box: both into the basket"), is read since.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.planner.grounding import Unresolved
from harness.planner.language import parse_task
from harness.planner.verbs import verb_of_gerund
from tests.planner.test_planner_household import kitchen_10, plan
from tests.tiers import examples


@pytest.mark.parametrize(
    ("said", "told"),
    [
        (
            "carefully lift the black bowl at the center of the table and set it onto the plate",
            "lift the black bowl at the center of the table and set it onto the plate",
        ),
        (
            "first open the top drawer, then put the bowl in it",
            "open the top drawer, then put the bowl in it",
        ),
        ("gently, put the milk in the basket", "put the milk in the basket"),
        (
            "would you mind putting the black bowl that is on the ramekin on the plate",
            "put the black bowl that is on the ramekin on the plate",
        ),
        ("do you mind closing the microwave", "close the microwave"),
        (
            "would you mind moving the bowl onto the plate",
            "move the bowl onto the plate",
        ),
        ("make sure the ketchup is in the basket", "put the ketchup in the basket"),
        (
            "make sure the black bowl next to the plate ends up on the plate",
            "put the black bowl next to the plate on the plate",
        ),
        ("make sure that the stove is on", "turn on the stove"),
        ("ensure the top drawer of the cabinet is closed", "close the top drawer of the cabinet"),
        (
            "push the plate so it is in front of the stove",
            "push the plate to the front of the stove",
        ),
        (
            "push the plate so that it ends up in front of the stove",
            "push the plate to the front of the stove",
        ),
        ("set each of the moka pots on the stove", "set all the moka pots on the stove"),
        ("put every moka pot on the stove", "put all of the moka pots on the stove"),
        (
            "first the alphabet soup, then the cream cheese box: both into the basket",
            "put the alphabet soup into the basket, then put the cream cheese box into the basket",
        ),
        (
            "the ketchup, the butter and then the milk: all of them go in the basket",
            "put the ketchup in the basket, put the butter in the basket, put the milk in the"
            " basket",
        ),
    ],
)
def test_a_round_4_rewording_asks_what_the_plain_command_asks(said: str, told: str) -> None:
    assert not parse_task(told).problem
    assert parse_task(said) == parse_task(told)


@pytest.mark.parametrize("quantifier", ["all the", "all of the", "each of the", "every"])
def test_every_moka_pot_is_each_one_the_scene_has(quantifier: str) -> None:
    noun = "moka pot" if quantifier == "every" else "moka pots"
    actions = plan(f"put {quantifier} {noun} on the stove", kitchen_10())
    assert [(name, a["ref"]) for name, a in actions] == [
        ("pick", "moka_pot_1"),
        ("place", "moka_pot_1"),
        ("pick", "moka_pot_2"),
        ("place", "moka_pot_2"),
    ]


def test_every_thing_the_scene_lacks_is_still_refused() -> None:
    with pytest.raises(Unresolved, match="kettle"):
        plan("put all the kettles on the stove", kitchen_10())


_REGULAR = {"put": "putting", "move": "moving", "open": "opening", "grab": "grabbing"}
_VERBS = [
    "put", "place", "set", "move", "drop", "insert", "stack", "bring", "carry", "store",
    "pick", "lift", "take", "grab", "get", "open", "close", "shut", "turn", "switch", "push",
    "slide", "shove", "nudge", "remove", "collect", "transfer", "return",
]  # fmt: skip


def _gerund(verb: str) -> str:
    """English's spelling of the "-ing" form, written apart from the code under test: a
    final silent e drops, a short vowel's single final consonant doubles."""
    vowels = "aeiou"
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    if (
        len(verb) >= 3
        and verb[-1] not in vowels + "wxy"
        and verb[-2] in vowels
        and verb[-3] not in vowels
        and verb not in {"open", "collect", "insert", "transfer", "return", "store"}
    ):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def test_the_oracles_spelling_agrees_with_english() -> None:
    assert {v: _gerund(v) for v in _REGULAR} == _REGULAR


@given(st.sampled_from(_VERBS))
@settings(max_examples=examples(40), deadline=None)
def test_every_verbs_ing_form_is_read_as_the_verb(verb: str) -> None:
    assert verb_of_gerund(_gerund(verb)) == verb


@pytest.mark.parametrize("word", ["thing", "ring", "king", "morning", "pudding", "wing"])
def test_an_ing_word_of_no_verb_is_not_a_verb(word: str) -> None:
    assert verb_of_gerund(word) is None
