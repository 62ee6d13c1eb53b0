"""Helpers of the LIBERO skill tests (``tests/worlds/test_libero_skills_*.py``).

Those tests are split into files by the environments they build, so that ``--dist
loadfile`` spreads them over the workers: one file of them took about half of the whole
suite's CPU, on one worker, and bounded the suite's wall time however many workers ran it.
Each test reproduces a skill that failed on a published initial state and judges it by
LIBERO's own predicates, read here from the env, not through the post-conditions under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from worlds.libero import libero_available

__all__ = ["SKILL_MARKS", "holds", "libero_world", "put_fixture"]

SKILL_MARKS = [
    pytest.mark.long,
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]
"""Every skill test file's ``pytestmark``: a long simulator test, in the slow tier, skipped
without the [libero] extra."""


def libero_world(suite: str, task: int, state: int) -> Any:
    """A connected ``LiberoSim`` on ``task`` of ``suite`` at published initial ``state``
    (the caller disconnects it: building a LIBERO env takes 5-15 s)."""
    from worlds.libero.driver import LiberoSim

    world = LiberoSim(suite=suite, task=task, init_state=state)
    world.connect()
    return world


def holds(world: Any, predicate: str, *refs: str) -> bool:
    """Whether LIBERO's own ``predicate`` holds of the object states ``refs`` (the env's
    check, independent of the skills' post-conditions)."""
    from libero.libero.envs.predicates import eval_predicate_fn

    states = world.env.env.object_states_dict
    return bool(eval_predicate_fn(predicate, *(states[r] for r in refs)))


def put_fixture(world: Any, body: str, xy: tuple[float, float]) -> None:
    """Stand a fixture without a joint (``body``: its main body, ``wooden_cabinet_1_main``)
    at ``xy`` (LIBERO's world frame): LIBERO re-places such fixtures at random within their
    BDDL region on every reset, and the published initial state does not fix them, so a test
    of a placement an eval met puts it there itself."""
    env = world.env.env
    model = env.sim.model
    model.body_pos[model.body_name2id(body)][:2] = xy
    env.sim.forward()
