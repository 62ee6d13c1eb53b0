"""The tabletop's actions: what move_to, pick, place, the gripper, move_joints, home and
look do, worked out as plans of gripper waypoints that describe_motion reports and
execute follows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from embodiment.geometry import point_text, rounded_point
from embodiment.types import ActionResult
from worlds.tabletop.actions import (
    CloseGripperArgs,
    LookArgs,
    MoveJointsArgs,
    MoveToArgs,
    OpenGripperArgs,
    PickArgs,
    PlaceArgs,
)
from worlds.tabletop.cameras import Cameras
from worlds.tabletop.parts import (
    APPROACH_HEIGHT,
    ARM_JOINTS,
    GRIP_FORCE_N,
    HOME_SAMPLE_RAD,
    LIFT_HEIGHT,
    LOWER,
    MAX_OPENING,
    REACH_TOLERANCE_M,
    REST_POSE,
    UPPER,
    Body,
    Plan,
    grasp_yaw,
    grid,
)
from worlds.tabletop.physics import Physics
from worlds.tabletop.scene import (
    OBJECT_REGION,
    TABLE_TOP_Z,
)
from worlds.tabletop.state import SimState
from worlds.tabletop.truth import GroundTruth


class Tasks:
    """Action handlers and their plans (a part of ``TabletopSim``): they move the arm
    through the physics, read the world from the ground truth, and take pictures with the
    cameras."""

    def __init__(
        self, state: SimState, physics: Physics, truth: GroundTruth, cameras: Cameras
    ) -> None:
        self.state = state
        self.physics = physics
        self.truth = truth
        self.cameras = cameras

    def move_to(self, args: MoveToArgs) -> ActionResult:
        speed = args.speed or self.physics.default_speed()
        target = (args.x, args.y, args.z)
        self.physics.move_line(target, self.state.yaw, speed)
        error = math.dist(self.truth.ee_position(), target)
        applied = {"x": args.x, "y": args.y, "z": args.z, "speed": speed}
        if error > REACH_TOLERANCE_M:
            return ActionResult(
                ok=False,
                message=f"stopped {error:.3f} m short of {point_text(target)} (kinematic limit)",
                applied=applied,
                data={"ee_position": rounded_point(self.truth.ee_position())},
            )
        return ActionResult(
            ok=True,
            message=f"gripper at {point_text(self.truth.ee_position())}",
            applied=applied,
            data={"ee_position": rounded_point(self.truth.ee_position())},
        )

    def pick_plan(self, args: PickArgs) -> Plan | ActionResult:
        """How pick will move (or why it refuses): approach above, down to the grasp, lift."""
        body = self.state.bodies.get(args.ref)
        if body is None:
            return ActionResult(ok=False, message=self.truth.unknown(args.ref))
        if body.category != "object":
            return ActionResult(
                ok=False, message=f"{args.ref} is a {body.label}; it cannot be picked"
            )
        held = self.truth.held_ref()
        if held is not None:
            verb = "is already held" if held == args.ref else f"is not free: holding {held}"
            return ActionResult(ok=False, message=f"the gripper {verb}; place it first")
        (x, y, z), object_yaw = self.truth.pose(args.ref)
        return Plan(
            waypoints=((x, y, z + APPROACH_HEIGHT), (x, y, z), (x, y, z + LIFT_HEIGHT)),
            yaw=grasp_yaw(object_yaw),
        )

    def pick(self, args: PickArgs) -> ActionResult:
        plan = self.pick_plan(args)
        if isinstance(plan, ActionResult):
            return plan
        approach, grasp, lift = plan.waypoints
        yaw = plan.yaw
        speed = self.physics.default_speed()
        self.physics.grip(MAX_OPENING, 20.0)
        self.physics.move_line(approach, yaw, speed)
        self.physics.move_line(grasp, yaw, speed * 0.5)
        self.physics.grip(0.0, GRIP_FORCE_N)
        self.state.picks[args.ref] += 1
        slip = self.state.picks[args.ref] <= self.state.faults.drop_on_lift.get(args.ref, 0)
        self.physics.move_line(lift, yaw, speed * 0.6, slip_at=0.4 if slip else None)
        self.physics.settle(40)
        width = self.truth.gripper_width()
        applied = {
            "ref": args.ref,
            "grasp_position": rounded_point(grasp),
            "grasp_yaw": round(yaw, 4),
        }
        if width < 0.005:
            message = f"fingers closed fully ({width:.3f} m): nothing between them"
        else:
            message = (
                f"fingers closed at {width:.3f} m; lifted to z={self.truth.ee_position()[2]:.3f}"
            )
        return ActionResult(
            ok=True, message=message, applied=applied, data={"gripper_width": round(width, 4)}
        )

    def place_plan(self, args: PlaceArgs) -> Plan | ActionResult:
        """How place will move (or why it refuses): up to the carry height, across, down
        to the release point, and back up after letting go."""
        body = self.state.bodies.get(args.ref)
        target = self.state.bodies.get(args.target)
        if body is None:
            return ActionResult(ok=False, message=self.truth.unknown(args.ref))
        if target is None:
            return ActionResult(ok=False, message=self.truth.unknown(args.target))
        if args.target == args.ref:
            return ActionResult(ok=False, message="an object cannot be placed on itself")
        held = self.truth.held_ref()
        if held != args.ref:
            holding = held or "nothing"
            return ActionResult(
                ok=False, message=f"not holding {args.ref} (holding {holding}); pick it first"
            )
        relation = args.relation or ("in" if target.category == "container" else "on")
        if relation == "in" and target.category != "container":
            return ActionResult(
                ok=False, message=f"{args.target} is not a container; use relation 'on'"
            )
        if target.category == "container":
            relation = "in"
        spot = self.drop_spot(body, target)
        if isinstance(spot, str):
            return ActionResult(ok=False, message=spot)
        (sx, sy), support_top = spot
        release_z = support_top + body.size[2] / 2 + 0.0
        ee = self.truth.ee_position()
        carry_z = max(ee[2], release_z + APPROACH_HEIGHT)
        return Plan(
            waypoints=(
                (ee[0], ee[1], carry_z),
                (sx, sy, carry_z),
                (sx, sy, release_z),
                (sx, sy, release_z + 0.10),
            ),
            yaw=0.0,
            relation=relation,
        )

    def place(self, args: PlaceArgs) -> ActionResult:
        plan = self.place_plan(args)
        if isinstance(plan, ActionResult):
            return plan
        up, across, release, retreat = plan.waypoints
        speed = self.physics.default_speed()
        self.physics.move_line(up, self.state.yaw, speed)
        self.physics.move_line(across, plan.yaw, speed)
        self.physics.move_line(release, plan.yaw, speed * 0.5)
        self.physics.grip(MAX_OPENING, 20.0)
        self.physics.settle(30)
        self.physics.move_line(retreat, plan.yaw, speed)
        self.physics.settle(60)
        applied = {
            "ref": args.ref,
            "target": args.target,
            "relation": plan.relation,
            "release_position": rounded_point(release),
        }
        return ActionResult(
            ok=True,
            message=f"released {args.ref} {plan.relation} {args.target} at {point_text(release)}",
            applied=applied,
        )

    def open_gripper(self, args: OpenGripperArgs) -> ActionResult:
        width = min(args.width or MAX_OPENING, MAX_OPENING)
        self.physics.grip(width, 20.0)
        self.physics.settle(20)
        actual = self.truth.gripper_width()
        return ActionResult(
            ok=True,
            message=f"gripper open at {actual:.3f} m",
            applied={"width": width},
            data={"gripper_width": round(actual, 4)},
        )

    def close_gripper(self, args: CloseGripperArgs) -> ActionResult:
        force = args.force or GRIP_FORCE_N
        self.physics.grip(0.0, force)
        actual = self.truth.gripper_width()
        return ActionResult(
            ok=True,
            message=f"gripper closed to {actual:.3f} m",
            applied={"force": force},
            data={"gripper_width": round(actual, 4)},
        )

    def joints_now(self) -> list[float]:
        with self.state.lock:
            return [
                self.state.pb.getJointState(self.state.robot, j, physicsClientId=self.state.cid)[0]
                for j in ARM_JOINTS
            ]

    def kinematics(self) -> Any:
        """The arm's kinematic model: the one the safety envelope maps joint targets
        through (the profile's ``kinematics``), shared, so both check the same arm."""
        from embodiment.envelope.kinematics import kinematic_model
        from embodiment.profile import KinematicsSpec

        spec = self.state.profile.kinematics or KinematicsSpec(
            urdf="pybullet_data:franka_panda/panda.urdf", ee_link="panda_grasptarget"
        )
        return kinematic_model(spec, len(ARM_JOINTS)), spec.frame

    def joint_path(self, target: Sequence[float]) -> list[tuple[float, float, float]]:
        """Where the gripper passes on the joint-space line from the arm's joints to
        ``target`` (what ``drive_joints`` commands): forward kinematics of samples along
        it, on the shared kinematic model (the simulated arm does not move)."""
        start = self.joints_now()
        largest = max(abs(a - b) for a, b in zip(start, target, strict=True))
        count = max(1, math.ceil(largest / HOME_SAMPLE_RAD))
        model, frame = self.kinematics()
        samples = [
            [a + (b - a) * index / count for a, b in zip(start, target, strict=True)]
            for index in range(1, count + 1)
        ]
        return [self.state.profile.to_world(point, frame) for point in model.ee_points(samples)]

    def drive_joints(self, target: Sequence[float]) -> None:
        """The arm along the joint-space line to ``target``, at most 1 rad/s per joint: one
        target per control step, each the point of the line for the next one."""
        self.physics.to_control_step()
        start = self.joints_now()
        largest = max(abs(a - b) for a, b in zip(start, target, strict=True))
        controls = max(1, math.ceil(largest / 1.0 * self.state.config.control_hz))
        for index in range(1, controls + 1):
            fraction = index / controls
            q = [a + (b - a) * fraction for a, b in zip(start, target, strict=True)]
            with self.state.lock:
                self.physics.drive_arm(q)
            self.physics.step(self.state.config.physics_per_control)
        self.physics.settle(60)
        self.state.yaw = self.physics.measured_yaw()

    def move_joints(self, args: MoveJointsArgs) -> ActionResult:
        # The Panda's own limits: the envelope checks the profile's before this runs.
        target = [min(hi, max(lo, v)) for v, lo, hi in zip(args.joints, LOWER, UPPER, strict=True)]
        self.drive_joints(target)
        error = max(abs(a - b) for a, b in zip(self.joints_now(), target, strict=True))
        return ActionResult(
            ok=error < 0.02,
            message=f"joints reached (largest error {error:.3f} rad); gripper at "
            f"{point_text(self.truth.ee_position())}",
            applied={"joints": target},
        )

    def home(self) -> ActionResult:
        self.drive_joints(REST_POSE)
        error = math.dist(self.truth.ee_position(), self.truth.home_position())
        return ActionResult(
            ok=error < REACH_TOLERANCE_M * 2,
            message=f"home; gripper at {point_text(self.truth.ee_position())}",
            applied={"joints": list(REST_POSE)},
        )

    def look(self, args: LookArgs) -> ActionResult:
        names = [camera.name for camera in self.state.profile.cameras]
        name = (
            args.camera
            or (self.state.profile.model_visible_cameras() or self.state.profile.cameras)[0].name
        )
        if name not in names:
            return ActionResult(
                ok=False, message=f"unknown camera {name!r}; cameras: {', '.join(names)}"
            )
        frame = self.cameras.render(name)
        return ActionResult(
            ok=True,
            message=f"fresh image from {name} ({frame.shape[1]}x{frame.shape[0]})",
            applied={"camera": name},
            data={"images": {name: frame}},
        )

    def drop_spot(self, body: Body, target: Body) -> tuple[tuple[float, float], float] | str:
        """Where to release ``body`` in/on ``target``: ((x, y), support top z) or a reason."""
        others = {
            ref: self.truth.pose(ref)[0]
            for ref, other in self.state.bodies.items()
            if other.category == "object" and ref != body.ref
        }
        if target.category == "container":
            (cx, cy, cz), _ = self.truth.pose(target.ref)
            floor_top = cz - target.size[2] / 2 + self.state.tray_floor
            inner_x = target.size[0] / 2 - 0.008 - body.size[0] / 2 - 0.005
            inner_y = target.size[1] / 2 - 0.008 - body.size[1] / 2 - 0.005
            pitch = body.size[0] + 0.015
            xs = grid(cx, inner_x, pitch)
            ys = grid(cy, inner_y, pitch)
            slots = sorted(
                ((x, y) for x in xs for y in ys),
                key=lambda s: (round(math.hypot(s[0] - cx, s[1] - cy), 4), s),
            )
            for x, y in slots:
                if all(math.hypot(x - ox, y - oy) >= pitch * 0.9 for ox, oy, _ in others.values()):
                    return (x, y), floor_top
            return f"{target.ref} has no free spot left for {body.ref}"
        if target.category == "object":
            (tx, ty, tz), _ = self.truth.pose(target.ref)
            top = tz + target.size[2] / 2
            for ref, (ox, oy, oz) in others.items():
                if (
                    ref != target.ref
                    and abs(ox - tx) < target.size[0]
                    and abs(oy - ty) < target.size[1]
                    and oz > tz
                ):
                    return f"{ref} is already on {target.ref}"
            return (tx, ty), top
        # A surface: the free spot on the table nearest the gripper, inside the usual region.
        ee = self.truth.ee_position()
        (x_low, x_high), (y_low, y_high) = OBJECT_REGION
        candidates = [
            (x_low + i * 0.03, y_low + j * 0.03)
            for i in range(int((x_high - x_low) / 0.03) + 1)
            for j in range(int((y_high - y_low) / 0.03) + 1)
        ]
        blockers = [(p[0], p[1], 0.06) for p in others.values()]
        for ref, other in self.state.bodies.items():
            if other.category == "container":
                (cx, cy, _), _ = self.truth.pose(ref)
                blockers.append((cx, cy, math.hypot(*other.size[:2]) / 2 + 0.04))
        free = [
            c
            for c in candidates
            if all(math.hypot(c[0] - bx, c[1] - by) >= r for bx, by, r in blockers)
        ]
        if not free:
            return f"no free spot on {target.ref}"
        spot = min(free, key=lambda c: (math.hypot(c[0] - ee[0], c[1] - ee[1]), c))
        return spot, TABLE_TOP_Z
