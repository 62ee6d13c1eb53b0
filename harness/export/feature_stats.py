"""Statistics of a dataset's features, in the shape LeRobot's normalisers read.

Every numeric feature gets ``min``, ``max``, ``mean``, ``std``, ``count`` and the quantiles
``q01 q10 q50 q90 q99``, one value per component (a 9-joint state: 9 values each, ``count``
one); a camera gets them per colour channel of pixels scaled to [0, 1], shaped
``(3, 1, 1)`` as LeRobot shapes image statistics. They are computed exactly over the
values given (the whole dataset for ``meta/stats.json``, one episode for its row).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["QUANTILES", "image_stats", "pixel_sample", "vector_stats"]

QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}

PIXEL_STRIDE = 4
"""Every PIXEL_STRIDE-th row and column of a frame enters the image statistics."""


def vector_stats(values: np.ndarray) -> dict[str, Any]:
    """Statistics of ``values`` (n,) or (n, d), per component, as JSON-able lists."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if len(array) == 0:
        raise ValueError("statistics of no values")
    stats: dict[str, Any] = {
        "min": array.min(axis=0).tolist(),
        "max": array.max(axis=0).tolist(),
        "mean": array.mean(axis=0).tolist(),
        "std": array.std(axis=0).tolist(),
        "count": [len(array)],
    }
    for key, q in QUANTILES.items():
        stats[key] = np.quantile(array, q, axis=0).tolist()
    return stats


def pixel_sample(frame: np.ndarray) -> np.ndarray:
    """The pixels of an HxWx3 uint8 frame that enter the image statistics, (k, 3) uint8."""
    return np.asarray(frame)[::PIXEL_STRIDE, ::PIXEL_STRIDE, :3].reshape(-1, 3)


def image_stats(pixels: np.ndarray, frames: int) -> dict[str, Any]:
    """Per-channel statistics of sampled ``pixels`` ((k, 3) uint8, from :func:`pixel_sample`
    of ``frames`` frames), scaled to [0, 1] and shaped (3, 1, 1); ``count`` is frames."""
    flat = vector_stats(np.asarray(pixels, dtype=np.float64) / 255.0)
    shaped: dict[str, Any] = {
        key: [[[value]] for value in values] for key, values in flat.items() if key != "count"
    }
    shaped["count"] = [frames]
    return shaped
