"""The planner's fallback for a replaced object ("the wine bottle" where the scene's only
bottle is a white one), attacked over scenes with several things of the kind.

The oracle is written from the rule as a user would state it, over the labels the test
itself generated, not from the grounding code: a thing is taken only when it is of the
named kind, carries every colour the instruction says, and is the only such thing; two
such things are a question, none is a refusal, and a thing of another kind is never taken.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.planner.brief import parse_brief
from harness.planner.grounding import Unresolved
from harness.planner.household import plan_actions
from harness.planner.language import parse_task
from tests.libero_briefs import FIX, OBJ, SURF, brief
from tests.tiers import examples

SAID_COLOURS = ["red", "white", "green", "black", "yellow"]
"""Colours the instruction may say, and the labels carry."""

OTHER_KINDS = ["mug", "bowl", "plate", "box"]
"""Things of other kinds beside the bottles: never the one taken."""

bottle_labels = st.lists(
    st.sampled_from([*(f"{c} bottle" for c in SAID_COLOURS), "bottle", "ketchup bottle"]),
    max_size=4,
)
distractors = st.lists(
    st.tuples(st.sampled_from(SAID_COLOURS), st.sampled_from(OTHER_KINDS)), max_size=3
)


def _scene(bottles: list[str], others: list[tuple[str, str]]) -> list[Any]:
    entries: list[Any] = []
    for i, label in enumerate(bottles):
        entries.append((f"bottle_{i + 1}", label, OBJ, (0.45, -0.1 + 0.06 * i, 0.1), "on table"))
    for i, (colour, kind) in enumerate(others):
        ref = f"{kind}_{i + 1}"
        entries.append((ref, f"{colour} {kind}", OBJ, (0.6, -0.1 + 0.06 * i, 0.05), "on table"))
    entries.append(("brown_rack_1", "brown rack", FIX, (0.4, -0.3, 0.2), ""))
    entries.append(("brown_rack_1_top_region", "top of brown rack", SURF, (0.4, -0.3, 0.25), ""))
    return entries


def _expected(colour: str | None, bottles: list[str]) -> str | None:
    """The oracle: the one bottle carrying the colour said (any bottle if none is said)."""
    fits = [
        f"bottle_{i + 1}"
        for i, label in enumerate(bottles)
        if colour is None or colour in label.split()
    ]
    return fits[0] if len(fits) == 1 else None


@settings(max_examples=examples(300), deadline=None)
@given(
    bottles=bottle_labels,
    others=distractors,
    colour=st.none() | st.sampled_from(SAID_COLOURS),
)
def test_a_bottle_of_another_name_is_taken_only_when_it_is_the_one_that_fits(
    bottles: list[str], others: list[tuple[str, str]], colour: str | None
) -> None:
    said = f"{colour} wine bottle" if colour else "wine bottle"
    instruction = f"put the {said} on the rack"
    task = parse_task(instruction)
    assert task.ok, task.problem
    want = _expected(colour, bottles)
    try:
        actions = plan_actions(task, parse_brief(brief(_scene(bottles, others))))
    except Unresolved:
        assert want is None, f"{instruction!r} in {bottles} refused; {want} fits alone"
        return
    assert want is not None, f"{instruction!r} in {bottles} took {actions[0]}: none fits alone"
    assert actions[0] == ("pick", {"ref": want})
    assert actions[1][1]["target"] == "brown_rack_1_top_region"


@pytest.mark.parametrize(
    ("colour", "bottles", "want"),
    [
        (None, ["white bottle"], "bottle_1"),
        (None, ["white bottle", "red bottle"], None),
        ("red", ["white bottle", "red bottle"], "bottle_2"),
        ("red", ["white bottle"], None),
        ("red", ["red bottle", "red bottle"], None),
        (None, [], None),
    ],
)
def test_the_oracle_reads_the_rule(
    colour: str | None, bottles: list[str], want: str | None
) -> None:
    """Guards the oracle itself on cases a reader can check by eye."""
    assert _expected(colour, bottles) == want
