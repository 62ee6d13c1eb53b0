"""A place onto a shelf unit's covered layer (libero_90 KITCHEN_SCENE9 and STUDY_SCENE4's
wooden two layer shelf), judged by LIBERO's own predicates (helpers:
``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world

pytestmark = SKILL_MARKS


def test_a_pan_goes_in_under_the_shelf_held_by_its_handle() -> None:
    """libero_90 task 42 ("put the frying pan under the cabinet shelf", states 0-2 failed):
    the place lowered the pan from above onto the unit's roof, 8.9 cm over the layer under
    the board. The pan is now picked by its handle (the hand over its rim is taller than
    the gap), carried in sideways through the open side with the hand outside, and set
    down inside the layer; judged by LIBERO's In, with no physics step outside the
    envelope's workspace."""
    world = libero_world("libero_90", 42, 0)
    pan, layer = "chefmate_8_frypan_1", "wooden_two_layer_shelf_1_bottom_region"
    try:
        assert world.execute("pick", {"ref": pan}).ok
        placed = world.execute("place", {"ref": pan, "target": layer, "relation": "on"})
        assert placed.ok, placed.message
        assert "under" in placed.message and world.held_ref() is None
        assert holds(world, "in", pan, layer)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_book_taller_than_the_gap_goes_in_on_its_side() -> None:
    """libero_90 task 88 ("place it on the cabinet shelf", states 0-2 refused): the yellow
    book stands 12.2 cm tall in the fingers under a hand 10 cm over its top; the upper layer
    is 13.3 cm high. The wrist now turns it so the fingers close across the way in, tips
    the hand level (the book on its side, 9.8 cm high, pointing in ahead of the fingers),
    carries it in, sets it down and withdraws; judged by LIBERO's In, with no physics step
    outside the envelope's workspace."""
    world = libero_world("libero_90", 88, 0)
    book, layer = "yellow_book_1", "wooden_two_layer_shelf_1_top_region"
    try:
        assert world.execute("pick", {"ref": book}).ok
        placed = world.execute("place", {"ref": book, "target": layer, "relation": "on"})
        assert placed.ok, placed.message
        assert "on its side" in placed.message and world.held_ref() is None
        assert holds(world, "in", book, layer)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_book_goes_under_a_low_board_laid_flat_and_pushed_in() -> None:
    """libero_90 task 89 ("place it under the cabinet shelf", refused): the yellow book
    stands 12.2 cm tall and 9.8 cm wide, the layer under the board is 6.9 cm high, its floor
    the table. It is now stood on its edge in front of the opening, pushed over away from
    it and pushed in flat with the closed fingers, the hand outside; judged by LIBERO's In,
    more than half the book under the board (the geoms, not LIBERO), and no physics step
    outside the envelope's workspace."""
    world = libero_world("libero_90", 89, 0)
    book, layer = "yellow_book_1", "wooden_two_layer_shelf_1_bottom_region"
    try:
        assert world.execute("pick", {"ref": book}).ok
        placed = world.execute("place", {"ref": book, "target": layer, "relation": "on"})
        assert placed.ok, placed.message
        assert "push it over" in placed.message and world.held_ref() is None
        assert holds(world, "in", book, layer)
        from worlds.libero.compartment import compartment

        room = compartment(world.geometry, layer, book)
        box = world.geometry.box(book)
        assert room is not None and room.inward == (0.0, 1.0)  # in along +y here
        assert box.size[2] < 0.03  # lying flat
        assert box.centre[1] + box.size[1] / 2 - room.plane > box.size[1] / 2
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_book_with_no_way_in_is_refused_naming_the_figures() -> None:
    """libero_90 task 86 ("place it on the cabinet shelf"): the black book stands 13.5 cm
    in the fingers under the 13.3 cm upper layer; on its side (11 cm) the level hand would
    come down onto the yellow book standing in front of the opening, and lying flat it
    could not be pushed up onto the layer's board. The place is refused before anything
    moves, naming the sizes and what is in the way, and the book stays held."""
    world = libero_world("libero_90", 86, 0)
    book, layer = "black_book_1", "wooden_two_layer_shelf_1_top_region"
    try:
        assert world.execute("pick", {"ref": book}).ok
        placed = world.execute("place", {"ref": book, "target": layer, "relation": "on"})
        assert not placed.ok and "0.133 m gap" in placed.message
        assert "on its side" in placed.message and "yellow_book_1" in placed.message
        assert "lying flat" in placed.message
        assert world.held_ref() == book
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_mug_on_a_plate_makes_no_compartment_of_the_table() -> None:
    """libero_10 task 4, state 1: with the first mug set on its plate, the marked area of
    the table under that plate had something over it and read as a covered compartment, so
    the second mug was picked by its handle, and missed three times. Only a fixture's own
    parts cover its regions; the second mug is picked by its rim and lifted."""
    from worlds.libero.compartment import compartment

    world = libero_world("libero_10", 4, 1)
    first, second = "porcelain_mug_1", "white_yellow_mug_1"
    try:
        assert world.execute("pick", {"ref": first}).ok
        assert world.execute("place", {"ref": first, "target": "plate_1", "relation": "on"}).ok
        geo = world.geometry
        assert all(compartment(geo, r, second) is None for r in geo.catalog.refs("region"))
        assert world.execute("pick", {"ref": second}).ok
        assert world.held_ref() == second
    finally:
        world.disconnect()
