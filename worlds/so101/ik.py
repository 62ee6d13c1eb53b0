"""Inverse kinematics of the SO-101 with ``mink``, honest about five joints.

The arm has five joints before its jaw: the pan turns the arm's vertical plane, the lift,
elbow and wrist flex place and pitch the wrist inside that plane, and the wrist roll turns
the jaw about its own axis. So the fingers can point anywhere *in the arm's plane*
(straight down included, with any jaw angle about the vertical), but never across it: a
grasp whose approach leaves that plane, or a pose beyond what the lift, elbow and wrist
reach with the pitch asked, has no solution. :meth:`ArmIK.solve` runs ``mink``'s
differential IK (a QP over the joint velocities with the model's joint limits) to
convergence and reports the residual position and orientation error; callers refuse a
target whose residual exceeds :data:`POSITION_TOLERANCE_M` or
:data:`ANGLE_TOLERANCE_RAD` and say by how much, instead of moving to the nearest pose
and missing.

The model is the published one (:mod:`worlds.so101.model`, the arm alone: no free
bodies), so the joints IK returns are the simulator's and the envelope's.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from worlds.so101.model import ARM_JOINTS, EE_SITE, compile_scene

__all__ = [
    "ANGLE_TOLERANCE_RAD",
    "POSITION_TOLERANCE_M",
    "ArmIK",
    "IKResult",
    "horizontal",
    "top_down",
]

POSITION_TOLERANCE_M = 0.004
ANGLE_TOLERANCE_RAD = math.radians(4.0)
_DT = 0.05
_ITERATIONS = 300
_REMEMBERED = 4096
"""Solves an :class:`ArmIK` keeps (each a few hundred bytes)."""


@dataclass(frozen=True)
class IKResult:
    """The joints IK reached and how far the site stayed from the target."""

    joints: tuple[float, ...]
    position_error_m: float
    angle_error_rad: float
    at_limit: tuple[str, ...]
    """Arm joints that ended within 0.02 rad of a limit (what stopped a failed solve)."""

    @property
    def ok(self) -> bool:
        return (
            self.position_error_m <= POSITION_TOLERANCE_M
            and self.angle_error_rad <= ANGLE_TOLERANCE_RAD
        )

    def shortfall(self) -> str:
        """The residual in words (for a refusal)."""
        limits = f"; {', '.join(self.at_limit)} at its limit" if self.at_limit else ""
        return (
            f"the closest pose the arm reaches is {self.position_error_m * 1000:.0f} mm off "
            f"and turned {math.degrees(self.angle_error_rad):.0f} deg away{limits}"
        )


def top_down(yaw: float) -> np.ndarray:
    """A site rotation with the fingers (the site's x axis) pointing straight down and the
    jaw closing along ``yaw`` (the site's z axis, horizontal)."""
    x = np.array([0.0, 0.0, -1.0])
    z = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    return np.stack([x, np.cross(z, x), z], axis=1)


def horizontal(heading: float) -> np.ndarray:
    """Fingers level, pointing along ``heading``; the jaw closes vertically."""
    x = np.array([math.cos(heading), math.sin(heading), 0.0])
    z = np.array([0.0, 0.0, 1.0])
    return np.stack([x, np.cross(z, x), z], axis=1)


class ArmIK:
    """IK and FK of the published arm (thread-safe: one solve at a time).

    A solve is a function of its four arguments alone (it starts from ``start`` with the
    model's other joints at zero, and neither ``mink`` nor the QP solver keeps anything
    from one solve to the next), so the last :data:`_REMEMBERED` answers are kept and the
    same question is answered without solving again: the envelope's check plans a motion
    (``describe_motion``) and ``execute`` plans it again from the same joints, and a
    solve that does not converge costs 300 QP iterations.
    """

    def __init__(self) -> None:
        import mink
        import mujoco
        import qpsolvers

        self._mj, self._mink, self._qp = mujoco, mink, qpsolvers
        self.model = compile_scene((), camera_size=(64, 64))
        self.data = mujoco.MjData(self.model)
        self._lock = threading.Lock()
        self._arm_q = [int(self.model.joint(n).qposadr[0]) for n in ARM_JOINTS]
        self._arm_v = [int(self.model.joint(n).dofadr[0]) for n in ARM_JOINTS]
        self._frozen = [v for v in range(self.model.nv) if v not in self._arm_v]
        self._gripper_q = int(self.model.joint("gripper").qposadr[0])
        self._pads = [int(self.model.geom(n).id) for n in ("fixed_jaw_pad", "moving_jaw_pad")]
        self._ranges = [tuple(self.model.jnt_range[self.model.joint(n).id]) for n in ARM_JOINTS]
        self._config = mink.Configuration(self.model)
        self._limits = [mink.ConfigurationLimit(self.model)]
        self._solved: OrderedDict[tuple[object, ...], IKResult] = OrderedDict()

    def fk(self, joints: Sequence[float], site: str = EE_SITE) -> tuple[np.ndarray, np.ndarray]:
        """(position, rotation matrix) of ``site`` for the arm's joints."""
        with self._lock:
            self.data.qpos[:] = 0.0
            self.data.qpos[self._arm_q] = np.asarray(joints, dtype=float)
            self._mj.mj_kinematics(self.model, self.data)
            sid = self.model.site(site).id
            return self.data.site_xpos[sid].copy(), self.data.site_xmat[sid].reshape(3, 3).copy()

    def lowest_jaw_z(self, joints: Sequence[float], gripper: float) -> float:
        """The lowest point of the two fingertip pads (world z: their boxes' lowest corners)
        with the arm at ``joints`` and the jaw at ``gripper``."""
        with self._lock:
            self.data.qpos[:] = 0.0
            self.data.qpos[self._arm_q] = np.asarray(joints, dtype=float)
            self.data.qpos[self._gripper_q] = gripper
            self._mj.mj_kinematics(self.model, self.data)
            low = math.inf
            for geom in self._pads:
                centre = self.data.geom_xpos[geom]
                rotation = self.data.geom_xmat[geom].reshape(3, 3)
                half = self.model.geom_size[geom]
                # the lowest corner of the box: each axis's half-extent along -z
                reach = float(np.abs(rotation[2, :]) @ half)
                low = min(low, float(centre[2]) - reach)
            return low

    def solve(
        self,
        site: str,
        position: Sequence[float],
        rotation: np.ndarray | None,
        start: Sequence[float],
    ) -> IKResult:
        """Joints that put ``site`` at ``position`` with ``rotation`` (None: position only),
        starting from ``start`` (the solution closest to it is found)."""
        target = np.asarray(position, dtype=float)
        initial = np.asarray(start, dtype=float)
        turn = None if rotation is None else np.asarray(rotation)
        key = (
            site,
            target.shape,
            target.tobytes(),
            initial.shape,
            initial.tobytes(),
            None if turn is None else (turn.dtype.str, turn.shape, turn.tobytes()),
        )
        with self._lock:
            known = self._solved.get(key)
            if known is not None:
                self._solved.move_to_end(key)
                return known
            result = self._solve(site, target, rotation, initial)
            self._solved[key] = result
            if len(self._solved) > _REMEMBERED:
                self._solved.popitem(last=False)
            return result

    def _solve(
        self, site: str, position: np.ndarray, rotation: np.ndarray | None, start: np.ndarray
    ) -> IKResult:
        mink = self._mink
        q = np.zeros(self.model.nq)
        q[self._arm_q] = start
        self._config.update(q)
        task = mink.FrameTask(
            site,
            "site",
            position_cost=1.0,
            orientation_cost=0.5 if rotation is not None else 0.0,
        )
        target_rotation = rotation if rotation is not None else np.eye(3)
        task.set_target(
            mink.SE3.from_rotation_and_translation(mink.SO3.from_matrix(target_rotation), position)
        )
        posture = mink.PostureTask(self.model, cost=1e-3)
        posture.set_target(q)
        error = np.zeros(6)
        tasks = [task, posture]
        for _ in range(_ITERATIONS):
            # mink.solve_ik's QP and solver, without the joint-limit scan it starts each
            # iteration with (it only logs, at debug level, a start outside a limit): a
            # sixth of an iteration's cost, and a failed solve runs 300 of them
            problem = mink.build_ik(self._config, tasks, _DT, 1e-3, self._limits)
            solution = self._qp.solve_problem(problem, solver="daqp")
            if not solution.found:
                raise mink.NoSolutionFound("daqp")
            velocity = solution.x / _DT
            velocity[self._frozen] = 0.0
            self._config.integrate_inplace(velocity, _DT)
            error = task.compute_error(self._config)
            if np.linalg.norm(error[:3]) < 2e-4 and (
                rotation is None or np.linalg.norm(error[3:]) < 2e-3
            ):
                break
        joints = tuple(float(v) for v in self._config.q[self._arm_q])
        at_limit = tuple(
            name
            for name, value, (low, high) in zip(ARM_JOINTS, joints, self._ranges, strict=True)
            if value - low < 0.02 or high - value < 0.02
        )
        return IKResult(
            joints=joints,
            position_error_m=float(np.linalg.norm(error[:3])),
            angle_error_rad=float(np.linalg.norm(error[3:])) if rotation is not None else 0.0,
            at_limit=at_limit,
        )
