"""4x4 transforms: how a matrix is read, and how it moves points and orientations.

Matrix layout rule (the one place it is decided): a **nested 4x4** list or array is read
row-major, as written on paper and as numpy prints it; a **flat list of 16** numbers is read
column-major, the OpenGL convention that PyBullet's ``computeViewMatrix`` and
``computeProjectionMatrixFOV`` return, so a simulator can pass those through unchanged.
A 3x4 ``[R | t]`` gets the ``[0, 0, 0, 1]`` row added.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["as_matrix", "transform_point", "transform_quaternion"]


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
