"""Positional qualifiers, storage-furniture words and shelf surfaces in the offline planner.

"The butter at the back", "the middle black bowl", "the book in the middle" pick one of
several alike by where it stands in the planner's stated frame (front away from the robot,
+x; left as the camera sees it; the middle between the others along the line they spread
on); "the cabinet" may name the only storage furniture of a scene that has no cabinet; a
shelf unit's "shelf", "top" and "under the shelf" are three different surfaces. Scenes are
made up in the LIBERO world's Brief format (tests/libero_briefs.py), laid out the way the
published scenes lay them out; positions are drawn by hypothesis where the rule is about
positions (any row, any order of refs).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.planner.brief import parse_brief
from harness.planner.grounding import Unresolved
from harness.planner.household import plan_actions
from harness.planner.language import parse_task
from tests.libero_briefs import CONT, FIX, OBJ, SURF, brief
from tests.tiers import examples

Plan = list[tuple[str, dict[str, Any]]]


def plan(instruction: str, entries: list[Any], notes: list[str] | None = None) -> Plan:
    task = parse_task(instruction)
    assert task.ok, task.problem
    return plan_actions(task, parse_brief(brief(entries)), notes=notes)


def picked(actions: Plan) -> str:
    return next(a["ref"] for name, a in actions if name == "pick")


def placed(actions: Plan) -> str:
    return next(a["target"] for name, a in actions if name == "place")


def cabinet() -> list[Any]:
    return [
        ("wooden_cabinet_1", "wooden cabinet", FIX, (0.67, -0.30, -0.01), ""),
        ("wooden_cabinet_1_top_region", "top drawer of wooden cabinet", CONT + ", open",
         (0.66, -0.15, 0.18), ""),
        ("wooden_cabinet_1_middle_region", "middle drawer of wooden cabinet", CONT + ", closed",
         (0.66, -0.31, 0.11), ""),
        ("wooden_cabinet_1_bottom_region", "bottom drawer of wooden cabinet", CONT + ", closed",
         (0.66, -0.31, 0.04), ""),
        ("wooden_cabinet_1_top_side", "top of wooden cabinet", SURF, (0.66, -0.32, 0.22), ""),
    ]  # fmt: skip


def shelf(at: tuple[float, float] = (0.56, 0.28)) -> list[Any]:
    """A wooden two layer shelf: its floor, its board, its open top (two of them labelled
    "top of", as the LIBERO world labels them)."""
    x, y = at
    return [
        ("wooden_two_layer_shelf_1", "wooden two layer shelf", FIX, (x, y, -0.02), ""),
        ("wooden_two_layer_shelf_1_bottom_region", "bottom of wooden two layer shelf", SURF,
         (x, y + 0.01, -0.01), ""),
        ("wooden_two_layer_shelf_1_top_region", "top of wooden two layer shelf", SURF,
         (x, y + 0.01, 0.11), ""),
        ("wooden_two_layer_shelf_1_top_side", "top of wooden two layer shelf", SURF,
         (x, y + 0.01, 0.18), ""),
    ]  # fmt: skip


BOARD = "wooden_two_layer_shelf_1_top_region"
ROOF = "wooden_two_layer_shelf_1_top_side"
FLOOR = "wooden_two_layer_shelf_1_bottom_region"


def bowls(positions: list[tuple[float, float]]) -> list[Any]:
    return [
        (f"akita_black_bowl_{i + 1}", "black bowl", OBJ, (x, y, 0.01), "")
        for i, (x, y) in enumerate(positions)
    ] + [("plate_1", "plate", OBJ, (0.66, -0.05, 0.0), ""), *cabinet()]


THREE = [(0.776, 0.138), (0.607, 0.225), (0.505, 0.029)]
"""Three bowls as a libero_90 kitchen lays them out: front, middle, back (not in a
straight line)."""


# ====================================================================== the words


@pytest.mark.parametrize(
    ("phrase", "ordinal"),
    [
        ("the butter at the back", "back"),
        ("the butter in the back", "back"),
        ("the butter that is at the back", "back"),
        ("the butter at the very back", "back"),
        ("the back butter", "back"),
        ("the rear butter", "back"),
        ("the butter at the rear", "back"),
        ("the butter at the front", "front"),
        ("the butter in front", "front"),
        ("the front butter", "front"),
        ("the butter in the middle", "middle"),
        ("the butter which sits in the middle", "middle"),
        ("the middle butter", "middle"),
        ("the butter in the centre", "center"),
        ("the central butter", "center"),
        ("the frontmost butter", "front"),
        ("the rearmost butter", "back"),
        ("the middlemost butter", "middle"),
    ],
)
def test_a_trailing_position_picks_one_of_several(phrase: str, ordinal: str) -> None:
    task = parse_task(f"put {phrase} on the plate")
    assert task.ok, task.problem
    subject = task.steps[0].subject
    assert (subject.words, subject.ordinal) == (("butter",), ordinal)
    assert task.steps[0].target is not None and task.steps[0].target.words == ("plate",)


def test_a_position_with_an_owner_is_no_ordinal() -> None:
    """ "the bowl at the front of the stove" is where it is, not which of several."""
    task = parse_task("put the bowl at the front of the stove on the plate")
    assert task.ok and task.steps[0].subject.ordinal is None


@pytest.mark.parametrize(
    "instruction",
    [
        "stack the black bowl at the front on the black bowl in the middle",
        "stack the front black bowl on the middle black bowl",
        "put the black bowl in front onto the black bowl in the centre",
        "place the black bowl that is at the front on top of the black bowl in the middle",
    ],
)
def test_a_position_after_the_destination_is_the_targets(instruction: str) -> None:
    step = parse_task(instruction).steps[0]
    assert step.subject.ordinal == "front"
    assert step.target is not None and step.target.ordinal in ("middle", "center")
    assert plan(instruction, bowls(THREE))[-1][1]["target"] == "akita_black_bowl_2"


# ====================================================================== front, back, middle


@pytest.mark.parametrize(
    ("instruction", "bowl"),
    [
        ("put the black bowl at the back on the plate", "akita_black_bowl_3"),
        ("move the rear black bowl onto the plate", "akita_black_bowl_3"),
        ("put the black bowl at the front on the plate", "akita_black_bowl_1"),
        ("put the middle black bowl on the plate", "akita_black_bowl_2"),
        ("place the black bowl in the middle on the plate", "akita_black_bowl_2"),
        ("put the middle black bowl on top of the cabinet", "akita_black_bowl_2"),
        ("stack the middle black bowl on the back black bowl", "akita_black_bowl_2"),
    ],
)
def test_libero_90_kitchen_bowls(instruction: str, bowl: str) -> None:
    assert picked(plan(instruction, bowls(THREE))) == bowl


@settings(max_examples=examples(60), deadline=None)
@given(
    angle=st.floats(0.0, math.pi),
    gaps=st.tuples(st.floats(0.06, 0.15), st.floats(0.06, 0.15)),
    sideways=st.tuples(*(st.floats(-0.03, 0.03) for _ in range(3))),
    order=st.permutations([0, 1, 2]),
)
def test_the_middle_one_is_between_the_others_in_any_row_and_order(
    angle: float, gaps: tuple[float, float], sideways: tuple[float, ...], order: list[int]
) -> None:
    """Three bowls along a row in any direction, bent a little, refs in any order: the
    middle one is the one between the other two."""
    ux, uy = math.cos(angle), math.sin(angle)
    along = [0.0, gaps[0], gaps[0] + gaps[1]]
    points = [
        (0.6 + (a - along[2] / 2) * ux - s * uy, 0.05 + (a - along[2] / 2) * uy + s * ux)
        for a, s in zip(along, sideways, strict=True)
    ]
    placed_at = [points[i] for i in order]  # bowl k stands at row point order[k]
    expected = f"akita_black_bowl_{order.index(1) + 1}"
    for instruction in (
        "put the middle black bowl on the plate",
        "put the black bowl in the middle on the plate",
    ):
        assert picked(plan(instruction, bowls(placed_at))) == expected


@settings(max_examples=examples(60), deadline=None)
@given(
    xs=st.lists(st.floats(0.40, 0.80), min_size=2, max_size=4, unique=True),
    ys=st.lists(st.floats(-0.20, 0.25), min_size=4, max_size=4),
    which=st.sampled_from(["front", "back"]),
    phrase=st.sampled_from(
        ["the {w} black bowl", "the black bowl at the {w}", "the black bowl in the {w}"]
    ),
)
def test_front_and_back_are_along_the_robots_reach(
    xs: list[float], ys: list[float], which: str, phrase: str
) -> None:
    """Front is the farthest from the robot (+x), back the nearest, wherever the bowls
    stand; two level within 3 cm are a refusal that names them."""
    xs = [round(x, 3) for x in xs]  # as the Brief writes them
    positions = list(zip(xs, ys, strict=False))
    ranked = sorted(range(len(xs)), key=lambda i: xs[i], reverse=which == "front")
    gap = abs(xs[ranked[0]] - xs[ranked[1]])
    assume(abs(gap - 0.03) > 0.002)  # not at the margin itself
    instruction = f"put {phrase.format(w=which)} on the plate"
    if gap < 0.03:
        with pytest.raises(Unresolved) as caught:
            plan(instruction, bowls(positions))
        assert caught.value.candidates
        return
    assert picked(plan(instruction, bowls(positions))) == f"akita_black_bowl_{ranked[0] + 1}"


@pytest.mark.parametrize(
    "positions",
    [
        [(0.6, 0.1)],  # one bowl: no middle
        [(0.5, 0.1), (0.7, 0.1)],  # two: none between
        [(0.45, 0.1), (0.55, 0.1), (0.65, 0.1), (0.75, 0.1)],  # four: two middles
        [(0.6, 0.0), (0.6 + 0.15 * math.cos(math.pi / 3), 0.15 * math.sin(math.pi / 3)),
         (0.75, 0.0)],  # a triangle: no row
        [(0.5, 0.1), (0.51, 0.1), (0.7, 0.1)],  # the middle one level with an end
    ],
)  # fmt: skip
def test_no_clear_middle_is_a_refusal_naming_the_bowls(positions: list[Any]) -> None:
    with pytest.raises(Unresolved) as caught:
        plan("put the middle black bowl on the plate", bowls(positions))
    assert set(caught.value.candidates) == {
        f"akita_black_bowl_{i + 1}" for i in range(len(positions))
    }


def test_books_left_middle_right_whatever_their_colour() -> None:
    """Libero_90 study scene: "the book in the middle" among a black and two yellow books
    (left is -y, as the camera and the scene's own area names have it)."""
    books = [
        ("black_book_1", "black book", OBJ, (0.595, -0.148, 0.04), ""),
        ("yellow_book_1", "yellow book", OBJ, (0.542, -0.001, 0.03), ""),
        ("yellow_book_2", "yellow book", OBJ, (0.508, -0.26, 0.03), ""),
        *shelf(),
    ]
    for instruction, book in [
        ("pick up the book in the middle and place it on the cabinet shelf", "black_book_1"),
        ("pick up the book on the left and place it on top of the shelf", "yellow_book_2"),
        ("pick up the book on the right and place it on the cabinet shelf", "yellow_book_1"),
        ("take the middle book and put it under the shelf", "black_book_1"),
    ]:
        assert picked(plan(instruction, books)) == book


# ====================================================================== furniture and shelves


def pan_scene() -> list[Any]:
    return [
        ("chefmate_8_frypan_1", "chefmate8 frypan", OBJ, (0.69, 0.06, 0.02), ""),
        ("white_bowl_1", "white bowl", OBJ, (0.53, 0.12, 0.01), ""),
        ("flat_stove_1", "stove", FIX, (0.47, 0.30, -0.01), ""),
        ("flat_stove_1_cook_region", "cooking area of stove", SURF, (0.62, 0.30, -0.01), ""),
        *shelf((0.66, -0.26)),
    ]


@pytest.mark.parametrize(
    ("instruction", "target"),
    [
        ("put the frying pan on the cabinet shelf", BOARD),
        ("put the frying pan on the shelf", BOARD),
        ("place the frying pan onto the shelf of the cabinet", BOARD),
        ("put the frying pan on top of the cabinet", ROOF),
        ("put the white bowl on top of the cabinet", ROOF),
        ("set the white bowl on top of the shelf", ROOF),
        ("put the white bowl on the top of the cupboard", ROOF),
        ("put the frying pan under the cabinet shelf", FLOOR),
        ("put the frying pan underneath the shelf", FLOOR),
        ("set the white bowl down beneath the cabinet shelf", FLOOR),
    ],
)
def test_shelf_unit_surfaces(instruction: str, target: str) -> None:
    """ "The shelf" is the board with the unit's top over it and its floor under it; "on top
    of" is the top nothing covers (a place lowered from above reaches it); "under the
    shelf" is the surface below the board."""
    notes: list[str] = []
    assert placed(plan(instruction, pan_scene(), notes)) == target
    if "cabinet" in instruction or "cupboard" in instruction:
        assert any("wooden_two_layer_shelf_1" in n and "storage furniture" in n for n in notes)


def test_cabinet_is_the_cabinet_where_there_is_one() -> None:
    """A scene with a cabinet keeps the word for it, shelf or not."""
    scene = [*pan_scene(), *cabinet()]
    assert placed(plan("put the white bowl on top of the cabinet", scene)) == (
        "wooden_cabinet_1_top_side"
    )
    assert placed(plan("put the white bowl on top of the shelf", scene)) == ROOF


@pytest.mark.parametrize(
    "instruction",
    [
        "put the white bowl on top of the cabinet",  # two shelf units, no cabinet
        "put the white bowl on top of the red cabinet",  # a colour nothing here has
    ],
)
def test_no_single_piece_of_furniture_is_a_refusal(instruction: str) -> None:
    second = [
        (ref.replace("shelf_1", "shelf_2"), label, tags, (x, y + 0.5, z), rest)
        for ref, label, tags, (x, y, z), rest in shelf()
    ]
    scene = [*pan_scene(), *second] if "red" not in instruction else pan_scene()
    with pytest.raises(Unresolved):
        plan(instruction, scene)


def test_nothing_under_a_thing_without_a_lower_surface() -> None:
    with pytest.raises(Unresolved, match="under"):
        plan("put the white bowl under the stove", pan_scene())


# ====================================================================== on top of it


@pytest.mark.parametrize(
    "instruction",
    [
        "close the top drawer of the cabinet and put the black bowl on top of it",
        "shut the top drawer of the cabinet, then place the black bowl on top of it",
        "close the cabinet's top drawer and set the black bowl on top of it",
        "put the black bowl on top of the top drawer of the cabinet",
    ],
)
def test_on_top_of_a_drawer_is_on_top_of_its_furniture(instruction: str) -> None:
    scene = [("akita_black_bowl_1", "black bowl", OBJ, (0.55, -0.02, 0.01), ""), *cabinet()]
    assert placed(plan(instruction, scene)) == "wooden_cabinet_1_top_side"


@pytest.mark.parametrize(
    ("instruction", "butter"),
    [
        ("put the butter at the back in the top drawer of the cabinet and close it", "butter_2"),
        ("put the butter at the front in the top drawer of the cabinet and close it", "butter_1"),
        ("put the front butter into the cabinet's top drawer, then shut it", "butter_1"),
        ("place the butter that is in the back inside the top drawer of the cabinet", "butter_2"),
    ],
)
def test_butter_front_and_back(instruction: str, butter: str) -> None:
    scene = [
        ("butter_1", "butter", OBJ, (0.667, 0.212, 0.0), ""),
        ("butter_2", "butter", OBJ, (0.548, 0.19, 0.0), ""),
        ("chocolate_pudding_1", "chocolate pudding", OBJ, (0.68, 0.07, 0.0), ""),
        *cabinet(),
    ]
    actions = plan(instruction, scene)
    assert picked(actions) == butter
    assert placed(actions) == "wooden_cabinet_1_top_region"


def test_a_shelf_word_does_not_stand_for_a_cabinet_of_drawers() -> None:
    """ "The cabinet" may name a shelf unit, but "the wooden shelf" is not said of a
    cabinet of drawers (it has no shelf board): a refusal, not a guess."""
    scene = [("akita_black_bowl_1", "black bowl", OBJ, (0.55, -0.02, 0.01), ""), *cabinet()]
    for instruction in (
        "put the black bowl on the wooden shelf",
        "put the black bowl on top of the wooden shelf",
    ):
        with pytest.raises(Unresolved):
            plan(instruction, scene)
