"""Issue 40: two moka pots set down side by side on the stove (libero_10 task 8), judged
by LIBERO's own predicates (helpers: ``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

import pytest

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world

pytestmark = SKILL_MARKS


@pytest.mark.parametrize("state", [0])
def test_both_moka_pots_stand_on_the_stove_side_by_side(state: int) -> None:
    """libero_10 task 8 failed 10/10 on main: both pots were set down in the middle of the
    stove's cook region (15 cm across; a pot is 8.1 cm), so the second landed on the first
    and pushed it off. The first now leaves room for the second beside it."""
    world = libero_world("libero_10", 8, state)
    try:
        region = "flat_stove_1_cook_region"
        for ref in ("moka_pot_1", "moka_pot_2"):
            assert world.execute("pick", {"ref": ref}).ok
            assert world.execute("place", {"ref": ref, "target": region, "relation": "on"}).ok
        assert holds(world, "on", "moka_pot_1", region)
        assert holds(world, "on", "moka_pot_2", region)
        assert world.env.env._check_success()  # the stove is on from the start
    finally:
        world.disconnect()
