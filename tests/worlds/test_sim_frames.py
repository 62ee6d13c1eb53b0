"""The tabletop hands out a kept frame only while nothing it shows has changed.

The oracle is a frame drawn afresh by PyBullet at the same moment (the cache bypassed):
after every step of a seeded random walk of motions, grasps, resets and colour changes,
the frame :meth:`render` returns must be byte-identical to it. A second count checks the
cache does its job: turns that move nothing draw nothing.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pybullet", reason="the simulator needs the [sim] extra")
pytestmark = pytest.mark.sim


class CountingPyBullet:
    """PyBullet as the simulator calls it, counting the frames it draws."""

    def __init__(self, pb: Any) -> None:
        self._pb = pb
        self.drawn = 0

    def getCameraImage(self, *args: Any, **kwargs: Any) -> Any:
        self.drawn += 1
        return self._pb.getCameraImage(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pb, name)


@pytest.fixture
def counted(sim: Any, monkeypatch: pytest.MonkeyPatch) -> CountingPyBullet:
    counting = CountingPyBullet(sim.state.pb)
    monkeypatch.setattr(sim.state, "pb", counting)
    sim.cameras.frame_cache.clear()
    return counting


def fresh(sim: Any, camera: str) -> np.ndarray:
    return sim.cameras.draw(camera)[0]


def test_a_turn_that_moves_nothing_draws_nothing(sim: Any, counted: CountingPyBullet) -> None:
    first = sim.observe().images["front"]
    drawn = counted.drawn
    again = sim.observe().images["front"]
    assert counted.drawn == drawn  # the kept frame
    assert np.array_equal(first, again)
    again[:] = 0  # a caller writing into its frame does not change what is kept
    assert np.array_equal(sim.observe().images["front"], first)


def test_every_frame_handed_out_is_the_one_drawn_afresh(
    sim: Any, counted: CountingPyBullet
) -> None:
    rng = random.Random(11)
    ws = sim.profile.workspace
    cameras = [c.name for c in sim.profile.cameras]
    refs = [d.ref for d in sim.detections() if d.ref.endswith("cube_1")]
    changed = hits = 0
    for step in range(14):
        kind = rng.choice(["move", "move", "grip", "colour", "nothing", "reset"])
        if kind == "move":
            point = [rng.uniform(lo, hi) for lo, hi in zip(ws.min, ws.max, strict=True)]
            sim.execute("move_to", {"x": point[0], "y": point[1], "z": max(point[2], 0.70)})
        elif kind == "grip":
            sim.execute("open_gripper" if step % 2 else "close_gripper", {})
        elif kind == "colour":  # no pose changes, only how a cube looks
            body = sim.state.bodies[rng.choice(refs)].body
            colour = (rng.random(), rng.random(), rng.random(), 1.0)
            sim.state.pb.changeVisualShape(
                body, -1, rgbaColor=colour, physicsClientId=sim.state.cid
            )
        elif kind == "reset":
            sim.reset()
        for camera in cameras:
            before = sim.cameras.frame_cache.get(camera)
            handed = sim.render(camera)
            if sim.cameras.frame_cache[camera] is before:  # handed out again: is it still right?
                hits += 1
                assert np.array_equal(handed, fresh(sim, camera)), (step, kind, camera)
            elif before is not None and not np.array_equal(before.frame, handed):
                changed += 1
    assert changed >= 4 and hits >= 4  # the walk changed what the cameras see, and did not


def test_a_kept_frame_still_shows_perception_what_it_shows() -> None:
    """With ``perception: seen`` a frame is also what perception has been shown. ``reset``
    and ``restore`` forget what was seen and may leave the scene looking as it did (same
    ids, poses and looks): the kept frame handed out then must show its objects to
    perception again, as a frame drawn afresh would."""
    from worlds.tabletop.simulator import TabletopSim

    sim = TabletopSim(seed=0, perception="seen")
    sim.connect()
    try:
        assert not sim.state.seen
        sim.render("front")
        seen = set(sim.state.seen)
        assert seen  # the front camera shows the cubes
        shown = sim.cameras.world_appearance()
        sim.state.seen.clear()  # what reset() and restore() do to it
        assert sim.cameras.world_appearance() == shown  # so the kept frame is handed out
        sim.render("front")
        assert sim.state.seen == seen
    finally:
        sim.disconnect()
