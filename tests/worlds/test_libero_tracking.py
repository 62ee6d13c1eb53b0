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
        robot = SimpleNamespace(eef_site_id=0, _ref_gripper_joint_pos_indexes=[0, 1])
        data = SimpleNamespace(
            site_xpos=self.site, site_xmat=np.array([np.eye(3).ravel()]), qpos=np.zeros(2)
        )
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


BASE = ("robot_base", (-0.30, -0.16, -0.05), (0.16, 0.16, 0.15))


def _gap(point: np.ndarray) -> float:
    """Distance from the base's zone (written here, not taken from the Arm)."""
    low, high = np.array(BASE[1]), np.array(BASE[2])
    return float(np.linalg.norm(np.maximum(low - point, 0) + np.maximum(point - high, 0)))


def test_the_guard_looks_ahead_by_the_approach_and_backs_the_arm_off() -> None:
    """LIBERO-PRO libero_goal_task 7, state 0: the guard tripped only once the gripper was
    within ZONE_GUARD_M (checked every controller step, up to 1.5 cm apart) and the held arm
    coasted on into the base (18 physics steps inside). The guard now trips while the next
    step and the drift still fit outside ZONE_GUARD_M, and sends the arm away until clear."""
    from worlds.libero.control import ZONE_CLEAR_M, ZONE_GUARD_M, NearKeepOut

    for speed_towards in (0.002, 0.004, 0.008, 0.012):
        env = DriftingEnv((0.21, -0.10, 0.10), drift=(-speed_towards, 0.0, 0.0))
        a = arm(env)
        a.keep_out = [BASE]
        with pytest.raises(NearKeepOut) as stopped:
            a.move((0.21, 0.10, 0.10), speed=0.02)  # a line 0.05 m from the zone
        assert "backed straight away" in str(stopped.value)
        gaps = [_gap(p) for p in env.trace]
        # never nearer than the guard less one step's approach, and it ends clear
        assert min(gaps) >= ZONE_GUARD_M - 1e-9, (speed_towards, min(gaps))
        assert gaps[-1] >= ZONE_CLEAR_M - 1e-9, (speed_towards, gaps[-1])


def test_a_move_that_starts_in_the_band_stops_when_it_comes_closer() -> None:
    """A later attempt started 0.013 m from the zone, where the old guard only tripped once
    the gripper got closer than where it started (it did, by 8 mm in one step, then drifted
    in)."""
    from worlds.libero.control import ZONE_CLEAR_M, NearKeepOut

    env = DriftingEnv((0.173, 0.0, 0.20), drift=(-0.002, 0.0, 0.0))  # 0.013 m from the zone
    a = arm(env)
    a.keep_out = [BASE]
    with pytest.raises(NearKeepOut):
        a.move((0.173, 0.0, 0.10), speed=0.05)
    gaps = [_gap(p) for p in env.trace]
    assert min(gaps) >= 0.013 - 0.0021 and gaps[-1] >= ZONE_CLEAR_M - 1e-9, gaps


def test_backing_off_goes_straight_away_from_the_zone() -> None:
    """The envelope allows only a motion straight away from a zone that close: from beside a
    face along the face's normal, from inside towards the nearest face."""
    from worlds.libero.control import ZONE_CLEAR_M

    for start, axis in (((0.17, 0.0, 0.10), 0), ((0.0, 0.0, 0.16), 2), ((0.15, 0.0, 0.0), 0)):
        env = DriftingEnv(start, drift=(0.0, 0.0, 0.0))
        a = arm(env)
        a.keep_out = [BASE]
        assert a.back_off() > 0
        moved = env.site[0] - np.array(start)
        others = [i for i in range(3) if i != axis]
        assert moved[axis] > 0 and np.allclose(moved[others], 0.0), (start, moved)
        assert _gap(env.site[0]) >= ZONE_CLEAR_M - 1e-9
    env = DriftingEnv((0.4, 0.0, 0.2), drift=(0.0, 0.0, 0.0))  # clear already: no motion
    a = arm(env)
    a.keep_out = [BASE]
    assert a.back_off() == 0 and not env.trace


def test_a_grip_whose_wrist_turn_carries_the_gripper_towards_a_zone_stops() -> None:
    """The wrist turning to a grip's orientation near the base carried the gripper 1 cm
    towards it with no guard watching (grips and holds were unguarded)."""
    from worlds.libero.control import ZONE_GUARD_M, NearKeepOut

    env = DriftingEnv((0.19, 0.0, 0.10), drift=(-0.004, 0.0, 0.0))
    a = arm(env)
    a.keep_out = [BASE]
    with pytest.raises(NearKeepOut):
        a.grip(True)
    assert min(_gap(p) for p in env.trace) >= ZONE_GUARD_M - 1e-9
