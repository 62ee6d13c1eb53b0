"""Whether the Panda can hold its gripper at a pose at all: inverse kinematics on a scratch
copy of the simulator's state, inside the joints' limits, before anything moves.

LIBERO-PRO libero_goal_task task 7 ("turn off the stove"): the stove's knob stands 31 cm
from the robot's base axis, 3 cm up. Pointing down at it, the elbow (joint 4) folded to its
limit (-3.07 rad) with the fingers still 2 cm short, and the wrist (joint 7, at 2.85 of its
2.90 rad) had no turn left: the fingers slipped off the ridge, dragged the knob the wrong
way (0 to +0.51 rad, towards "on") and, retried, ran the gripper to 2 cm from the base's
keep-out zone, where the guard stopped it. A skill whose grasp the arm cannot reach is now
refused, naming the joint, with nothing moved.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worlds.libero.control import down_matrix, half_turned, lean_matrix

__all__ = [
    "CONTROLLER_TILT_RAD",
    "STRETCHED_M",
    "UNFOLD_Z",
    "arm_meets",
    "clear_posture",
    "down_clear",
    "down_tilt",
    "limit_room",
    "outward_hand",
    "outward_lean",
    "reach_radius",
    "solve",
    "unfold_height",
    "wrist_turn_room",
]

STRETCHED_M = 0.75
"""Further out than this (the gripper's horizontal distance from the base's axis), the
Panda pointing down near the table has its elbow nearly straight."""
UNFOLD_Z = 0.36
"""And is sent this high before it comes back in. LIBERO-PRO libero_10_swap task 8: after
setting the first moka pot on the stove 0.80 m out (elbow at -0.43 rad, its limit -0.07),
every straight move back in at 0.24 m, the height the place retreated to, straightened the
elbow instead (the wrist level with the shoulder, coming in runs along the arm: the
controller's singular direction) and the next pick ran out of steps 5 cm in, three times;
risen to 0.34 m first, the move in bent the elbow to -1.3 rad in 120 steps."""


def unfold_height(ee: tuple[float, float, float], ceiling: float) -> float:
    """The least height a skill starting with the gripper at ``ee`` (base frame) rises to
    before it travels: UNFOLD_Z when it is further out than STRETCHED_M, else none."""
    if math.hypot(ee[0], ee[1]) > STRETCHED_M:
        return min(UNFOLD_Z, ceiling - 0.02)
    return -math.inf


ITERATIONS = 300
DAMPING = 0.05
POSITION_TOLERANCE_M = 0.006
ANGLE_TOLERANCE_RAD = 0.05
LIMIT_MARGIN_RAD = 0.02
"""A solution must keep every joint at least this far inside its limit."""


def _rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The rotation vector (world axes) that turns ``current`` into ``target``."""
    import mujoco

    quat_t, quat_c = np.zeros(4), np.zeros(4)
    mujoco.mju_mat2Quat(quat_t, np.ascontiguousarray(target).reshape(9))
    mujoco.mju_mat2Quat(quat_c, np.ascontiguousarray(current).reshape(9))
    neg, diff, error = np.zeros(4), np.zeros(4), np.zeros(3)
    mujoco.mju_negQuat(neg, quat_c)
    mujoco.mju_mulQuat(diff, quat_t, neg)
    mujoco.mju_quat2Vel(error, diff, 1.0)
    return error


def solve(
    env: Any, poses: list[tuple[np.ndarray, np.ndarray]], seed: Any = None
) -> tuple[list[np.ndarray], str | None]:
    """The arm's joints holding the gripper at each of ``poses`` (world position of the
    grip site, its 3x3 orientation) in turn, each solved from the last (so a wrist turn
    after a grasp counts from the grasp), and None; or, at the first pose it cannot
    reach, why (the joints that would have to pass their limits, the distance left).
    ``env`` is LIBERO's problem env; its state is not touched (a scratch ``MjData``).
    ``seed``: the arm's joints to start from (default: where they are)."""
    import mujoco  # here, not at import: the package's import loads no MuJoCo (its GL backend
    # is fixed when MuJoCo is first imported, and LIBERO sets it before that)

    robot = env.robots[0]
    model = env.sim.model._model
    data = mujoco.MjData(model)
    data.qpos[:] = env.sim.data.qpos
    qpos = np.array(robot._ref_joint_pos_indexes)
    dofs = np.array(robot._ref_joint_vel_indexes)
    if seed is not None:
        data.qpos[qpos] = np.asarray(seed, dtype=float)
    names = [model.joint(int(j)).name for j in robot._ref_joint_indexes]
    ranges = np.array([model.jnt_range[int(j)] for j in robot._ref_joint_indexes], dtype=float)
    low, high = ranges[:, 0] + LIMIT_MARGIN_RAD, ranges[:, 1] - LIMIT_MARGIN_RAD
    site = int(robot.eef_site_id)
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    solutions: list[np.ndarray] = []
    for position, rotation in poses:
        pinned: set[int] = set()
        for _ in range(ITERATIONS):
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            error = np.concatenate(
                [
                    np.asarray(position) - data.site_xpos[site],
                    _rotation_error(np.asarray(rotation), data.site_xmat[site].reshape(3, 3)),
                ]
            )
            if (
                np.linalg.norm(error[:3]) < POSITION_TOLERANCE_M
                and np.linalg.norm(error[3:]) < ANGLE_TOLERANCE_RAD
            ):
                break
            mujoco.mj_jacSite(model, data, jacp, jacr, site)
            jac = np.vstack([jacp[:, dofs], jacr[:, dofs]])
            step = jac.T @ np.linalg.solve(jac @ jac.T + DAMPING**2 * np.eye(6), error)
            q = data.qpos[qpos] + np.clip(step, -0.2, 0.2)
            pinned |= {i for i in range(len(q)) if q[i] <= low[i] or q[i] >= high[i]}
            data.qpos[qpos] = np.clip(q, low, high)
        else:
            off = float(np.linalg.norm(np.asarray(position) - data.site_xpos[site]))
            at = [names[i] for i in sorted(pinned) if data.qpos[qpos][i] <= low[i] + 1e-6]
            at += [names[i] for i in sorted(pinned) if data.qpos[qpos][i] >= high[i] - 1e-6]
            left = f"the gripper still {off * 100:.0f} cm off"
            return solutions, f"{', '.join(at)} at its limit, {left}" if at else left
        solutions.append(np.array(data.qpos[qpos], dtype=float))
    return solutions, None


CONTROLLER_TILT_RAD = math.radians(10)
"""How far the hand may tilt outward and still be where the OSC controller, commanded to
point down, takes it by itself. Pointing straight down (within ANGLE_TOLERANCE_RAD) the
Panda holds the grip site only to 0.80-0.81 m from its base's axis, at the table's height
or 20 cm above it: the arm is stretched, and every centimetre further out tilts the hand
2.5-5 degrees more (:func:`solve` with the hand leaned out). The controller weighs the
orientation against the position and tilts the hand where it must: it set a moka pot down
0.843 m out (LIBERO-PRO libero_10_swap task 8) and picks bowls from above 0.80-0.83 m out
(libero_spatial task 4), points held with at most 10 degrees; the bowl 0.835 m out
(libero_spatial_swap task 6, 15 degrees) closed the fingers on nothing and came in dragged,
and the cans 0.86-0.87 m out (libero_object_temp_x0.5, 20-25 degrees) were missed by 5-10
cm. The measured limits this replaces (0.82 m for a place, 0.83 m before a pick is leaned)
are this tilt's reach at those heights."""
TILT_STEP_RAD = math.radians(5)
"""The tilts tried, in steps of this."""


def outward_lean(point: Any, tilt: float) -> tuple[float, float, float]:
    """The rotation vector (world axes) that tilts a hand pointing down by ``tilt``
    (radians), its end away from the base's axis towards ``point`` (base frame; its axes
    are the world's), about the horizontal square to the way out."""
    out = np.array([float(point[0]), float(point[1])])
    out = out / max(float(np.linalg.norm(out)), 1e-9)
    return (float(out[1] * tilt), float(-out[0] * tilt), 0.0)  # takes -z towards +out


def outward_hand(point: Any, yaw: float, tilt: float) -> np.ndarray:
    """The hand pointing down at ``yaw`` tilted out towards ``point`` by ``tilt``
    (:func:`outward_lean`): where the fingers close across the way out they stay level,
    else the further one is the lower."""
    return lean_matrix(np.array(outward_lean(point, tilt))) @ down_matrix(yaw)


def down_tilt(
    env: Any,
    frame: Any,
    points: list[Any],
    yaw: float,
    most: float = CONTROLLER_TILT_RAD,
    either: bool = True,
) -> tuple[float, float, np.ndarray] | None:
    """(yaw, tilt, joints at the last point): the least outward tilt (a multiple of
    TILT_STEP_RAD up to ``most``) at which the arm holds the hand at each of ``points``
    (base frame) in turn, at ``yaw`` or, when ``either`` (an empty hand: the fingers are
    alike), half turned, the one it holds with less tilt first; None when it holds neither
    within ``most``. 0: it holds them pointing down."""
    steps = round(most / TILT_STEP_RAD)
    for k in range(steps + 1):
        tilt = k * TILT_STEP_RAD
        for turn in (yaw, half_turned(yaw)) if either else (yaw,):
            poses = [(frame.to_world(p), outward_hand(p, turn, tilt)) for p in points]
            joints, why = solve(env, poses)
            if why is None:
                return turn, tilt, joints[-1]
    return None


REACH_TOLERANCE_M = 0.003
"""How finely :func:`reach_radius` finds the edge."""


def reach_radius(
    env: Any, frame: Any, azimuth: float, z: float, yaw: float, tilt: float = CONTROLLER_TILT_RAD
) -> float:
    """How far from the base's axis (horizontally), towards ``azimuth`` (radians from the
    base's x axis) at height ``z`` (base frame), the arm holds the hand at ``yaw`` (this
    turn of the fingers: a place turns what it holds with them) tilted outward by at most
    ``tilt``, i.e. where the controller, commanded to point down there, brings the
    fingers (:data:`CONTROLLER_TILT_RAD`). Found by halving between 0.5 and 1.0 m; the
    wrist's last joint's limits count (its turn is part of the pose)."""

    def holds(r: float) -> bool:
        point = (r * math.cos(azimuth), r * math.sin(azimuth), z)
        poses = [(frame.to_world(point), outward_hand(point, yaw, tilt))]
        return solve(env, poses)[1] is None

    near, far = 0.5, 1.0
    if not holds(near):
        return near
    while far - near > REACH_TOLERANCE_M:
        mid = (near + far) / 2
        near, far = (mid, far) if holds(mid) else (near, mid)
    return near


def limit_room(env: Any, joints: Any) -> np.ndarray:
    """How far (radians) each of the arm's joints is from its nearer limit with the joints
    at ``joints``: of two solutions that both hold a pose, the one with more room is the
    one the controller, which does not follow a solution exactly, is likelier to hold."""
    robot = env.robots[0]
    model = env.sim.model._model
    ranges = np.array([model.jnt_range[int(j)] for j in robot._ref_joint_indexes], dtype=float)
    q = np.asarray(joints, dtype=float)
    return np.minimum(q - ranges[:, 0], ranges[:, 1] - q)


def wrist_turn_room(env: Any, turn: float) -> float:
    """How far (radians) the arm's last joint stays inside its limits if it alone turns the
    hand by ``turn`` about the vertical from where it is now (negative: past a limit). The
    controller turns the wrist by that joint: a pick turning the fingers 2.9 rad from 1.57
    to -1.31 ran joint 7 from 0.91 into its 2.90 stop while the others barely moved, and
    the gripper strayed 6 cm (libero_goal task 4, state 20), though the solution from
    :func:`solve` held the pose with joint 7 at 2.8, the rest of the turn spread over the
    arm."""
    robot = env.robots[0]
    model, data = env.sim.model._model, env.sim.data._data
    joint = int(robot._ref_joint_indexes[-1])
    q = float(data.qpos[int(robot._ref_joint_pos_indexes[-1])])
    axis_z = float(data.xaxis[joint][2])
    after = q + turn * axis_z  # about the vertical: as much as the joint's axis points up
    low, high = (float(v) for v in model.jnt_range[joint])
    return min(after - low, high - after)


def arm_meets(env: Any, joints: Any, ignore: tuple[str, ...] = ()) -> str | None:
    """The name of a body of the scene that the arm's links (from the second on; not the
    hand, which works at what it grasps) would pass into with its joints at ``joints``, or
    None. On a scratch copy of the state, as :func:`solve`: the pose is only looked at.
    A hand facing a cabinet at the table's side, to pull its drawer across the robot's
    front, trails the wrist 20-25 cm behind the fingers, where a wine rack stood
    (libero_90 task 23: ``robot0_link5`` 5 cm into ``wine_rack_1_main``). ``ignore``: bodies
    not counted (what the hand holds: the scratch copy leaves it where it is now)."""
    import mujoco

    robot = env.robots[0]
    model = env.sim.model._model
    data = mujoco.MjData(model)
    data.qpos[:] = env.sim.data.qpos
    data.qpos[np.array(robot._ref_joint_pos_indexes)] = np.asarray(joints, dtype=float)
    mujoco.mj_forward(model, data)
    prefix = str(getattr(robot.robot_model, "naming_prefix", "robot0_"))
    links = {f"{prefix}link{i}" for i in range(2, 8)}
    for contact in data.contact[: data.ncon]:
        if contact.dist >= 0.0:
            continue
        names = [model.body(int(model.geom_bodyid[g])).name for g in (contact.geom1, contact.geom2)]
        for mine, other in (names, names[::-1]):
            if mine in links and not other.startswith((prefix, "gripper", "mount", *ignore)):
                return other
    return None


def down_clear(env: Any, frame: Any, point: Any, yaw: float, rise: float = 0.15) -> bool:
    """Whether the arm can come down pointing down to ``point`` (base frame) from ``rise``
    above it, at ``yaw`` or half turned (the hand is the same), with its links clear of the
    scene (:func:`arm_meets`); True too when it can hold neither (not this check's to
    refuse: the skill runs as it would have).

    libero_90's kitchen (tasks 29-31): the white cabinet's top drawer stands open 15 cm
    towards the robot's right, its front 9 cm beside the black bowl's rim grasp facing the
    robot; coming down there, the forearm (``robot0_link5``) met the drawer 4 cm above the
    grasp, three times."""
    from worlds.libero.control import down_matrix

    x, y, z = (float(v) for v in point)
    reachable = False
    for turn in (yaw, half_turned(yaw)):
        poses = [(frame.to_world(p), down_matrix(turn)) for p in ((x, y, z + rise), (x, y, z))]
        joints, why = solve(env, poses)
        if why is not None:
            continue
        reachable = True
        if all(arm_meets(env, q) is None for q in joints):
            return True
    return not reachable


SEED_TURNS = (
    (0, -0.35, 0.4),
    (0, 0.35, -0.4),
    (0, -0.7, 0.8),
    (0, 0.7, -0.8),
    (4, -0.8, 0.0),
    (4, 0.8, 0.0),
)
"""Where the search for another posture starts, as (joint index, turn, turn of joint 3)
from the arm's joints now: the shoulder (joint 1) turned either way with the upper arm
(joint 3) turned back against it, which swings the elbow and the forearm's knuckle to one
side of the hand; or the forearm (joint 5) turned."""


def clear_posture(
    env: Any, frame: Any, point: Any, yaw: float, rise: float = 0.15
) -> tuple[float, tuple[float, ...]] | None:
    """(yaw, joints at ``point``) of a posture in which the arm comes down pointing down to
    ``point`` (base frame) from ``rise`` above it with its links clear of the scene
    (:func:`arm_meets`), at ``yaw`` or half turned; solved from the arm's joints now, else
    from the turned joints of :data:`SEED_TURNS`; None when none is. A plan run with these
    joints as its ``posture`` comes down in it (the controller's null space leans towards
    them).

    libero_90's kitchen (tasks 29 and 31): the white cabinet's top drawer stands open 8 cm
    beside the black bowl. Pointing down at any side of its rim, in the posture the arm
    takes from its joints now, the forearm's lower knuckle (``robot0_link5``, which reaches
    8 cm to each side of the wrist across the arm's plane) met the drawer's front 20 cm up,
    and no drag inside the bowl was clear either; with the shoulder turned 0.7 rad towards
    the robot's right and the upper arm turned back, the knuckle stands clear and the rim
    grasp facing the robot holds."""
    from worlds.libero.control import down_matrix

    robot = env.robots[0]
    now = np.array(env.sim.data.qpos[np.array(robot._ref_joint_pos_indexes)], dtype=float)
    seeds = [now]
    for joint, turn, back in SEED_TURNS:
        seed = now.copy()
        seed[joint] += turn
        seed[2] += back
        seeds.append(seed)
    x, y, z = (float(v) for v in point)
    for seed in seeds:
        for hand in (yaw, half_turned(yaw)):
            poses = [(frame.to_world(p), down_matrix(hand)) for p in ((x, y, z + rise), (x, y, z))]
            joints, why = solve(env, poses, seed)
            if why is None and all(arm_meets(env, q) is None for q in joints):
                return hand, tuple(float(v) for v in joints[-1])
    return None
