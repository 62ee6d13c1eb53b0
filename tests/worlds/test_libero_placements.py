"""Where LIBERO's joint-less fixtures stand is a function of the initial state, not of the
episodes run before it (the ``libero`` extra).

A published initial state holds joint positions only; every reset samples the fixtures'
places again from numpy's global generator. libero_10 task 5 at state 1 failed after state
0 in the same eval worker and passed on its own. The oracle here is MuJoCo's own model:
the caddy's body pose read straight from ``model.body_pos``/``body_quat``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from worlds.libero import libero_available

pytestmark = [
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]

CADDY = "desk_caddy_1"


@pytest.fixture(scope="module")
def sim() -> Any:
    from worlds.libero.driver import LiberoSim

    world = LiberoSim(suite="libero_10", task=5)
    world.connect()
    yield world
    world.disconnect()


def caddy_pose(sim: Any) -> np.ndarray:
    inner = sim.env.env
    body = inner.sim.model.body_name2id(inner.fixtures_dict[CADDY].root_body)
    model = inner.sim.model
    return np.concatenate([model.body_pos[body], model.body_quat[body]]).copy()


def test_an_initial_state_places_the_fixtures_alike_whatever_ran_before(sim: Any) -> None:
    sim.reset(init_state=1)
    first = caddy_pose(sim)
    for state in (0, 2, 0):
        sim.reset(init_state=state)
    sim.reset(init_state=1)
    assert np.array_equal(caddy_pose(sim), first)


def test_each_initial_state_has_its_own_fixture_offsets(sim: Any) -> None:
    poses = []
    for state in (0, 1, 2):
        sim.reset(init_state=state)
        poses.append(caddy_pose(sim))
    assert not np.array_equal(poses[0], poses[1])
    assert not np.array_equal(poses[1], poses[2])


def test_a_reset_leaves_the_callers_global_generator_alone(sim: Any) -> None:
    np.random.seed(7)
    expected = np.random.random(3)
    np.random.seed(7)
    sim.reset(init_state=2)
    assert np.array_equal(np.random.random(3), expected)
