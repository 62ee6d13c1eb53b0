"""The tabletop's ground truth: where each body is, what the gripper holds, what rests on
what, and the detections perception and the evaluator read (never the model directly).
"""

from __future__ import annotations

import numpy as np

from embodiment.geometry import rounded_point
from scene.perception import Detection
from worlds.tabletop.parts import (
    EE_LINK,
    FINGER_JOINTS,
    Body,
)
from worlds.tabletop.scene import (
    TABLE_TOP_Z,
)
from worlds.tabletop.state import SimState


class GroundTruth:
    """Ground-truth queries on the simulator's state (a part of
    :class:`~worlds.tabletop.simulator.TabletopSim`)."""

    def __init__(self, state: SimState) -> None:
        self.state = state

    def refs(self) -> list[str]:
        return list(self.state.bodies)

    def body(self, ref: str) -> Body:
        return self.state.bodies[ref]

    def pose(self, ref: str) -> tuple[tuple[float, float, float], float]:
        """(centre position, yaw) of an object."""
        body = self.state.bodies[ref]
        with self.state.lock:
            position, orientation = self.state.pb.getBasePositionAndOrientation(
                body.body, physicsClientId=self.state.cid
            )
        if body.category == "container":
            position = (position[0], position[1], position[2] + body.size[2] / 2)
        yaw = self.state.pb.getEulerFromQuaternion(orientation)[2]
        return tuple(position), yaw  # type: ignore[return-value]

    def speed_of(self, ref: str) -> float:
        with self.state.lock:
            linear, _ = self.state.pb.getBaseVelocity(
                self.state.bodies[ref].body, physicsClientId=self.state.cid
            )
        return float(np.linalg.norm(linear))

    def held_ref(self) -> str | None:
        """The object both fingers touch, if any."""
        with self.state.lock:
            for ref, body in self.state.bodies.items():
                if body.category != "object":
                    continue
                touching = [
                    bool(
                        self.state.pb.getContactPoints(
                            self.state.robot,
                            body.body,
                            linkIndexA=finger,
                            physicsClientId=self.state.cid,
                        )
                    )
                    for finger in FINGER_JOINTS
                ]
                if all(touching):
                    return ref
        return None

    def support_of(
        self, ref: str, *, poses: dict[str, tuple[tuple[float, float, float], float]] | None = None
    ) -> tuple[str, str] | None:
        """(relation, ref) of what an object rests in or on: ("inside", "tray_1"),
        ("on", "green_cube_1"), ("on", "table_1"), or None (held, falling, tipped).
        ``poses`` may carry poses already read this step (saves simulator queries)."""
        poses = poses if poses is not None else self.poses()
        body = self.state.bodies[ref]
        (x, y, z), _ = poses[ref]
        bottom = z - body.size[2] / 2
        for other_ref, other in self.state.bodies.items():
            if other_ref == ref or other.category != "container":
                continue
            (cx, cy, cz), _ = poses[other_ref]
            half_x, half_y = other.size[0] / 2, other.size[1] / 2
            if abs(x - cx) <= half_x and abs(y - cy) <= half_y and bottom <= cz + other.size[2] / 2:
                return ("inside", other_ref)
        for other_ref, other in self.state.bodies.items():
            if other_ref == ref or other.category != "object":
                continue
            (ox, oy, oz), _ = poses[other_ref]
            top = oz + other.size[2] / 2
            overlap = abs(x - ox) <= other.size[0] / 2 and abs(y - oy) <= other.size[1] / 2
            if overlap and abs(bottom - top) <= 0.012:
                return ("on", other_ref)
        if abs(bottom - TABLE_TOP_Z) <= 0.012:
            return ("on", "table_1")
        return None

    def poses(self) -> dict[str, tuple[tuple[float, float, float], float]]:
        return {ref: self.pose(ref) for ref in self.state.bodies}

    def ee_position(self) -> tuple[float, float, float]:
        with self.state.lock:
            state = self.state.pb.getLinkState(
                self.state.robot,
                EE_LINK,
                computeForwardKinematics=True,
                physicsClientId=self.state.cid,
            )
        return tuple(float(v) for v in state[4])  # type: ignore[return-value]

    def gripper_width(self) -> float:
        with self.state.lock:
            return float(
                sum(
                    self.state.pb.getJointState(
                        self.state.robot, j, physicsClientId=self.state.cid
                    )[0]
                    for j in FINGER_JOINTS
                )
            )

    def home_position(self) -> tuple[float, float, float]:
        gripper = self.state.profile.grippers[0]
        return self.state.profile.to_world(gripper.initial_position, gripper.frame)

    def detections(self) -> list[Detection]:
        """Ground truth as :class:`~scene.perception.Detection` objects."""
        held = self.held_ref()
        poses = self.poses()
        found: list[Detection] = []
        seen_only = self.state.config.perceives_only_what_was_seen
        for ref, body in self.state.bodies.items():
            if seen_only and body.body not in self.state.seen and ref != held:
                continue
            position, _ = poses[ref]
            with self.state.lock:
                _, orientation = self.state.pb.getBasePositionAndOrientation(
                    body.body, physicsClientId=self.state.cid
                )
            relations: list[tuple[str, str]] = []
            if body.category == "object" and ref != held:
                support = self.support_of(ref, poses=poses)
                if support is not None:
                    relations.append(support)
            found.append(
                Detection(
                    ref=ref,
                    label=body.label,
                    category=body.category,  # type: ignore[arg-type]
                    color=body.color,
                    position=rounded_point(position),
                    orientation=tuple(round(v, 4) for v in orientation),  # type: ignore[arg-type]
                    size=body.size,
                    confidence=1.0,
                    is_open=True if body.category == "container" else None,
                    provenance="ground_truth",
                    relations=relations,
                    attributes={"mass_kg": body.mass_kg} if body.mass_kg else {},
                )
            )
        width = self.gripper_width()
        found.append(
            Detection(
                ref="gripper",
                label="gripper",
                category="robot_part",
                position=rounded_point(self.ee_position()),
                size=(0.02, 0.2, 0.05),
                provenance="ground_truth",
                attributes={
                    "state": "open" if width > 0.07 else "closed",
                    "opening_m": round(width, 4),
                    "holding": held,
                },
                relations=[("holding", held)] if held else [],
            )
        )
        base = self.state.profile.frame_pose_in_world("base")[0]
        found.append(
            Detection(
                ref="robot",
                label="panda arm",
                category="robot",
                position=rounded_point(base),
                size=(0.25, 0.25, 0.9),
                provenance="ground_truth",
            )
        )
        return found

    def unknown(self, ref: str) -> str:
        """Why ``ref`` cannot be used: no such object (and the closest refs there are)."""
        import difflib

        close = difflib.get_close_matches(ref, list(self.state.bodies), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"unknown object {ref!r}{hint}"

    def latest_detections(self, timestamp: float | None) -> list[Detection]:
        """The ground truth captured with the observation at ``timestamp`` (or now)."""
        truth = self.state.truth
        if truth is not None and timestamp is not None and abs(truth[0] - timestamp) < 1e-6:
            return truth[1]
        return self.detections()
