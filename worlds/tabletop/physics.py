"""The tabletop's physics: stepping (interruptible by stop()), inverse kinematics and
position control of the arm, the fingers, and building the table, tray and cubes.
"""

from __future__ import annotations

import math
import time

from worlds.tabletop.parts import (
    ARM_FORCES,
    ARM_JOINTS,
    EE_LINK,
    FINGER_JOINTS,
    LOWER,
    MAX_OPENING,
    REST_POSE,
    UPPER,
    Body,
    Interrupted,
)
from worlds.tabletop.scene import (
    COLORS,
    TABLE_TOP_Z,
    plan_layout,
)
from worlds.tabletop.state import SimState
from worlds.tabletop.truth import GroundTruth


class Physics:
    """Motion primitives and scene building (a part of ``TabletopSim``); it reads where
    the gripper is from the ground truth."""

    def __init__(self, state: SimState, truth: GroundTruth) -> None:
        self.state = state
        self.truth = truth

    def default_speed(self) -> float:
        limits = self.state.profile.limits
        return limits.default_speed_m_s or min(0.25, limits.max_speed_m_s)

    def step(self, count: int = 1) -> None:
        """Advance physics; raise :class:`Interrupted` as soon as stop() was called."""
        for _ in range(count):
            if self.state.stop.is_set():
                raise Interrupted
            with self.state.lock:
                if self.state.cid is None:
                    raise Interrupted
                self.physics_step()
            if self.state.real_time_factor > 0:
                wall0, sim0 = self.state.pace_origin
                due = wall0 + (self.state.sim_time - sim0) / self.state.real_time_factor
                delay = due - time.monotonic()
                if delay > 0 and self.state.stop.wait(delay):
                    raise Interrupted
            if self.state.step_observers:
                point = self.truth.ee_position()
                for observer in self.state.step_observers:
                    observer(point)

    def physics_step(self) -> None:
        """One physics step (the caller holds the lock). A step that starts a control period
        first sends the targets commanded since the last one to the motors and calls the
        recording's hook (measured joints, those targets, frames): targets change only
        there, so each recorded command is exactly the one the motors held until the next
        control step."""
        state = self.state
        if state.steps % state.config.physics_per_control == 0:
            self.send_targets()
            if state.on_control_step is not None:
                state.on_control_step()
        state.pb.stepSimulation(physicsClientId=state.cid)
        state.sim_time += state.dt
        state.steps += 1

    def to_control_step(self) -> None:
        """Let physics run (the targets held) up to the start of the next control period,
        so a motion's first command is sent at once and each later one a whole period on."""
        while self.state.steps % self.state.config.physics_per_control:
            self.step()

    def settle(self, steps: int) -> None:
        self.step(steps)

    def ik(self, position: tuple[float, float, float], yaw: float) -> list[float]:
        pb = self.state.pb
        orientation = pb.getQuaternionFromEuler((math.pi, 0.0, yaw))
        q = pb.calculateInverseKinematics(
            self.state.robot,
            EE_LINK,
            position,
            orientation,
            lowerLimits=[*LOWER, 0.0, 0.0],
            upperLimits=[*UPPER, 0.04, 0.04],
            jointRanges=[u - lo for lo, u in zip(LOWER, UPPER, strict=True)] + [0.04, 0.04],
            restPoses=[*REST_POSE, 0.02, 0.02],
            maxNumIterations=200,
            residualThreshold=1e-4,
            physicsClientId=self.state.cid,
        )
        return list(q[:7])

    def drive_arm(self, q: list[float]) -> None:
        """Command arm joint targets: sent to the motors at the next control step."""
        self.state.arm_command = [float(v) for v in q]
        self.state.targets_sent = False

    def send_targets(self) -> None:
        """The commanded arm and finger targets to the motors, now (the caller holds the
        lock); nothing when they were sent already."""
        state = self.state
        if state.targets_sent:
            return
        pb = state.pb
        pb.setJointMotorControlArray(
            state.robot,
            list(ARM_JOINTS),
            pb.POSITION_CONTROL,
            targetPositions=state.arm_command,
            forces=list(ARM_FORCES),
            physicsClientId=state.cid,
        )
        each, force = state.finger_command
        pb.setJointMotorControlArray(
            state.robot,
            list(FINGER_JOINTS),
            pb.POSITION_CONTROL,
            targetPositions=[each, each],
            forces=[force, force],
            physicsClientId=state.cid,
        )
        state.targets_sent = True

    def move_line(
        self,
        target: tuple[float, float, float],
        yaw: float,
        speed: float,
        *,
        slip_at: float | None = None,
    ) -> None:
        """Straight-line Cartesian motion of the grasp point: one inverse-kinematics target
        per control step, each the point the line should reach by the next one."""
        self.to_control_step()
        start = self.truth.ee_position()
        start_yaw = self.state.yaw
        distance = math.dist(start, target)
        turn = abs(yaw - start_yaw)
        # The smooth profile peaks at 1.5x the mean speed; keep the peak at `speed`.
        duration = max(1.5 * distance / speed, turn / 1.5, self.state.dt)
        controls = max(1, math.ceil(duration * self.state.config.control_hz))
        for index in range(1, controls + 1):
            linear = index / controls
            fraction = linear * linear * (3.0 - 2.0 * linear)  # smooth start and stop
            point = tuple(s + (t - s) * fraction for s, t in zip(start, target, strict=True))
            with self.state.lock:
                self.drive_arm(self.ik(point, start_yaw + (yaw - start_yaw) * fraction))  # type: ignore[arg-type]
            if slip_at is not None and linear >= slip_at:
                self.set_fingers(MAX_OPENING / 2, 5.0)
                slip_at = None
            self.step(self.state.config.physics_per_control)
        self.state.yaw = yaw
        for _ in range(8):
            if math.dist(self.truth.ee_position(), target) < 0.002:
                break
            self.step(10)

    def set_fingers(self, each: float, force: float) -> None:
        """Command both fingers' target (each half the opening): sent at the next control
        step."""
        self.state.finger_command = (each, force)
        self.state.targets_sent = False

    def grip(self, width: float, force: float) -> None:
        self.to_control_step()
        self.set_fingers(width / 2, force)
        previous = self.truth.gripper_width()
        for _ in range(12):
            self.step(10)
            current = self.truth.gripper_width()
            if abs(current - width) < 0.001 or abs(current - previous) < 1e-4:
                break
            previous = current

    def hold(self) -> None:
        """After a stop: command the current joint positions so the arm stays put, sent to
        the motors at once (a stop does not wait for the next control step; the recorded
        command of the step it interrupted is the one the motors had until then)."""
        with self.state.lock:
            if self.state.cid is None:
                return
            q = [
                self.state.pb.getJointState(self.state.robot, j, physicsClientId=self.state.cid)[0]
                for j in ARM_JOINTS
            ]
            self.drive_arm(q)
            self.send_targets()
            for _ in range(10):
                self.physics_step()

    def add_box(
        self,
        ref: str,
        label: str,
        category: str,
        *,
        center: tuple[float, float, float],
        size: tuple[float, float, float],
        rgba: tuple[float, float, float, float],
        mass: float,
        yaw: float = 0.0,
        color: str | None = None,
    ) -> Body:
        pb, cid = self.state.pb, self.state.cid
        half = [s / 2 for s in size]
        shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, physicsClientId=cid)
        visual = pb.createVisualShape(
            pb.GEOM_BOX, halfExtents=half, rgbaColor=rgba, physicsClientId=cid
        )
        body = pb.createMultiBody(
            mass,
            shape,
            visual,
            basePosition=center,
            baseOrientation=pb.getQuaternionFromEuler((0, 0, yaw)),
            physicsClientId=cid,
        )
        pb.changeDynamics(body, -1, lateralFriction=1.0, physicsClientId=cid)
        record = Body(ref, body, label, category, size, mass, color)
        self.state.bodies[ref] = record
        return record

    def build_objects(self, seed: int) -> None:
        pb, cid = self.state.pb, self.state.cid
        layout = plan_layout(self.state.config, seed=seed)
        tray = self.state.config.scene().tray
        if tray is not None and layout.tray_position is not None:
            length, width = tray.size
            wall, height = tray.wall_thickness, tray.wall_height
            floor = 0.006
            boxes = [
                ((0.0, 0.0, floor / 2), (length / 2, width / 2, floor / 2)),
                ((length / 2 - wall / 2, 0.0, height / 2), (wall / 2, width / 2, height / 2)),
                ((-length / 2 + wall / 2, 0.0, height / 2), (wall / 2, width / 2, height / 2)),
                ((0.0, width / 2 - wall / 2, height / 2), (length / 2, wall / 2, height / 2)),
                ((0.0, -width / 2 + wall / 2, height / 2), (length / 2, wall / 2, height / 2)),
            ]
            positions = [b[0] for b in boxes]
            halves = [b[1] for b in boxes]
            shape = pb.createCollisionShapeArray(
                [pb.GEOM_BOX] * 5,
                halfExtents=halves,
                collisionFramePositions=positions,
                physicsClientId=cid,
            )
            visual = pb.createVisualShapeArray(
                [pb.GEOM_BOX] * 5,
                halfExtents=halves,
                visualFramePositions=positions,
                physicsClientId=cid,
            )
            x, y = layout.tray_position
            body = pb.createMultiBody(
                0.0, shape, visual, basePosition=(x, y, TABLE_TOP_Z), physicsClientId=cid
            )
            pb.changeVisualShape(body, -1, rgbaColor=(0.45, 0.45, 0.50, 1.0), physicsClientId=cid)
            pb.changeDynamics(body, -1, lateralFriction=0.8, physicsClientId=cid)
            self.state.bodies[tray.ref] = Body(
                tray.ref, body, "tray", "container", (length, width, height), 0.0
            )
            self.state.tray_floor = floor
        for placed in layout.objects:
            spec = placed.spec
            self.add_box(
                placed.ref,
                placed.label,
                "object",
                center=(placed.position[0], placed.position[1], TABLE_TOP_Z + spec.size / 2),
                size=(spec.size, spec.size, spec.size),
                rgba=COLORS[spec.color],
                mass=spec.mass_kg,
                yaw=placed.yaw,
                color=spec.color,
            )
        with self.state.lock:
            for _ in range(30):
                pb.stepSimulation(physicsClientId=cid)

    def reset_arm(self) -> None:
        pb, cid = self.state.pb, self.state.cid
        for joint, value in zip(ARM_JOINTS, REST_POSE, strict=True):
            pb.resetJointState(self.state.robot, joint, value, physicsClientId=cid)
        for joint in FINGER_JOINTS:
            pb.resetJointState(self.state.robot, joint, MAX_OPENING / 2, physicsClientId=cid)
        self.drive_arm(list(REST_POSE))
        self.set_fingers(MAX_OPENING / 2, 20.0)
        with self.state.lock:
            self.send_targets()
        self.state.yaw = self.measured_yaw()

    def measured_yaw(self) -> float:
        with self.state.lock:
            orientation = self.state.pb.getLinkState(
                self.state.robot,
                EE_LINK,
                computeForwardKinematics=True,
                physicsClientId=self.state.cid,
            )[5]
        return float(self.state.pb.getEulerFromQuaternion(orientation)[2])
