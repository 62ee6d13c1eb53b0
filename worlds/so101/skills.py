"""The SO-101's skills planned before anything moves: joint paths, and the refusals.

A skill is planned from the simulator's state into a :class:`Plan`: segments of arm
configurations to pass through (Cartesian lines are sampled every :data:`LINE_STEP_M`
and solved by IK, warm-started from the previous sample, so the gripper really goes
straight; joint-space moves are straight lines in joint space) and jaw moves between
them. ``Plan.waypoints`` is the end-effector point (``gripperframe``) of every sampled
configuration, by forward kinematics of the same model: what ``describe_motion`` hands
the safety envelope, so it checks the path the arm will take.

What five joints cannot do is a :class:`Refusal` naming why: a grasp whose orientation
leaves the arm's vertical plane ('side'), a top-down grasp beyond the wrist's travel, a
level grasp that would put the lower jaw into the table. Nothing is approximated into a
near miss.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from worlds.so101.ik import ArmIK, IKResult, horizontal, top_down
from worlds.so101.model import CUBE_HALF, EE_SITE, GRASP_SITE
from worlds.so101.physics import GRIPPER_CLOSED, GRIPPER_OPEN

__all__ = [
    "HOME",
    "LINE_STEP_M",
    "JawMove",
    "ObjectState",
    "Plan",
    "Refusal",
    "Segment",
    "SkillPlanner",
]

HOME = (0.09, -0.36, 0.415, 1.52, 1.71)
"""The home pose: the grasp point 7.5 cm above the table, 19 cm ahead, fingers down (the
profile's ``kinematics.home``)."""
LINE_STEP_M = 0.01
APPROACH_M = 0.05
"""Pre-grasp distance from the object, along the approach."""
CARRY_Z = 0.075
"""Grasp-point height a held cube is lifted to and carried at: its bottom clears the box's
walls by 2.6 cm, and the wrist can still point the fingers down there (with the fingers
down the published model reaches no higher than about 9 cm above the table)."""
GRASP_ABOVE_CENTRE_M = 0.006
"""The grasp point sits this far above a cube's centre: the moving jaw swings down as it
closes, and lower it would strike the table and shove the arm aside."""
JAW_ARC = (GRIPPER_OPEN, 0.9, 0.6, 0.4)
"""Jaw openings (rad) at which a grasp is checked for collisions, open to near a cube."""
TABLE_TOLERANCE_M = 0.002
"""How far a jaw pad may press into the table at a grasp (contact, not collision)."""
JOINT_SAMPLE_RAD = 0.04
"""Joint-space moves are sampled at most this far apart in every joint."""

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class ObjectState:
    position: Vec3
    yaw: float
    kind: str


@dataclass(frozen=True)
class Segment:
    """Pass through ``configs`` (arm joints) in order with the jaw target ``gripper``;
    ``speed`` is the gripper's speed (m/s) along the way."""

    configs: tuple[tuple[float, ...], ...]
    gripper: float
    speed: float
    label: str


@dataclass(frozen=True)
class JawMove:
    gripper: float
    seconds: float
    label: str


@dataclass
class Plan:
    steps: list[Segment | JawMove] = field(default_factory=list)
    waypoints: list[Vec3] = field(default_factory=list)
    description: str = ""


@dataclass(frozen=True)
class Refusal:
    message: str


class SkillPlanner:
    """Plans skills on the published model's kinematics (see the module docstring)."""

    def __init__(
        self,
        ik: ArmIK,
        *,
        speed: float,
        jaw_contacts: Callable[[Sequence[float], float, set[str]], list[str]] | None = None,
    ) -> None:
        self.ik = ik
        self.speed = speed
        self.jaw_contacts = jaw_contacts
        """What the open jaw would strike at a grasp (the scene's collision check)."""

    # ------------------------------------------------------------------ skills

    def pick(
        self, ref: str, grasp: str, obj: ObjectState, joints: Sequence[float]
    ) -> Plan | Refusal:
        centre = np.asarray(obj.position) + np.array([0.0, 0.0, GRASP_ABOVE_CENTRE_M])
        bearing = math.atan2(centre[1], centre[0])
        if grasp == "top":
            options = [top_down(obj.yaw + k * math.pi / 2) for k in range(4)]
            approach = np.array([0.0, 0.0, 1.0])
        else:
            heading = bearing if grasp == "front" else bearing + math.pi / 2
            options = [horizontal(heading)]
            approach = -np.array([math.cos(heading), math.sin(heading), 0.0])
        blocked: list[str] = []
        chosen = self._best(centre, options, joints, clear=self._jaw_clear(ref, blocked))
        if chosen is None and blocked:
            return Refusal(
                f"pick {ref} refused: at every grasp angle the arm can reach, the open jaw "
                f"would strike {', '.join(dict.fromkeys(blocked))}; move that out of the way"
            )
        if isinstance(chosen, IKResult) or chosen is None:
            what = {
                "top": "with the fingers pointing down",
                "front": "with the fingers level, pointing away from the base",
                "side": "with the fingers level, pointing across the arm (out of its "
                "vertical plane, which a five-joint arm cannot turn its fingers out of)",
            }[grasp]
            detail = chosen.shortfall() if isinstance(chosen, IKResult) else "no solution"
            return Refusal(
                f"pick {ref} refused: the arm cannot grasp it at "
                f"({centre[0]:.3f}, {centre[1]:.3f}, {centre[2]:.3f}) {what}: {detail}"
            )
        rotation, grasp_q = chosen
        lowest = self.ik.lowest_jaw_z(grasp_q, GRIPPER_OPEN)
        if lowest < -TABLE_TOLERANCE_M:
            hint = "; try grasp='top'" if grasp != "top" else ""
            return Refusal(
                f"pick {ref} refused: a '{grasp}' grasp would put the open jaw "
                f"{-lowest * 1000:.0f} mm into the table{hint}"
            )
        above = centre + approach * APPROACH_M
        plan = Plan(description=f"{grasp} grasp of {ref}: approach, close, lift")
        first = self._reach(plan, above, rotation, joints, GRIPPER_OPEN, f"over {ref}")
        if isinstance(first, Refusal):
            return Refusal(f"pick {ref} refused: {first.message}")
        down = self._line(plan, above, centre, rotation, first, GRIPPER_OPEN, "descend")
        if isinstance(down, Refusal):
            return Refusal(f"pick {ref} refused: {down.message}")
        plan.steps.append(JawMove(GRIPPER_CLOSED, 0.7, "close"))
        lifted = np.array([centre[0], centre[1], max(CARRY_Z, centre[2] + 0.03)])
        up = self._line(plan, centre, lifted, rotation, down, GRIPPER_CLOSED, "lift")
        if isinstance(up, Refusal):
            return Refusal(f"pick {ref} refused: {up.message}")
        return plan

    def place(
        self,
        ref: str,
        target: str,
        target_state: ObjectState,
        joints: Sequence[float],
        grasp_point: Sequence[float],
        roll_yaw: float,
    ) -> Plan | Refusal:
        tx, ty, tz = target_state.position
        if target_state.kind == "box":
            release = np.array([tx, ty, 0.004 + CUBE_HALF + 0.012])
        elif target_state.kind == "cube":
            release = np.array([tx, ty, tz + 2 * CUBE_HALF + 0.006])
        else:  # the table: straight down where the gripper is
            release = np.array([grasp_point[0], grasp_point[1], CUBE_HALF + 0.006])
        carry = max(CARRY_Z, release[2] + 0.025)
        above = np.array([release[0], release[1], carry])
        options = [top_down(roll_yaw + k * math.pi / 2) for k in range(4)]
        chosen = self._best(above, options, joints)
        if not isinstance(chosen, tuple):
            detail = chosen.shortfall() if isinstance(chosen, IKResult) else "no solution"
            return Refusal(
                f"place {ref} on/in {target} refused: the arm cannot hold it above "
                f"({above[0]:.3f}, {above[1]:.3f}) with the fingers down: {detail}"
            )
        rotation, _ = chosen
        plan = Plan(description=f"carry {ref} over {target}, lower, release, retreat")
        start = np.asarray(grasp_point, dtype=float)
        rise = np.array([start[0], start[1], max(start[2], carry)])
        current = self._line(plan, start, rise, None, joints, GRIPPER_CLOSED, "rise", partial=True)
        if isinstance(current, Refusal):
            return Refusal(f"place {ref} refused: {current.message}")
        over = self._reach(plan, above, rotation, current, GRIPPER_CLOSED, f"over {target}")
        if isinstance(over, Refusal):
            return Refusal(f"place {ref} refused: {over.message}")
        low = self._line(plan, above, release, rotation, over, GRIPPER_CLOSED, "lower")
        if isinstance(low, Refusal):
            return Refusal(f"place {ref} refused: {low.message}")
        plan.steps.append(JawMove(GRIPPER_OPEN, 0.6, "release"))
        back = self._line(plan, release, above, rotation, low, GRIPPER_OPEN, "retreat")
        if isinstance(back, Refusal):
            return Refusal(f"place {ref} refused: {back.message}")
        return plan

    def move_to(self, target: Vec3, joints: Sequence[float], speed: float) -> Plan | Refusal:
        start, _ = self.ik.fk(joints, EE_SITE)
        goal = np.asarray(target, dtype=float)
        end = self._options_ok(goal, joints, site=EE_SITE)
        if not isinstance(end, tuple):
            detail = end.shortfall() if isinstance(end, IKResult) else "no solution"
            return Refusal(
                f"move_to ({goal[0]:.3f}, {goal[1]:.3f}, {goal[2]:.3f}) refused: the arm "
                f"cannot point its fingers down there: {detail}"
            )
        plan = Plan(description="straight line, fingers down")
        rotation, _ = end
        result = self._line(
            plan, start, goal, rotation, joints, None, "line", site=EE_SITE, speed=speed
        )
        return result if isinstance(result, Refusal) else plan

    def joint_move(self, target: Sequence[float], joints: Sequence[float], label: str) -> Plan:
        plan = Plan(description=f"{label}: a straight line in joint space")
        self._joint_path(plan, joints, target, None, label)
        return plan

    # ------------------------------------------------------------------ pieces

    def _options_ok(
        self, point: np.ndarray, joints: Sequence[float], *, site: str
    ) -> tuple[np.ndarray, tuple[float, ...]] | IKResult | None:
        bearing = math.atan2(point[1], point[0])
        options = [top_down(bearing + math.pi / 2 + k * math.pi / 2) for k in range(4)]
        return self._best(point, options, joints, site=site)

    def _best(
        self,
        point: np.ndarray,
        options: Sequence[np.ndarray],
        joints: Sequence[float],
        *,
        site: str = GRASP_SITE,
        clear: Callable[[tuple[float, ...]], bool] | None = None,
    ) -> tuple[np.ndarray, tuple[float, ...]] | IKResult | None:
        """The rotation of ``options`` reachable at ``point`` (and ``clear``) with the least
        wrist roll travel, and its joints; else the closest failed attempt (None when
        every reachable one was not clear)."""
        reachable: list[tuple[float, int, np.ndarray, tuple[float, ...]]] = []
        closest: IKResult | None = None
        for index, rotation in enumerate(options):
            result = self.ik.solve(site, point, rotation, joints)
            if result.ok:
                cost = abs(result.joints[4] - joints[4]) + 0.5 * abs(result.joints[0] - joints[0])
                reachable.append((cost, index, rotation, result.joints))
            elif closest is None or _badness(result) < _badness(closest):
                closest = result
        for _, _, rotation, solution in sorted(reachable, key=lambda item: item[:2]):
            if clear is None or clear(solution):
                return rotation, solution
        return None if reachable else closest

    def _jaw_clear(
        self, ref: str, blocked: list[str]
    ) -> Callable[[tuple[float, ...]], bool] | None:
        """A check that the open jaw at a grasp touches nothing but ``ref`` (what it would
        strike is added to ``blocked``)."""
        contacts = self.jaw_contacts
        if contacts is None:
            return None

        def clear(solution: tuple[float, ...]) -> bool:
            # the moving jaw sweeps an arc as it closes: check it along the way
            hits = [h for g in JAW_ARC for h in contacts(solution, g, {ref})]
            blocked.extend(hits)
            return not hits

        return clear

    def _reach(
        self,
        plan: Plan,
        point: np.ndarray,
        rotation: np.ndarray,
        joints: Sequence[float],
        gripper: float,
        label: str,
    ) -> tuple[float, ...] | Refusal:
        result = self.ik.solve(GRASP_SITE, point, rotation, joints)
        if not result.ok:
            return Refusal(
                f"cannot reach {label} at ({point[0]:.3f}, {point[1]:.3f}, {point[2]:.3f}): "
                + result.shortfall()
            )
        self._joint_path(plan, joints, result.joints, gripper, label)
        return result.joints

    def _joint_path(
        self,
        plan: Plan,
        start: Sequence[float],
        end: Sequence[float],
        gripper: float | None,
        label: str,
    ) -> None:
        a, b = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
        count = max(1, math.ceil(float(np.max(np.abs(b - a))) / JOINT_SAMPLE_RAD))
        configs = tuple(
            tuple(float(v) for v in a + (b - a) * k / count) for k in range(1, count + 1)
        )
        self._add(plan, configs, gripper, self.speed, label)

    def _line(
        self,
        plan: Plan,
        start: np.ndarray,
        end: np.ndarray,
        rotation: np.ndarray | None,
        joints: Sequence[float],
        gripper: float | None,
        label: str,
        *,
        site: str = GRASP_SITE,
        speed: float | None = None,
        partial: bool = False,
    ) -> tuple[float, ...] | Refusal:
        """Sample the straight line ``start -> end`` of ``site`` and solve each sample;
        ``partial``: stop at the last reachable sample instead of refusing (a rise that
        the wrist cannot finish: the arm goes as high as it can)."""
        start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
        count = max(1, math.ceil(float(np.linalg.norm(end - start)) / LINE_STEP_M))
        current = tuple(float(v) for v in joints)
        configs = []
        for k in range(1, count + 1):
            point = start + (end - start) * k / count
            if rotation is None:  # keep the orientation the arm has
                _, rot = self.ik.fk(current, site)
                result = self.ik.solve(site, point, rot, current)
            else:
                result = self.ik.solve(site, point, rotation, current)
            if not result.ok and partial:
                break
            if not result.ok:
                return Refusal(
                    f"cannot {label} in a straight line to ({point[0]:.3f}, {point[1]:.3f}, "
                    f"{point[2]:.3f}): " + result.shortfall()
                )
            current = result.joints
            configs.append(current)
        if configs:
            self._add(plan, tuple(configs), gripper, speed or self.speed, label)
        return current

    def _add(
        self,
        plan: Plan,
        configs: tuple[tuple[float, ...], ...],
        gripper: float | None,
        speed: float,
        label: str,
    ) -> None:
        grip = gripper if gripper is not None else _last_gripper(plan)
        plan.steps.append(Segment(configs, grip, speed, label))
        for config in configs:
            position, _ = self.ik.fk(config, EE_SITE)
            plan.waypoints.append((float(position[0]), float(position[1]), float(position[2])))


def _badness(result: IKResult) -> float:
    return result.position_error_m + 0.05 * result.angle_error_rad


def _last_gripper(plan: Plan) -> float:
    for step in reversed(plan.steps):
        return step.gripper
    return float("nan")  # the executor keeps the jaw where it is


def yaw_of(rotation: np.ndarray | Mapping[str, float]) -> float:
    """The jaw's closing direction about the vertical (the site's z axis)."""
    matrix = np.asarray(rotation)
    return math.atan2(float(matrix[1, 2]), float(matrix[0, 2]))
