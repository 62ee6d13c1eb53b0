"""Coordinate frames: reading 4x4 transforms from robot state and moving poses into world.

Matrix layout rule (the one place it is decided): a **nested 4x4** list or array is read
row-major, as written on paper and as numpy prints it; a **flat list of 16** numbers is read
column-major, the OpenGL convention that PyBullet's ``computeViewMatrix`` and
``computeProjectionMatrixFOV`` return, so a simulator can pass those through unchanged.
A 3x4 ``[R | t]`` gets the ``[0, 0, 0, 1]`` row added.

A driver names extra frames in ``Observation.state["frames"]`` as ``{name: world_from_frame}``.
Every calibrated camera (see :mod:`scene.camera`) is also a frame, in the OpenCV convention
(x right, y down, z forward), so a detector reporting positions in the camera frame works.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from scene.perception import Detection

__all__ = [
    "Placed",
    "as_matrix",
    "place_in_world",
    "state_frames",
    "transform_point",
    "transform_quaternion",
]


def as_matrix(value: Any, *, name: str = "matrix") -> np.ndarray:
    """A 4x4 float transform from a nested 4x4, a 3x4, or a flat column-major 16-list."""
    array = np.asarray(value, dtype=float)
    if array.shape == (16,):
        array = array.reshape(4, 4).T
    elif array.shape == (3, 4):
        array = np.vstack([array, [0.0, 0.0, 0.0, 1.0]])
    elif array.shape != (4, 4):
        raise ValueError(
            f"{name}: expected a 4x4 matrix (nested, row-major) or 16 numbers "
            f"(column-major), got shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: contains non-finite numbers")
    return array


def transform_point(matrix: np.ndarray, point: tuple[float, float, float]) -> tuple[float, ...]:
    x, y, z = point
    out = matrix @ np.array([x, y, z, 1.0])
    return (float(out[0]), float(out[1]), float(out[2]))


def _quat_to_matrix(q: tuple[float, float, float, float]) -> np.ndarray:
    x, y, z, w = q
    n = math.sqrt(x * x + y * y + z * z + w * w) or 1.0
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _matrix_to_quat(m: np.ndarray) -> tuple[float, float, float, float]:
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = math.sqrt(trace + 1.0) * 2
        w, x, y, z = (
            0.25 * s,
            (m[2, 1] - m[1, 2]) / s,
            (m[0, 2] - m[2, 0]) / s,
            (m[1, 0] - m[0, 1]) / s,
        )
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
        w, x, y, z = (
            (m[2, 1] - m[1, 2]) / s,
            0.25 * s,
            (m[0, 1] + m[1, 0]) / s,
            (m[0, 2] + m[2, 0]) / s,
        )
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
        w, x, y, z = (
            (m[0, 2] - m[2, 0]) / s,
            (m[0, 1] + m[1, 0]) / s,
            0.25 * s,
            (m[1, 2] + m[2, 1]) / s,
        )
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
        w, x, y, z = (
            (m[1, 0] - m[0, 1]) / s,
            (m[0, 2] + m[2, 0]) / s,
            (m[1, 2] + m[2, 1]) / s,
            0.25 * s,
        )
    return (float(x), float(y), float(z), float(w))


def transform_quaternion(
    matrix: np.ndarray, q: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    """Rotate an orientation (x, y, z, w) given in a frame into the parent frame."""
    return _matrix_to_quat(matrix[:3, :3] @ _quat_to_matrix(q))


def state_frames(state: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Frames a driver declared (``state["frames"]``) and its calibrated cameras.

    Returns ``({name: world_from_frame}, {name: problem})``; a malformed entry is reported,
    never guessed.
    """
    from scene.camera import parse_cameras

    frames: dict[str, np.ndarray] = {"world": np.eye(4)}
    problems: dict[str, str] = {}
    declared = state.get("frames") or {}
    if isinstance(declared, Mapping):
        for name, value in declared.items():
            try:
                frames[str(name)] = as_matrix(value, name=f"frames.{name}")
            except (TypeError, ValueError) as exc:
                problems[str(name)] = str(exc)
    else:
        problems["frames"] = f"state['frames'] must be a mapping, got {type(declared).__name__}"
    cameras, camera_problems = parse_cameras(state)
    problems.update(camera_problems)
    for name, camera in cameras.items():
        frames.setdefault(name, camera.world_from_camera)
    return frames, problems


class Placed(NamedTuple):
    """A usable detection with its pose moved into world (``frame == "world"``) when its
    frame is known, or left in its own frame otherwise."""

    detection: Detection
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] | None
    frame: str


def _finite(values: Iterable[float] | None) -> bool:
    return values is None or all(math.isfinite(v) for v in values)


def place_in_world(
    detections: Iterable[Detection], state: Mapping[str, Any]
) -> tuple[list[Placed], list[str]]:
    """Detections with world poses, and what could not be used (with the reason).

    Detections with non-finite numbers or negative sizes are dropped; ones in an unknown
    frame are kept in that frame (the graph then computes no relations for them).
    """
    frames: dict[str, np.ndarray] | None = None
    placed: list[Placed] = []
    problems: list[str] = []
    for det in detections:
        name = det.ref or det.label
        if not (_finite(det.position) and _finite(det.size) and _finite(det.orientation)):
            problems.append(f"{name}: non-finite position, size or orientation")
            continue
        if det.size is not None and min(det.size) < 0:
            problems.append(f"{name}: negative size {det.size}")
            continue
        position: tuple[float, float, float] = det.position
        orientation, frame = det.orientation, det.frame
        if frame != "world":
            if frames is None:
                frames, frame_problems = state_frames(state)
                problems.extend(f"frame {k}: {v}" for k, v in frame_problems.items())
            matrix = frames.get(frame)
            if matrix is not None:
                position = transform_point(matrix, position)  # type: ignore[assignment]
                if orientation is not None:
                    orientation = transform_quaternion(matrix, orientation)
                frame = "world"
            else:
                problems.append(
                    f"{name}: frame {det.frame!r} is unknown; kept in that frame, without relations"
                )
        placed.append(Placed(det, position, orientation, frame))
    return placed, problems
