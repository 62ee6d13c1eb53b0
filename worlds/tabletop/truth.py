"""The tabletop's ground truth: where each body is, what the gripper holds, what rests on
what, and the detections perception and the evaluator read (never the model directly).
"""

from __future__ import annotations

from typing import Any

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


class GroundTruth:
    """Ground-truth queries (mixed into :class:`~worlds.tabletop.simulator.TabletopSim`)."""

    def refs(self) -> list[str]:
        return list(self._bodies)

    def body(self, ref: str) -> Body:
        return self._bodies[ref]

    def pose(self, ref: str) -> tuple[tuple[float, float, float], float]:
        """(centre position, yaw) of an object."""
        body = self._bodies[ref]
        with self._lock:
            position, orientation = self._pb.getBasePositionAndOrientation(
                body.body, physicsClientId=self._cid
            )
        if body.category == "container":
            position = (position[0], position[1], position[2] + body.size[2] / 2)
        yaw = self._pb.getEulerFromQuaternion(orientation)[2]
        return tuple(position), yaw  # type: ignore[return-value]

    def speed_of(self, ref: str) -> float:
        with self._lock:
            linear, _ = self._pb.getBaseVelocity(self._bodies[ref].body, physicsClientId=self._cid)
        return float(np.linalg.norm(linear))

    def held_ref(self) -> str | None:
        """The object both fingers touch, if any."""
        with self._lock:
            for ref, body in self._bodies.items():
                if body.category != "object":
                    continue
                touching = [
                    bool(
                        self._pb.getContactPoints(
                            self._robot, body.body, linkIndexA=finger, physicsClientId=self._cid
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
        poses = poses if poses is not None else self._poses()
        body = self._bodies[ref]
        (x, y, z), _ = poses[ref]
        bottom = z - body.size[2] / 2
        for other_ref, other in self._bodies.items():
            if other_ref == ref or other.category != "container":
                continue
            (cx, cy, cz), _ = poses[other_ref]
            half_x, half_y = other.size[0] / 2, other.size[1] / 2
            if abs(x - cx) <= half_x and abs(y - cy) <= half_y and bottom <= cz + other.size[2] / 2:
                return ("inside", other_ref)
        for other_ref, other in self._bodies.items():
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

    def _poses(self) -> dict[str, tuple[tuple[float, float, float], float]]:
        return {ref: self.pose(ref) for ref in self._bodies}

    def ee_position(self) -> tuple[float, float, float]:
        with self._lock:
            state = self._pb.getLinkState(
                self._robot, EE_LINK, computeForwardKinematics=True, physicsClientId=self._cid
            )
        return tuple(float(v) for v in state[4])  # type: ignore[return-value]

    def gripper_width(self) -> float:
        with self._lock:
            return float(
                sum(
                    self._pb.getJointState(self._robot, j, physicsClientId=self._cid)[0]
                    for j in FINGER_JOINTS
                )
            )

    def home_position(self) -> tuple[float, float, float]:
        gripper = self.profile.grippers[0]
        return self.profile.to_world(gripper.initial_position, gripper.frame)

    def detections(self) -> list[Detection]:
        """Ground truth as :class:`~scene.perception.Detection` objects."""
        held = self.held_ref()
        poses = self._poses()
        found: list[Detection] = []
        seen_only = self.config.perceives_only_what_was_seen
        for ref, body in self._bodies.items():
            if seen_only and body.body not in self._seen and ref != held:
                continue
            position, _ = poses[ref]
            with self._lock:
                _, orientation = self._pb.getBasePositionAndOrientation(
                    body.body, physicsClientId=self._cid
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
        base = self.profile.frame_pose_in_world("base")[0]
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

    def latest_detections(self, timestamp: float | None) -> list[Detection]:
        """The ground truth captured with the observation at ``timestamp`` (or now)."""
        truth = self._truth
        if truth is not None and timestamp is not None and abs(truth[0] - timestamp) < 1e-6:
            return truth[1]
        return self.detections()


class GroundTruthPerception:
    """The simulator's ground truth through the scene package's Perception protocol."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim

    def perceive(self, observation: Any) -> list[Detection]:
        timestamp = getattr(observation, "timestamp", None)
        return self.sim.latest_detections(timestamp)
