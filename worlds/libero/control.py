"""Moving LIBERO's Panda: robosuite's OSC_POSE controller driven towards Cartesian targets.

The controller takes, 20 times a second, a 7-vector: a position change (1.0 = 5 cm per step,
i.e. 1 m/s), an orientation change (axis-angle, 1.0 = 0.5 rad) and the gripper (-1 open,
+1 closed); robosuite then runs 25 physics steps of 2 ms. :class:`Arm` turns "go to this
point at this speed with the gripper pointing down" into those commands (a proportional
law capped at the speed, the orientation held), stops when the point is reached, when the
gripper stalls against something, or when :meth:`Arm.stop` is called from another thread.

:class:`Frame` converts between LIBERO's world frame and the robot-base frame the harness
sees (the base's position subtracted; every LIBERO scene mounts the base axis-aligned).
Camera observables are switched off while moving (rendering is ~90 % of a step's cost) and
rendered only when the driver observes.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "GUARD_M",
    "HOME_YAW",
    "TRACK_LIMIT_M",
    "Arm",
    "Frame",
    "Interrupted",
    "NearKeepOut",
    "OffPath",
    "down_matrix",
    "half_turned",
    "lean_matrix",
    "side_matrix",
]

Vec3 = tuple[float, float, float]

CONTROL_HZ = 20.0
POSITION_GAIN = 8.0
"""Commanded speed (m/s) per metre of remaining error, before the speed cap."""
TRACKING = 2.5
"""The OSC controller reaches about 1/TRACKING of a commanded step within the step, so
commands lead the wanted speed by this factor; they never lead past the target itself."""
ORIENTATION_GAIN = 1.5
STALL_STEPS = 12
STALL_PROGRESS_M = 0.002
"""A move has stalled when its last STALL_STEPS controller steps gained less than this while
the wrist was already turned to its orientation (turning first is not stalling)."""
TURNED_RAD = 0.1
LOOKAHEAD_M = 0.04
"""How far along the line ahead of the gripper's projection a move aims."""
SLOW_DOWN_M = 0.05
"""Within this of the goal, commands stop leading the controller (no overshoot)."""
TRACK_LIMIT_M = 0.06
"""How far the gripper may stray from a move's straight line before the move is stopped.
The envelope checked the line (the waypoints the driver described); an arm that cannot
follow it (an orientation it cannot reach pulls the position away: seen in LIBERO-PRO's
swapped scenes, 0.3 m off the line and out of the workspace) must not go on elsewhere."""
ZONE_GUARD_M = 0.018
"""How close to a keep-out zone a move may bring the gripper before it is stopped: less than
the envelope's planning margin (0.02 m in the LIBERO profile), so a path it allowed never
trips it. The guard looks ahead (:data:`ZONE_LOOKAHEAD_STEPS`): checked once per controller
step, a guard that waited until the gripper was already this close tripped too late (at 0.3
m/s one controller step moves 1.5 cm, and the arm drifted about 1 cm on after the stop:
LIBERO-PRO libero_goal_task 7, state 0, put 18 physics steps inside the robot's base)."""
ZONE_LOOKAHEAD_STEPS = 2.0
"""How many controller steps' worth of the gripper's approach towards a zone the guard adds
to the distance it checks: the next step, which runs before the next check, and the drift
after a stop (measured: about as far again as the last step, for an arm being pulled off
its path by an orientation it cannot reach)."""
ZONE_CLEAR_M = 0.022
"""Where a stop near a zone leaves the gripper: a stopped arm is sent straight away from the
zone (the envelope's own rule: the only motion it allows that close) until it is this far
clear, more than the envelope's planning margin (0.02 m), so the next motion is planned from
outside the band rather than starting where the guard could only watch it come closer."""
BACK_OFF_M_S = 0.1
"""The speed of that retreat (before the controller's lead), raised by however fast the
gripper still comes in (an arm being dragged in must be pushed out harder), up to
BACK_OFF_MAX_M_S (the profile's default speed, below its 0.5 m/s limit)."""
BACK_OFF_MAX_M_S = 0.3
BACK_OFF_MAX_STEPS = 30
"""A retreat that has not cleared the zone by then stops anyway (holding where it is)."""

GUARD_M = 0.012
"""How far inside the workspace's faces the arm is sent at most: the OSC controller
overshoots a stop by a few millimetres (measured: up to 7 mm at 0.3 m/s)."""


class Interrupted(Exception):
    """stop() arrived while a motion was running."""


class OffPath(Exception):
    """The gripper strayed more than TRACK_LIMIT_M from the line it was moving along."""

    def __init__(self, off_m: float) -> None:
        super().__init__(
            f"stopped: the gripper strayed {off_m:.3f} m from its path (the arm could not "
            "follow it); it holds where it is"
        )
        self.off_m = off_m


class NearKeepOut(OffPath):
    """The gripper was about to come within ZONE_GUARD_M of a keep-out zone (the envelope keeps
    planned paths further away than that: only a motion the arm could not follow gets here);
    the arm has been backed off straight away from the zone."""

    def __init__(self, zone: str, distance_m: float) -> None:
        Exception.__init__(
            self,
            f"stopped: the gripper came {max(distance_m, 0.0):.3f} m from the keep-out zone "
            f"{zone} (the arm could not follow its path); it backed straight away from the "
            "zone and holds there",
        )
        self.off_m = distance_m


HOME_YAW = math.pi / 2
"""LIBERO's initial states hold the fingers closing along the base's y axis."""


def half_turned(yaw: float) -> float:
    """The same grasp with the hand turned half round its axis (the two fingers are alike),
    kept within (-pi, pi]."""
    return yaw - math.pi if yaw > 0 else yaw + math.pi


def down_matrix(yaw: float = HOME_YAW) -> np.ndarray:
    """The gripper pointing straight down, its fingers closing along the horizontal
    direction at angle ``yaw`` from the base's x axis (the site's x axis is the closing
    direction: measured from the fingers' bodies in LIBERO's initial state)."""
    turn = yaw - HOME_YAW
    c, s = math.cos(turn), math.sin(turn)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return rz @ np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])


def lean_matrix(vector: np.ndarray) -> np.ndarray:
    """The rotation matrix of a rotation vector (Rodrigues)."""
    angle = float(np.linalg.norm(vector))
    if angle < 1e-12:
        return np.eye(3)
    k = np.asarray(vector, dtype=float) / angle
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross


def side_matrix(towards: Vec3, closing: Vec3 = (0.0, 0.0, 1.0), dip: float = 0.0) -> np.ndarray:
    """The gripper pointing horizontally *against* ``towards`` (into a cabinet's face whose
    drawer opens towards ``towards``), its fingers closing along ``closing`` (made
    perpendicular to the approach; vertical by default, across a horizontal handle bar).
    With ``dip`` (radians) the approach points that far below the horizontal: the hand and
    wrist then stay back from the face and low, where the forearm clears a cabinet's top
    (pointing straight down at a bottom drawer, the wrist met the cabinet's front edge)."""
    t = np.array([towards[0], towards[1], 0.0])
    t /= max(float(np.linalg.norm(t)), 1e-9)
    z = -t * math.cos(dip) + np.array([0.0, 0.0, -1.0]) * math.sin(dip)
    x = np.asarray(closing, dtype=float) - np.dot(closing, z) * z
    x /= max(float(np.linalg.norm(x)), 1e-9)
    y = np.cross(z, x)
    return np.column_stack([x, y, z])


@dataclass(frozen=True)
class Frame:
    """The robot-base frame: LIBERO world minus ``origin`` (the base's world position)."""

    origin: Vec3

    def to_world(self, point: Any) -> np.ndarray:
        return np.asarray(point, dtype=float) + np.asarray(self.origin)

    def from_world(self, point: Any) -> Vec3:
        p = np.asarray(point, dtype=float) - np.asarray(self.origin)
        return (float(p[0]), float(p[1]), float(p[2]))


def _off_line(here: np.ndarray, origin: np.ndarray, line: np.ndarray, length: float) -> float:
    """The gripper's distance from the segment ``origin`` -> ``origin + line``."""
    if length <= 1e-6:
        return float(np.linalg.norm(here - origin))
    along = min(1.0, max(0.0, float(np.dot(here - origin, line)) / (length * length)))
    return float(np.linalg.norm(here - (origin + line * along)))


def _rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Axis-angle vector (world frame) rotating ``current`` onto ``target``."""
    r = target @ current.T
    angle = math.acos(max(-1.0, min(1.0, (np.trace(r) - 1.0) / 2.0)))
    if angle < 1e-6:
        return np.zeros(3)
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    norm = np.linalg.norm(axis)
    if norm < 1e-9:  # a half turn: any perpendicular axis
        axis = np.array([1.0, 0.0, 0.0]) if abs(r[0, 0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        norm = 1.0
    return axis / norm * angle


class Arm:
    """The Panda of one LIBERO env (``env`` is LIBERO's ``ControlEnv``)."""

    def __init__(self, env: Any, frame: Frame, stop: threading.Event) -> None:
        self.env = env
        self.frame = frame
        self._stop = stop
        self.steps = 0
        """Controller steps taken since the counter was last reset (a skill's budget)."""
        self.budget: int | None = None
        self.gripper_command = -1.0
        self.orientation = down_matrix()
        self.bounds: tuple[Vec3, Vec3] | None = None
        """(low, high) corners (base frame) every move's goal is kept inside: the workspace
        shrunk by GUARD_M, so the arm's overshoot when it stops at a face stays inside."""
        self.on_control: Callable[[np.ndarray], None] | None = None
        """Called with each controller command just before it is sent (the state it is
        measured against is the current one): a recording's control step."""
        self.keep_out: list[tuple[str, Vec3, Vec3]] = []
        """(name, low, high) of each keep-out zone (base frame): a move that would bring the
        gripper within ZONE_GUARD_M of one is stopped (:class:`NearKeepOut`) and backed off
        to ZONE_CLEAR_M."""

    @property
    def _robot(self) -> Any:
        return self.env.env.robots[0]

    def ee_world(self) -> np.ndarray:
        return np.array(self.env.env.sim.data.site_xpos[self._robot.eef_site_id], dtype=float)

    def ee_position(self) -> Vec3:
        return self.frame.from_world(self.ee_world())

    def ee_matrix(self) -> np.ndarray:
        data = self.env.env.sim.data.site_xmat[self._robot.eef_site_id]
        return np.array(data, dtype=float).reshape(3, 3)

    def ee_yaw(self) -> float:
        """The angle of the fingers' closing direction (0: along the base's x axis)."""
        m = self.ee_matrix()
        return math.atan2(m[1, 0], m[0, 0])

    def finger_positions(self) -> list[float]:
        """The two finger joints' positions (m)."""
        robot = self._robot
        return [float(v) for v in self.env.env.sim.data.qpos[robot._ref_gripper_joint_pos_indexes]]

    def gripper_width(self) -> float:
        q = self.finger_positions()
        return abs(q[0]) + abs(q[1])

    def joint_positions(self) -> list[float]:
        robot = self._robot
        return [float(v) for v in self.env.env.sim.data.qpos[robot._ref_joint_pos_indexes]]

    # ------------------------------------------------------------------ commands

    def step(self, velocity: Any = (0.0, 0.0, 0.0)) -> None:
        """One controller step (25 physics steps): move at ``velocity`` (m/s, world axes),
        turn towards the held orientation, gripper as last commanded."""
        if self._stop.is_set():
            raise Interrupted
        if self.budget is not None and self.steps >= self.budget:
            raise BudgetExceeded(self.steps)
        self._send(velocity)

    def _send(self, velocity: Any) -> None:
        """One controller step with no stop or budget check (:meth:`back_off` must finish
        what a stop began)."""
        action = np.zeros(7)
        action[:3] = np.clip(np.asarray(velocity, dtype=float), -1.0, 1.0)
        rotation = _rotation_error(self.orientation, self.ee_matrix()) * ORIENTATION_GAIN
        action[3:6] = np.clip(rotation / 0.5, -0.6, 0.6)
        action[6] = self.gripper_command
        if self.on_control is not None:
            self.on_control(action)
        self.env.step(action)
        self.steps += 1

    def move(
        self,
        target: Vec3,
        *,
        speed: float,
        tolerance: float = 0.005,
        on_step: Callable[[], None] | None = None,
        press: float = 0.0,
    ) -> bool:
        """Go to ``target`` (base frame) in a straight line; True when reached, False when
        the gripper stalled (pressed against something) first. ``press``: a downward command
        added to every step (in the commands' units), so the fingertips bear down on what
        they slide along (the OSC controller's force follows the commanded offset)."""
        if self.bounds is not None:
            low, high = self.bounds
            target = tuple(  # type: ignore[assignment]
                min(hi, max(lo, float(v))) for v, lo, hi in zip(target, low, high, strict=True)
            )
        goal = self.frame.to_world(target)
        origin = self.ee_world()
        line = goal - origin
        length = float(np.linalg.norm(line))
        history: list[float] = []
        previous = self._zone_distances(origin)
        while True:
            here = self.ee_world()
            error = goal - here
            distance = float(np.linalg.norm(error))
            if distance <= tolerance:
                return True
            off = _off_line(here, origin, line, length)
            self._check_keep_out(here, previous)
            if off > TRACK_LIMIT_M:
                # Stop turning too: the orientation it could not reach is what pulled it away.
                self.orientation = self.ee_matrix()
                raise OffPath(off)
            turned = float(np.linalg.norm(_rotation_error(self.orientation, self.ee_matrix())))
            history.append(distance if turned < TURNED_RAD else math.inf)
            if (
                len(history) > STALL_STEPS
                and history[-STALL_STEPS - 1] - distance < STALL_PROGRESS_M
            ):
                return False
            # follow the straight line: aim at a point LOOKAHEAD_M further along it than the
            # gripper's projection, so a drift off the line is pulled back onto it
            if length > 1e-6:
                along = float(np.dot(here - origin, line)) / length
                carrot = origin + line * min(1.0, max(0.0, along + LOOKAHEAD_M) / length)
            else:
                carrot = goal
            aim = carrot - here
            velocity = aim * POSITION_GAIN
            norm = float(np.linalg.norm(velocity))
            if norm > speed:
                velocity *= speed / norm
            lead = TRACKING if distance > SLOW_DOWN_M else 1.0
            command = self._guarded(here, velocity * lead)
            limit = float(np.linalg.norm(aim)) * CONTROL_HZ  # the whole way to the aim point
            if float(np.linalg.norm(command)) > limit:
                command *= limit / max(float(np.linalg.norm(command)), 1e-12)
            if press > 0.0:
                command = self._guarded(here, command - np.array([0.0, 0.0, press]))
            self.step(command)
            if on_step is not None:
                on_step()

    def _zone_distances(self, here: np.ndarray) -> dict[str, float]:
        point = np.asarray(self.frame.from_world(here))
        return {
            name: float(
                np.linalg.norm(
                    np.maximum(np.asarray(low) - point, 0.0)
                    + np.maximum(point - np.asarray(high), 0.0)
                )
            )
            for name, low, high in self.keep_out
        }

    def _check_keep_out(self, here: np.ndarray, previous: dict[str, float]) -> None:
        """Stop when the gripper, coming closer to a zone, would be nearer than ZONE_GUARD_M
        once the look-ahead has run: its distance less ZONE_LOOKAHEAD_STEPS times how much
        closer the last controller step brought it (``previous``: the distances at the last
        check, updated here). A gripper that is not coming closer is not stopped, however
        near it starts (a move that starts in the band may leave it). The stopped arm is
        backed off (:meth:`back_off`) before :class:`NearKeepOut` is raised: held where it
        tripped, it drifted on into the zone."""
        before = dict(previous)
        for name, distance in self._zone_distances(here).items():
            approach = previous.get(name, distance) - distance
            previous[name] = distance
            if approach > 1e-4 and distance - ZONE_LOOKAHEAD_STEPS * approach < ZONE_GUARD_M:
                self.orientation = self.ee_matrix()
                self.back_off(before)
                raise NearKeepOut(name, distance)

    def back_off(self, previous: dict[str, float] | None = None) -> int:
        """Send the gripper straight away from every keep-out zone it is within ZONE_CLEAR_M
        of, or heading for within the look-ahead, until it is clear and no longer heading in
        (at most BACK_OFF_MAX_STEPS controller steps); the steps taken. ``previous``: the
        zones' distances one controller step ago, if known (how fast it is coming in). The
        envelope allows exactly this motion near a zone, and a commanded retreat brakes the
        arm's drift where holding still let it coast on (about 1 cm after a stop at 0.3
        m/s). Neither a stop request nor the skill's step budget cuts it short: it is how a
        stop near a zone ends safely."""
        last = dict(previous) if previous is not None else None
        speed = BACK_OFF_M_S
        for taken in range(BACK_OFF_MAX_STEPS):
            here = self.ee_world()
            distances = self._zone_distances(here)
            last = last if last is not None else distances
            near = {
                name
                for name, gap in distances.items()
                if gap - ZONE_LOOKAHEAD_STEPS * max(0.0, last.get(name, gap) - gap) < ZONE_CLEAR_M
            }
            coming = max((last.get(name, 0.0) - distances[name] for name in near), default=0.0)
            speed = min(BACK_OFF_MAX_M_S, speed + max(0.0, coming) * CONTROL_HZ)
            last = distances
            away = self._away_from_zones(here, near)
            if away is None:
                return taken
            self._send(self._guarded(here, away * speed * TRACKING))
        return BACK_OFF_MAX_STEPS

    def _away_from_zones(self, here: np.ndarray, names: set[str]) -> np.ndarray | None:
        """The unit direction straight away from the zones ``names`` (from a zone's nearest
        point; from inside, towards its nearest face), or None when there are none."""
        point = np.asarray(self.frame.from_world(here))
        total = np.zeros(3)
        for name, low_v, high_v in self.keep_out:
            if name not in names:
                continue
            low, high = np.asarray(low_v), np.asarray(high_v)
            outward = point - np.clip(point, low, high)
            gap = float(np.linalg.norm(outward))
            if gap > 1e-9:
                total += outward / gap
                continue
            faces = np.concatenate([point - low, high - point])
            face = int(np.argmin(faces))
            total[face % 3] += -1.0 if face < 3 else 1.0
        norm = float(np.linalg.norm(total))
        return total / norm if norm > 1e-9 else None

    def _guarded(self, here: np.ndarray, command: np.ndarray) -> np.ndarray:
        """A command with no part pushing the gripper further out once it is within GUARD_M
        of a workspace face, and a push back inside when it is past the guarded box (the arm
        drifts when a target is out of its kinematic reach)."""
        if self.bounds is None:
            return command
        point = np.asarray(self.frame.from_world(here))
        low, high = np.asarray(self.bounds[0]), np.asarray(self.bounds[1])
        command = command.copy()
        for axis in range(3):
            if point[axis] >= high[axis] and command[axis] > 0:
                command[axis] = 0.0
            if point[axis] <= low[axis] and command[axis] < 0:
                command[axis] = 0.0
            if point[axis] > high[axis]:
                command[axis] -= (point[axis] - high[axis]) * POSITION_GAIN * TRACKING
            if point[axis] < low[axis]:
                command[axis] += (low[axis] - point[axis]) * POSITION_GAIN * TRACKING
        return command

    def grip(self, close: bool, *, steps: int = 12) -> None:
        """Close or open the fingers and wait ``steps`` controller steps (holding still),
        guarded like a move: the wrist turns to the held orientation meanwhile, and near the
        robot's base that turn alone carried the gripper 1 cm towards the zone."""
        self.gripper_command = 1.0 if close else -1.0
        previous = self.gripper_width()
        zones = self._zone_distances(self.ee_world())
        for index in range(steps):
            self.step()
            self._check_keep_out(self.ee_world(), zones)
            width = self.gripper_width()
            if index >= 4 and abs(width - previous) < 2e-4:
                break
            previous = width

    def hold(self, steps: int = 3) -> None:
        """Stay where the arm is for a few controller steps (guarded like a move: a wrist
        still turning, or an arm still coasting, moves the gripper)."""
        zones = self._zone_distances(self.ee_world())
        for _ in range(steps):
            self.step()
            self._check_keep_out(self.ee_world(), zones)

    def turn(self, steps: int = 25) -> None:
        """Turn to the held orientation where the gripper is, for ``steps`` controller steps
        (or until turned), pulling the gripper back to where it started: a wrist turning in
        place otherwise drifts the fingers by centimetres."""
        anchor = self.ee_world()
        previous = self._zone_distances(anchor)
        for _ in range(steps):
            here = self.ee_world()
            # the same stops as a move's: a turn is described to the envelope as no motion
            self._check_keep_out(here, previous)
            off = float(np.linalg.norm(here - anchor))
            if off > TRACK_LIMIT_M:
                self.orientation = self.ee_matrix()
                raise OffPath(off)
            if float(np.linalg.norm(_rotation_error(self.orientation, self.ee_matrix()))) < 0.02:
                break
            pull = (anchor - here) * POSITION_GAIN * TRACKING
            self.step(self._guarded(here, pull))


class BudgetExceeded(Exception):
    """A skill used up ``max_steps_per_action`` controller steps."""

    def __init__(self, steps: int) -> None:
        super().__init__(f"gave up after {steps} controller steps")
        self.steps = steps
