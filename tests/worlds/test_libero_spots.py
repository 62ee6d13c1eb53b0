"""Where a held object is set down in a region (``worlds/libero/spots.py``), on a stand-in
for the LIBERO geometry (boxes and a region given here; no simulator).

The oracle is written from the rule's statement: the body inside the region by the
margin, the footprint clear of what stands there, and, when another object of the same
kind is still elsewhere, room for it beside the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from worlds.libero.geometry import Box
from worlds.libero.segments import FAST, SLOW
from worlds.libero.spots import (
    GAP_M,
    MARGIN_M,
    TWIN_GAP_M,
    container_place,
    container_spot,
    region_spot,
    turned_spot,
)

STOVE = np.array([0.608, -0.194, 0.0])
HALF = np.array([0.075, 0.075, 0.0025])
POT = (0.0814, 0.1475, 0.152)
POT_SHIFT = np.array([0.0, -0.0177])  # the footprint's middle, from the pot's body
PLACE_REACH_M = 0.82
"""A reach given as a distance (the skill gives ``reach.reach_radius`` for the turn: 0.846 m
at LIBERO-PRO libero_10_swap task 8's stove)."""


@dataclass
class Item:
    libero_category: str


@dataclass
class Catalog:
    items: dict[str, Item] = field(default_factory=dict)

    def refs(self, kind: str) -> list[str]:
        return list(self.items)

    def get(self, ref: str) -> Item | None:
        return self.items.get(ref)


class Geometry:
    """The LiberoGeometry calls region_spot makes, on boxes given here."""

    def __init__(
        self,
        bodies: dict[str, tuple[float, float, float]],
        kinds: dict[str, str],
        sizes: dict[str, tuple[float, float, float]] | None = None,
    ):
        self.bodies = bodies
        self.catalog = Catalog({r: Item(k) for r, k in kinds.items()})
        self.sizes = sizes or {}
        self.half = HALF.copy()

    def region_frame(self, ref: str) -> Any:
        return STOVE.copy(), np.eye(3), self.half.copy()

    def level_frame(self, ref: str) -> Any:
        return self.region_frame(ref)

    def body_position(self, ref: str) -> tuple[float, float, float]:
        return self.bodies[ref]

    def box(self, ref: str) -> Box:
        x, y, z = self.bodies[ref]
        if ref in self.sizes:  # a box whose bottom is at its body
            size = self.sizes[ref]
            return Box((x, y, z + size[2] / 2), size)
        return Box((x + POT_SHIFT[0], y + POT_SHIFT[1], z + 0.07), POT)

    def predicate(self, name: str, ref: str, target: str) -> bool:
        x, y, _ = self.bodies[ref]
        return bool(np.all(np.abs(np.array([x, y]) - STOVE[:2]) < HALF[:2]))

    def footprint(self, ref: str) -> np.ndarray:
        box = self.box(ref)
        middle, half = np.array(box.centre[:2]), np.array(box.size[:2]) / 2
        return middle + half * np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]])


def footprint_gap(a: np.ndarray, b: np.ndarray) -> float:
    """The gap between two pot footprints whose bodies are at ``a`` and ``b``."""
    return float(max(abs(a[0] - b[0]) - POT[0], abs(a[1] - b[1]) - POT[1]))


def test_the_first_of_two_pots_leaves_room_for_the_second_and_the_second_takes_it() -> None:
    """libero_10 task 8 at state 0: before, both went to the middle and the second landed
    on the first."""
    held = (0.606, 0.258, 0.20)  # lifted over its first place
    geo = Geometry({"moka_pot_1": held, "moka_pot_2": (0.70, 0.043, 0.03)}, {
        "moka_pot_1": "moka_pot", "moka_pot_2": "moka_pot"})  # fmt: skip
    first = region_spot(geo, "moka_pot_1", "flat_stove_1_cook_region")  # type: ignore[arg-type]
    assert first is not None
    assert np.all(np.abs(first - STOVE[:2]) <= HALF[:2] - MARGIN_M + 1e-9)
    assert abs(first[0] - STOVE[0]) > 0.04  # off the middle, along the pot's narrow side
    geo.bodies["moka_pot_1"] = (float(first[0]), float(first[1]), 0.0)
    geo.bodies["moka_pot_2"] = (0.70, 0.043, 0.20)
    second = region_spot(geo, "moka_pot_2", "flat_stove_1_cook_region")  # type: ignore[arg-type]
    assert second is not None
    assert np.all(np.abs(second - STOVE[:2]) <= HALF[:2] - MARGIN_M + 1e-9)
    assert footprint_gap(first, second) >= GAP_M - 1e-9
    # the two stand about as far inside the region's edges as each other
    assert abs(abs(first[0] - STOVE[0]) - abs(second[0] - STOVE[0])) <= 0.016


def test_a_lone_object_on_an_empty_region_goes_to_its_middle() -> None:
    geo = Geometry({"bowl_1": (0.5, 0.2, 0.2)}, {"bowl_1": "bowl"})
    spot = region_spot(geo, "bowl_1", "flat_stove_1_cook_region")  # type: ignore[arg-type]
    assert spot is not None and np.allclose(spot, STOVE[:2])


@settings(max_examples=examples(60), deadline=None)
@given(
    st.floats(-0.07, 0.07),
    st.floats(-0.07, 0.07),
    st.booleans(),
)
def test_a_spot_is_inside_and_clear_whenever_any_spot_is(dx: float, dy: float, twin: bool) -> None:
    """Something stands at a random place on the region; a third of the same kind is
    elsewhere or not. Oracle: a brute-force search of clear spots on a fine grid."""
    standing = (float(STOVE[0] + dx), float(STOVE[1] + dy), 0.0)
    bodies = {"held": (0.5, 0.3, 0.2), "there": standing}
    kinds = {"held": "moka_pot", "there": "other"}
    if twin:
        bodies["twin"], kinds["twin"] = (0.7, 0.3, 0.0), "moka_pot"
    geo = Geometry(bodies, kinds)
    spot = region_spot(geo, "held", "flat_stove_1_cook_region")  # type: ignore[arg-type]
    assert spot is not None
    assert np.all(np.abs(spot - STOVE[:2]) <= HALF[:2] - MARGIN_M + 1e-9)
    there = np.array(standing[:2])
    lim = HALF[:2] - MARGIN_M
    a, b = np.meshgrid(np.linspace(-lim[0], lim[0], 25), np.linspace(-lim[1], lim[1], 25))
    grid = STOVE[:2] + np.stack([a.ravel(), b.ravel()], axis=1)
    to_there = gaps(grid, there)
    if (to_there >= GAP_M + 0.005).any():  # a clear spot exists (some to spare for the grid)
        assert footprint_gap(spot, there) >= GAP_M - 1e-9, (spot, there)
    if not twin and footprint_gap(STOVE[:2], there) >= GAP_M:
        assert np.allclose(spot, STOVE[:2])  # the middle, while it is free
    if twin:
        # any first spot clear of what stands there that leaves a second one room
        pair = (to_there[:, None] >= GAP_M + 0.005) & (to_there[None, :] >= 0.005)
        pair &= pairwise(grid) >= TWIN_GAP_M + 0.005
        if pair.any():
            room = np.minimum(gaps(grid, spot), to_there).max()
            assert room >= TWIN_GAP_M - 1e-9, (spot, there)


def gaps(spots: np.ndarray, body: np.ndarray) -> np.ndarray:
    """:func:`footprint_gap` from each of ``spots`` to a pot whose body is at ``body``."""
    apart = np.abs(spots - body) - np.array(POT[:2])
    return apart.max(axis=1)


def pairwise(spots: np.ndarray) -> np.ndarray:
    apart = np.abs(spots[:, None, :] - spots[None, :, :]) - np.array(POT[:2])
    return apart.max(axis=2)


FAR_STOVE = np.array([0.854, 0.065, 0.0])


class FarGeometry(Geometry):
    """The stove of LIBERO-PRO libero_10_swap task 8: its cook region 0.78-0.93 m out."""

    def region_frame(self, ref: str) -> Any:
        return FAR_STOVE.copy(), np.eye(3), HALF.copy()

    def predicate(self, name: str, ref: str, target: str) -> bool:
        x, y, _ = self.bodies[ref]
        return bool(np.all(np.abs(np.array([x, y]) - FAR_STOVE[:2]) < HALF[:2]))


def turned_gap(a: np.ndarray, b: np.ndarray, turned: bool) -> float:
    """The gap between two pot footprints (both turned a quarter or neither)."""
    size = (POT[1], POT[0]) if turned else POT[:2]
    return float(max(abs(a[0] - b[0]) - size[0], abs(a[1] - b[1]) - size[1]))


@settings(max_examples=examples(8), deadline=None)
@given(st.floats(-0.6, 1.4), st.floats(-0.01, 0.01), st.floats(-0.01, 0.01))
def test_two_pots_on_a_far_stove_stand_within_reach_turned_a_quarter(
    yaw: float, grip_x: float, grip_y: float
) -> None:
    """Along the stove's near edge, where alone the arm reaches, two pots 14.8 cm long fit
    side by side only turned a quarter: the first is turned (towards the wrist's home) and
    leaves the second room, both with their fingers within PLACE_REACH_M. Oracle: the
    fingers' distance and the footprints' gap, computed here."""
    geo = FarGeometry({"moka_pot_1": (0.60, 0.25, 0.2), "moka_pot_2": (0.46, -0.2, 0.03)}, {
        "moka_pot_1": "moka_pot", "moka_pot_2": "moka_pot"})  # fmt: skip
    grip = np.array([grip_x, grip_y])
    found = turned_spot(geo, "moka_pot_1", "flat_stove_1_cook_region", grip, PLACE_REACH_M, yaw)  # type: ignore[arg-type]
    assert found is not None
    first, turn = found
    assert abs(abs(turn) - np.pi / 2) < 1e-9
    # towards the home yaw: the end yaw is the nearer of the two to it
    ends = [abs((yaw + t - np.pi / 2 + np.pi) % (2 * np.pi) - np.pi) for t in (turn, -turn)]
    assert ends[0] <= ends[1] + 1e-9
    c, s = np.cos(turn), np.sin(turn)
    fingers = first + np.array([c * grip[0] - s * grip[1], s * grip[0] + c * grip[1]])
    assert np.hypot(*fingers) <= PLACE_REACH_M + 1e-9
    assert np.all(np.abs(first - FAR_STOVE[:2]) <= HALF[:2] - MARGIN_M + 1e-9)
    geo.bodies["moka_pot_1"] = (float(first[0]), float(first[1]), 0.0)
    geo.bodies["moka_pot_2"] = (0.46, -0.2, 0.2)
    # the first now stands turned: its footprint as the scene reads it
    geo.box = lambda ref: (  # type: ignore[method-assign]
        Box((first[0], first[1], 0.07), (POT[1], POT[0], POT[2]))
        if ref == "moka_pot_1"
        else Box((0.46, -0.2 + POT_SHIFT[1], 0.27), POT)
    )
    second_found = turned_spot(
        geo, "moka_pot_2", "flat_stove_1_cook_region", grip, PLACE_REACH_M, yaw
    )  # type: ignore[arg-type]
    assert second_found is not None
    second, turn2 = second_found
    assert abs(abs(turn2) - np.pi / 2) < 1e-9
    c, s = np.cos(turn2), np.sin(turn2)
    fingers = second + np.array([c * grip[0] - s * grip[1], s * grip[0] + c * grip[1]])
    assert np.hypot(*fingers) <= PLACE_REACH_M + 1e-9
    # the footprints (the second's middle shifted from its body as it is turned) are apart
    shift = np.array([-s * POT_SHIFT[1], c * POT_SHIFT[1]])
    assert turned_gap(first, second + shift, True) >= GAP_M - 1e-9


def test_without_a_reach_a_pot_keeps_its_turn() -> None:
    """The near stove of libero_10 task 8: the turn as held, as before."""
    geo = Geometry({"moka_pot_1": (0.606, 0.258, 0.2), "moka_pot_2": (0.70, 0.043, 0.03)}, {
        "moka_pot_1": "moka_pot", "moka_pot_2": "moka_pot"})  # fmt: skip
    found = turned_spot(
        geo, "moka_pot_1", "flat_stove_1_cook_region", np.zeros(2), PLACE_REACH_M, 0.4
    )  # type: ignore[arg-type]
    assert found is not None and found[1] == 0.0


def test_a_region_wholly_out_of_reach_still_gets_a_spot() -> None:
    """libero_10_swap task 8 at state 1: no spot within reach either way round (the plan
    failed with an empty reduction before); the spot as before, unreached."""
    geo = FarGeometry({"moka_pot_1": (0.60, 0.25, 0.2), "moka_pot_2": (0.46, -0.2, 0.03)}, {
        "moka_pot_1": "moka_pot", "moka_pot_2": "moka_pot"})  # fmt: skip
    found = turned_spot(geo, "moka_pot_1", "flat_stove_1_cook_region", np.zeros(2), 0.5, 0.4)  # type: ignore[arg-type]
    assert found is not None
    assert np.all(np.abs(found[0] - FAR_STOVE[:2]) <= HALF[:2] - MARGIN_M + 1e-9)


@settings(max_examples=examples(60), deadline=None)
@given(st.floats(-0.07, 0.07), st.floats(-0.07, 0.07))
def test_a_place_in_a_container_keeps_room_only_from_what_is_there(dx: float, dy: float) -> None:
    """A place *in* a container (LIBERO-PRO libero_10_task 7: the cream cheese landed on
    the ketchup standing in the middle of the basket) takes the spot clear of what stands
    inside it, and never leaves room for a twin: with nothing there it is the one that
    brings the footprint's middle over the container's middle (the body off it by the
    footprint's shift: libero_90 task 75, a book's end on the caddy's wall), even with
    another of its kind on the table; what stands outside its walls does not count."""
    middle = STOVE[:2] - POT_SHIFT
    bodies = {"held": (0.5, 0.3, 0.2), "twin": (0.7, 0.3, 0.0)}
    kinds = {"held": "moka_pot", "twin": "moka_pot"}
    geo = Geometry(bodies, kinds)
    spot = container_spot(geo, "held", "basket")  # type: ignore[arg-type]
    assert spot is not None and np.allclose(spot, middle)
    standing = (float(STOVE[0] + dx), float(STOVE[1] + dy), 0.0)
    geo = Geometry({**bodies, "there": standing}, {**kinds, "there": "other"})
    spot = container_spot(geo, "held", "basket")  # type: ignore[arg-type]
    assert spot is not None
    assert np.all(np.abs(spot - STOVE[:2]) <= HALF[:2] - MARGIN_M + 1e-9)
    there = np.array(standing[:2])
    if footprint_gap(middle, there) >= GAP_M or np.any(
        np.abs(there + POT_SHIFT - STOVE[:2]) > HALF[:2]
    ):  # the middle is free, or what stands there is outside the container's walls
        assert np.allclose(spot, middle)
        return
    lim = HALF[:2] - MARGIN_M
    a, b = np.meshgrid(np.linspace(-lim[0], lim[0], 25), np.linspace(-lim[1], lim[1], 25))
    grid = STOVE[:2] + np.stack([a.ravel(), b.ravel()], axis=1)
    to_there = gaps(grid, there)
    if (to_there >= GAP_M + 0.005).any():
        assert footprint_gap(spot, there) >= GAP_M - 1e-9, (spot, there)
    else:  # no clear spot: the one furthest from it, never nearer than the middle
        assert footprint_gap(spot, there) >= footprint_gap(middle, there) - 1e-9


def test_in_a_container_the_footprint_not_the_body_comes_over_the_middle() -> None:
    """libero_90 task 75: a book's body is 1.2 cm from its footprint's middle, and with the
    body over the middle of the caddy's compartment (12.4 cm across, the book 11.1 cm) its
    end came down on the wall. The footprint's middle comes over the region's middle, and
    the body stays inside by the margin however far it lies from the footprint."""
    for shift_y in (0.0, -0.0177, 0.05, -0.2):
        geo = Geometry({"held": (0.5, 0.3, 0.2)}, {"held": "book"})
        geo.box = lambda ref, s=shift_y: Box((0.5, 0.3 + s, 0.27), POT)  # type: ignore[method-assign]
        spot = container_spot(geo, "held", "basket")  # type: ignore[arg-type]
        assert spot is not None
        lim = HALF[:2] - MARGIN_M
        assert np.all(np.abs(spot - STOVE[:2]) <= lim + 1e-9)
        expected = STOVE[:2] - np.clip(np.array([0.0, shift_y]), -lim, lim)
        assert np.allclose(spot, expected), (shift_y, spot)


def test_what_does_not_fit_a_container_has_its_body_over_the_middle_carried_at_speed() -> None:
    """LIBERO-PRO libero_10_task 5: a mug (10.5 by 14 cm with its handle) over the caddy's
    back compartment (5.6 by 12.4 cm) had its footprint's middle brought over the
    region's, its body 1.3 cm off the middle; it came down tipped on the walls and the
    retreating fingers took it out. What does not fit rests on the walls and LIBERO's In
    reads its body: the body comes over the middle, carried at speed, as before; what
    fits with under ``TIGHT_FIT_M`` to spare still has its footprint centred, carried
    slowly."""
    geo = Geometry({"held": (0.5, 0.3, 0.2)}, {"held": "mug"})
    spot, speed = container_place(geo, "held", "basket")  # type: ignore[arg-type]
    assert spot is not None and np.allclose(spot, STOVE[:2] - POT_SHIFT)  # 1.25 mm to spare
    assert speed == SLOW
    for half in ((0.03, 0.075), (0.075, 0.07), (0.03, 0.06)):  # too narrow one way or both
        geo.half = np.array([*half, 0.06])
        spot, speed = container_place(geo, "held", "basket")  # type: ignore[arg-type]
        assert spot is not None and np.allclose(spot, STOVE[:2]), (half, spot)
        assert speed == FAST


def test_in_a_container_a_flat_box_may_lie_on_a_flat_one_but_not_on_a_tall_one() -> None:
    """What stands in a container is in the way only when the held thing set on it would
    be above the container's top (LIBERO's In reads its body inside the region): a cream
    cheese box may lie on the butter in the basket, not on a ketchup bottle 15 cm tall."""
    cheese = (0.08, 0.043, 0.018)
    flat = {"held": cheese, "there": (0.076, 0.04, 0.017)}
    can = {"held": cheese, "there": (0.063, 0.062, 0.076)}  # over the middle, not the top
    tall = {"held": cheese, "there": (0.037, 0.056, 0.146)}
    for sizes, moved in ((flat, False), (can, False), (tall, True)):
        bodies = {"held": (0.5, 0.3, 0.2), "there": (float(STOVE[0]), float(STOVE[1]), -0.07)}
        geo = Geometry(bodies, {"held": "cream_cheese", "there": "other"}, sizes)
        geo.half = np.array([0.06, 0.06, 0.07])  # a basket's inside, 14 cm deep
        spot = container_spot(geo, "held", "basket")  # type: ignore[arg-type]
        assert spot is not None
        assert (not np.allclose(spot, STOVE[:2])) == moved, (sizes, spot)


@settings(max_examples=examples(30), deadline=None)
@given(st.floats(0.2, 0.24), st.floats(-0.6, 1.4))
def test_the_fingers_of_a_thing_held_by_a_long_handle_stay_inside_the_workspace(
    handle: float, yaw: float
) -> None:
    """libero_90 task 45: a pan held by its handle, the fingers 22 cm from its body towards
    the workspace's side; over the region's middle as held they were past it. Oracle: the
    fingers' point computed here lies inside the bounds and the body inside the region; with
    the wrist turned past its home yaw, the quarter turn back towards it (the handle towards
    the robot) brings the middle within them."""
    geo = Geometry({"pan": (0.6, -0.3, 0.2)}, {"pan": "frypan"}, {"pan": (0.2, 0.2, 0.05)})
    grip = np.array([0.0, -handle])
    bounds = ((0.112, -0.388, -0.008), (0.938, 0.388, 0.588))
    assert STOVE[1] - handle < bounds[0][1]  # as held, the middle sends them outside
    for turn_from in (yaw, np.pi / 2 + 0.4):
        found = turned_spot(
            geo, "pan", "flat_stove_1_cook_region", grip, PLACE_REACH_M, turn_from, bounds
        )  # type: ignore[arg-type]
        assert found is not None
        spot, turn = found
        c, s = np.cos(turn), np.sin(turn)
        fingers = spot + np.array([c * grip[0] - s * grip[1], s * grip[0] + c * grip[1]])
        assert np.all(fingers >= np.array(bounds[0][:2]) - 1e-9), (fingers, turn)
        assert np.all(fingers <= np.array(bounds[1][:2]) + 1e-9), (fingers, turn)
        assert np.all(np.abs(spot - STOVE[:2]) <= HALF[:2] - MARGIN_M + 1e-9)
    assert np.allclose(spot, STOVE[:2]) and abs(turn) == np.pi / 2  # the middle, turned


def test_a_reach_that_depends_on_the_turn_is_asked_for_each_turn() -> None:
    """The reach may be a function of the quarter turn (``reach.reach_radius`` depends on
    the fingers' yaw): asked for each turn tried, and a turn it puts out of reach gives
    no spot. Here as held nothing is reached (0.5 m), turned the near edge is (0.82 m),
    so the spot is a turned one with its fingers within 0.82 m."""
    geo = FarGeometry({"moka_pot_1": (0.60, 0.25, 0.2), "moka_pot_2": (0.46, -0.2, 0.03)}, {
        "moka_pot_1": "moka_pot", "moka_pot_2": "moka_pot"})  # fmt: skip
    asked: list[float] = []

    def reach(turn: float) -> float:
        asked.append(turn)
        return 0.82 if turn else 0.5

    found = turned_spot(geo, "moka_pot_1", "flat_stove_1_cook_region", np.zeros(2), reach, 0.4)  # type: ignore[arg-type]
    assert found is not None
    spot, turn = found
    assert sorted(asked) == sorted([0.0, turn]) and turn != 0.0
    assert np.hypot(*spot) <= 0.82 + 1e-9
