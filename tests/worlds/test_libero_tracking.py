"""A LIBERO move that cannot follow its line is stopped (no MuJoCo: a fake controller).

Found by the physics-step audit in LIBERO-PRO's swapped scenes: an orientation the arm
could not reach pulled the gripper 0.3 m off the described line and out of the workspace.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from worlds.libero.control import TRACK_LIMIT_M, Arm, Frame, OffPath


class DriftingEnv:
    """The shape of LIBERO's env the Arm reads: the gripper follows 1/2.5 of each commanded
    step, plus ``drift`` metres per step that the controller adds on its own."""

    def __init__(self, start: tuple[float, float, float], drift: tuple[float, float, float]):
        self.site = np.array([list(start)], dtype=float)
        self.drift = np.asarray(drift, dtype=float)
        robot = SimpleNamespace(eef_site_id=0)
        data = SimpleNamespace(site_xpos=self.site, site_xmat=np.array([np.eye(3).ravel()]))
        self.env = SimpleNamespace(robots=[robot], sim=SimpleNamespace(data=data))
        self.trace: list[np.ndarray] = []

    def step(self, action: Any) -> None:
        self.site[0] += np.asarray(action[:3]) * 0.05 / 2.5 + self.drift
        self.trace.append(self.site[0].copy())


def arm(env: DriftingEnv) -> Arm:
    a = Arm(env, Frame((0.0, 0.0, 0.0)), threading.Event())
    a.orientation = np.eye(3)  # already turned: only the position matters here
    return a


def test_a_move_that_strays_from_its_line_stops_within_the_limit() -> None:
    env = DriftingEnv((0.4, 0.0, 0.26), drift=(0.008, 0.0, 0.0))  # pulled sideways
    with pytest.raises(OffPath) as stopped:
        arm(env).move((0.4, 0.0, 0.10), speed=0.1)
    start, goal = np.array([0.4, 0.0, 0.26]), np.array([0.4, 0.0, 0.10])
    for point in env.trace:  # never further off the line than the limit and one step
        along = min(1.0, max(0.0, float(np.dot(point - start, goal - start)) / 0.16**2))
        off = float(np.linalg.norm(point - (start + (goal - start) * along)))
        assert off <= TRACK_LIMIT_M + 0.01
    assert stopped.value.off_m > TRACK_LIMIT_M and "strayed" in str(stopped.value)


def test_a_move_that_follows_its_line_reaches_the_target() -> None:
    env = DriftingEnv((0.4, 0.0, 0.26), drift=(0.0, 0.0, 0.0))
    assert arm(env).move((0.4, 0.1, 0.10), speed=0.1) is True
    assert np.linalg.norm(env.site[0] - np.array([0.4, 0.1, 0.10])) <= 0.005


def test_a_move_drifting_towards_a_keep_out_zone_stops_outside_it() -> None:
    from worlds.libero.control import ZONE_GUARD_M, NearKeepOut

    env = DriftingEnv((0.21, -0.10, 0.10), drift=(-0.004, 0.0, 0.0))  # towards the base
    a = arm(env)
    a.keep_out = [("robot_base", (-0.30, -0.16, -0.05), (0.16, 0.16, 0.15))]
    with pytest.raises(NearKeepOut) as stopped:
        a.move((0.21, 0.10, 0.10), speed=0.02)  # a line 0.05 m from the zone
    assert "robot_base" in str(stopped.value)
    low, high = np.array([-0.30, -0.16, -0.05]), np.array([0.16, 0.16, 0.15])
    for point in env.trace:
        gap = np.linalg.norm(np.maximum(low - point, 0) + np.maximum(point - high, 0))
        assert gap >= ZONE_GUARD_M - 0.006  # at most one step closer than the guard


def test_a_move_that_starts_near_a_zone_may_still_leave_it() -> None:
    env = DriftingEnv((0.17, 0.0, 0.20), drift=(0.0, 0.0, 0.0))  # 1 cm from the zone
    a = arm(env)
    a.keep_out = [("robot_base", (-0.30, -0.16, -0.05), (0.16, 0.16, 0.15))]
    assert a.move((0.40, 0.0, 0.20), speed=0.1) is True


def test_a_wrist_turning_in_place_keeps_the_gripper_where_it_was() -> None:
    """Arm.turn (a twist segment: the wrist turning to face a cabinet, or back) pulls the
    gripper back to where the turn started while the controller drifts it: without that the
    drift over 25 steps (5 cm here) moved the fingers off the path the envelope checked."""
    env = DriftingEnv((0.5, 0.0, 0.3), drift=(0.002, 0.0, 0.0))
    a = arm(env)
    a.orientation = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # never reached
    a.turn(25)
    assert len(env.trace) == 25
    worst = max(float(np.linalg.norm(p - np.array([0.5, 0.0, 0.3]))) for p in env.trace)
    assert worst < 0.01, worst


def test_a_wrist_turn_drifting_towards_a_keep_out_zone_stops_outside_it() -> None:
    """A knob turned next to the robot base (libero_goal_task 7, LIBERO-PRO's 'turn off the
    stove') drifted the gripper into the base's zone during the turn: 18 physics steps
    outside the profile. A turn now stops like a move does."""
    from worlds.libero.control import ZONE_GUARD_M, NearKeepOut

    env = DriftingEnv((0.20, 0.0, 0.10), drift=(-0.01, 0.0, 0.0))
    a = arm(env)
    a.keep_out = [("robot_base", (-0.3, -0.16, -0.05), (0.16, 0.16, 0.15))]
    a.orientation = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    with pytest.raises(NearKeepOut):
        a.turn(25)
    assert min(p[0] for p in env.trace) > 0.16 + ZONE_GUARD_M - 0.011
