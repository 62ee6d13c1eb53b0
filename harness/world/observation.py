"""Observations as the model reads them: compact state text plus encoded camera frames.

The robot's raw :class:`~embodiment.types.Observation` carries numpy frames and a state
mapping. The model gets the frames downscaled and encoded once (JPEG by default) and the
state as a few lines of text; calibration data that only tools read stays out of it.
"""

from __future__ import annotations

from typing import Any

from embodiment.types import Observation
from harness.config import ObservationConfig
from harness.images import encode_frame
from harness.messages import ImagePart

__all__ = ["CALIBRATION_STATE_KEYS", "encode_observation_frames", "render_observation"]

CALIBRATION_STATE_KEYS = frozenset({"cameras", "frames"})
"""Observation state read by tools (camera calibration, frames), not shown to the model:
a few 4x4 matrices would cost ~100 tokens every turn and tell it nothing."""


def encode_observation_frames(
    observation: Observation, cfg: ObservationConfig, *, limit: int | None = None
) -> list[ImagePart]:
    """Every camera frame of ``observation`` (the first ``limit``), downscaled and encoded
    as configured."""
    return [
        encode_frame(
            frame,
            label=name,
            fmt=cfg.image_format,
            quality=cfg.jpeg_quality,
            max_side=cfg.max_image_side,
        )
        for name, frame in list(observation.images.items())[:limit]
    ]


def render_observation(observation: Observation) -> str:
    """Compact text of an observation's state and safety readings (images go separately)."""
    lines = [f"Observation at t={observation.timestamp:.3f}"]
    if observation.images:
        lines.append("cameras: " + ", ".join(sorted(observation.images)))
    for key, value in sorted(observation.state.items()):
        if key in CALIBRATION_STATE_KEYS:
            continue
        lines.append(f"{key}: {_fmt(value)}")
    if observation.safety:
        readings = ", ".join(
            f"{k}={'missing' if v is None else f'{v:.3f}'}"
            for k, v in sorted(observation.safety.items())
        )
        lines.append(f"safety: {readings}")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)
