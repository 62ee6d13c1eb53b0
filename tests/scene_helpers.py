"""Builders for hand-made scenes shared by the scene tests."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from scene import Detection, SceneGraph

TABLE_TOP = 0.72
CUBE = (0.04, 0.04, 0.04)


def det(
    ref: str | None,
    label: str,
    position: tuple[float, float, float],
    size: tuple[float, float, float] | None = CUBE,
    **extra: Any,
) -> Detection:
    return Detection(ref=ref, label=label, position=position, size=size, **extra)


def table(ref: str = "table_1", centre: tuple[float, float] = (0.5, 0.0)) -> Detection:
    """A 1.2 x 0.8 m table whose top is at 0.72 m."""
    return det(
        ref,
        "table",
        (centre[0], centre[1], TABLE_TOP / 2),
        (1.2, 0.8, TABLE_TOP),
        category="surface",
    )


def tray(ref: str = "tray_1", xy: tuple[float, float] = (0.5, 0.2)) -> Detection:
    """A 0.2 x 0.15 x 0.03 m open tray standing on the table."""
    return det(
        ref,
        "tray",
        (xy[0], xy[1], TABLE_TOP + 0.015),
        (0.2, 0.15, 0.03),
        category="container",
        is_open=True,
    )


def cube_on(
    ref: str | None, xy: tuple[float, float], top: float = TABLE_TOP, **extra: Any
) -> Detection:
    """A 4 cm cube resting on a surface whose top is at ``top``."""
    return det(ref, "cube", (xy[0], xy[1], top + 0.02), **extra)


GRIPPER_STATE = {"ee_position": [0.3, 0.0, 1.0], "gripper_open": True, "holding": None}


def build(
    detections: Iterable[Detection], *, t: float = 1.0, state: dict[str, Any] | None = None
) -> SceneGraph:
    graph = SceneGraph()
    graph.apply(list(detections), timestamp=t, state=GRIPPER_STATE if state is None else state)
    return graph


class ListPerception:
    """A perception that reports whatever list it currently holds (a test detector)."""

    def __init__(self, detections: Iterable[Detection] = ()) -> None:
        self.detections = list(detections)
        self.calls = 0
        self.fail: Exception | None = None

    def perceive(self, observation: Any) -> list[Detection]:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return list(self.detections)


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray) -> np.ndarray:
    """An OpenGL view matrix (world -> camera; camera looks along -z), row-major."""
    forward = target - eye
    forward = forward / np.linalg.norm(forward)
    side = np.cross(forward, up)
    side = side / np.linalg.norm(side)
    true_up = np.cross(side, forward)
    view = np.eye(4)
    view[0, :3], view[1, :3], view[2, :3] = side, true_up, -forward
    view[:3, 3] = -view[:3, :3] @ eye
    return view


def perspective(fov_y_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    """An OpenGL perspective projection, row-major."""
    f = 1.0 / np.tan(np.radians(fov_y_deg) / 2)
    return np.array(
        [
            [f / aspect, 0, 0, 0],
            [0, f, 0, 0],
            [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)],
            [0, 0, -1, 0],
        ]
    )


def column_major(matrix: np.ndarray) -> list[float]:
    """Flatten as OpenGL / PyBullet do."""
    return [float(v) for v in matrix.T.reshape(16)]
