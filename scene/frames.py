"""Coordinate frames: reading 4x4 transforms from robot state and moving poses into world.

How a matrix is read (nested, flat, 3x4) is decided once, in :mod:`scene.transforms`.

A driver names extra frames in ``Observation.state["frames"]`` as ``{name: world_from_frame}``.
Every calibrated camera (see :mod:`scene.camera`) is also a frame, in the OpenCV convention
(x right, y down, z forward), so a detector reporting positions in the camera frame works.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

from scene.camera import parse_cameras
from scene.perception import Detection
from scene.transforms import as_matrix, transform_point, transform_quaternion

__all__ = [
    "Placed",
    "as_matrix",
    "place_in_world",
    "state_frames",
    "transform_point",
    "transform_quaternion",
]


def state_frames(state: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Frames a driver declared (``state["frames"]``) and its calibrated cameras.

    Returns ``({name: world_from_frame}, {name: problem})``; a malformed entry is reported,
    never guessed.
    """
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
