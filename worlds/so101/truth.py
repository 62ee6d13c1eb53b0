"""The SO-101 scene's ground truth, read from MuJoCo's state: where each cube is, what
the jaw holds (contacts), what rests in or on what, and the detections the scene graph
and the task check read (never the model directly)."""

from __future__ import annotations

import math

import numpy as np

from embodiment.geometry import rounded_point
from scene.perception import Detection
from worlds.so101.model import BOX_INNER, BOX_WALL, CUBE_HALF
from worlds.so101.physics import Physics

__all__ = ["GroundTruth"]

FIXED_JAW_BODY = "gripper"
MOVING_JAW_BODY = "moving_jaw_so101_v1"
RESTING_M = 0.006
"""How close a cube's bottom must be to what it rests on."""


class GroundTruth:
    """Queries on a :class:`~worlds.so101.physics.Physics` (the caller may hold its lock)."""

    def __init__(self, physics: Physics) -> None:
        self.physics = physics
        model = physics.model
        self._objects = {o.ref: o for o in physics.objects}
        self._body = {ref: int(model.body(ref).id) for ref in self._objects}
        self._geoms_of: dict[int, str] = {}
        for ref, body in self._body.items():
            for geom in range(model.ngeom):
                if int(model.geom_bodyid[geom]) == body:
                    self._geoms_of[geom] = ref
        self._fixed = int(model.body(FIXED_JAW_BODY).id)
        self._moving = int(model.body(MOVING_JAW_BODY).id)

    def refs(self) -> list[str]:
        return list(self._objects)

    def kind(self, ref: str) -> str:
        return self._objects[ref].kind

    def pose(self, ref: str) -> tuple[tuple[float, float, float], float]:
        """(centre, yaw) of a cube; the box's floor centre."""
        data = self.physics.data
        body = self._body[ref]
        p = data.xpos[body]
        m = data.xmat[body].reshape(3, 3)
        return (float(p[0]), float(p[1]), float(p[2])), math.atan2(float(m[1, 0]), float(m[0, 0]))

    def speed_of(self, ref: str) -> float:
        import mujoco

        velocity = np.zeros(6)
        mujoco.mj_objectVelocity(
            self.physics.model,
            self.physics.data,
            mujoco.mjtObj.mjOBJ_BODY,
            self._body[ref],
            velocity,
            0,
        )
        return float(np.linalg.norm(velocity[3:]))

    def held_ref(self) -> str | None:
        """The cube both jaws touch, if any."""
        data, model = self.physics.data, self.physics.model
        touches: dict[str, set[str]] = {}
        for index in range(data.ncon):
            contact = data.contact[index]
            for mine, other in ((contact.geom1, contact.geom2), (contact.geom2, contact.geom1)):
                ref = self._geoms_of.get(int(mine))
                if ref is None or self._objects[ref].kind != "cube":
                    continue
                body = int(model.geom_bodyid[int(other)])
                if body == self._fixed:
                    touches.setdefault(ref, set()).add("fixed")
                elif body == self._moving:
                    touches.setdefault(ref, set()).add("moving")
        both = [ref for ref, sides in touches.items() if sides == {"fixed", "moving"}]
        return both[0] if both else None

    def support_of(self, ref: str) -> tuple[str, str] | None:
        """("inside", "box_1"), ("on", "red_cube_1"), ("on", "table_1"), or None (held,
        falling, tipped over an edge)."""
        (x, y, z), _ = self.pose(ref)
        bottom = z - CUBE_HALF
        for other, item in self._objects.items():
            if item.kind != "box":
                continue
            (bx, by, _), _ = self.pose(other)
            inside = abs(x - bx) <= BOX_INNER[0] / 2 and abs(y - by) <= BOX_INNER[1] / 2
            if inside and bottom <= BOX_WALL[1]:
                return ("inside", other)
        for other, item in self._objects.items():
            if other == ref or item.kind != "cube":
                continue
            (ox, oy, oz), _ = self.pose(other)
            over = abs(x - ox) <= CUBE_HALF * 1.2 and abs(y - oy) <= CUBE_HALF * 1.2
            if over and abs(bottom - (oz + CUBE_HALF)) <= RESTING_M:
                return ("on", other)
        if abs(bottom) <= RESTING_M:
            return ("on", "table_1")
        return None

    def gripper_opening(self) -> float:
        """The jaw joint (rad): -0.17 closed on nothing, about 1.2 open."""
        return self.physics.joints()[5]

    def detections(self) -> list[Detection]:
        held = self.held_ref()
        found: list[Detection] = []
        for ref, item in self._objects.items():
            (x, y, z), yaw = self.pose(ref)
            if item.kind == "box":
                found.append(
                    Detection(
                        ref=ref,
                        label="box",
                        category="container",
                        color=item.color,
                        position=rounded_point((x, y, BOX_WALL[1] / 2)),
                        size=(
                            BOX_INNER[0] + 2 * BOX_WALL[0],
                            BOX_INNER[1] + 2 * BOX_WALL[0],
                            BOX_WALL[1],
                        ),
                        is_open=True,
                        provenance="ground_truth",
                    )
                )
                continue
            relations: list[tuple[str, str]] = []
            support = None if ref == held else self.support_of(ref)
            if support is not None:
                relations.append(support)
            half = math.sin(yaw / 2), math.cos(yaw / 2)
            found.append(
                Detection(
                    ref=ref,
                    label=f"{item.color} cube",
                    category="object",
                    color=item.color,
                    position=rounded_point((x, y, z)),
                    orientation=(0.0, 0.0, round(half[0], 4), round(half[1], 4)),
                    size=(2 * CUBE_HALF,) * 3,
                    provenance="ground_truth",
                    relations=relations,
                    attributes={"mass_kg": 0.03},
                )
            )
        found.append(
            Detection(
                ref="table_1",
                label="table",
                category="surface",
                position=(0.22, 0.0, 0.0),
                size=(0.6, 0.8, 0.0),
                provenance="ground_truth",
            )
        )
        opening = self.gripper_opening()
        found.append(
            Detection(
                ref="gripper",
                label="gripper",
                category="robot_part",
                position=rounded_point(self.physics.ee_position()),
                size=(0.03, 0.05, 0.1),
                provenance="ground_truth",
                attributes={
                    "state": "open" if opening > 0.6 else "closed",
                    "opening_rad": round(opening, 3),
                    "holding": held,
                },
                relations=[("holding", held)] if held else [],
            )
        )
        found.append(
            Detection(
                ref="robot",
                label="so101 arm",
                category="robot",
                position=(0.0, 0.0, 0.0),
                size=(0.1, 0.1, 0.12),
                provenance="ground_truth",
            )
        )
        return found
