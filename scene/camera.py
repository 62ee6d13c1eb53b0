"""Camera calibration from robot state, projection of object boxes, and image crops.

A driver that wants ``get_object_image`` to crop (rather than show the whole frame) puts
each camera's calibration in ``Observation.state["cameras"][name]``, ``name`` matching the
key of its frame in ``Observation.images``, in one of two forms:

- **OpenGL / PyBullet**: ``{"view": V, "projection": P}``; V maps world to camera
  (camera looks along -z, y up), P is the clip-space projection. PyBullet's flat
  16-number matrices can be passed as they are (see :mod:`scene.transforms` for the rule).
- **Pinhole / OpenCV**: ``{"fx", "fy", "cx", "cy"}`` (or ``"K"``: 3x3 or 9 numbers
  row-major) plus the camera pose, either ``"world_from_camera"`` (alias ``"pose"``) or
  ``"camera_from_world"`` (alias ``"extrinsics"``); the camera looks along +z, x right,
  y down. Optional ``"width"``/``"height"`` give the resolution the intrinsics belong to
  (pixels are rescaled when the frame differs).

No calibration means no projection: callers fall back to the whole frame and say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from scene.transforms import as_matrix

__all__ = [
    "CameraCalibration",
    "PixelBox",
    "crop_frame",
    "parse_cameras",
    "project_box",
]

PixelBox = tuple[int, int, int, int]
"""(x0, y0, x1, y1): columns x0..x1-1 and rows y0..y1-1 of a frame."""

_GL_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])


@dataclass(frozen=True)
class CameraCalibration:
    """One camera's intrinsics and pose, in either convention."""

    name: str
    kind: Literal["opengl", "pinhole"]
    view: np.ndarray | None = None
    projection: np.ndarray | None = None
    intrinsics: np.ndarray | None = None
    camera_from_world: np.ndarray | None = None
    width: int | None = None
    height: int | None = None

    @property
    def world_from_camera(self) -> np.ndarray:
        """The camera pose in world, in the OpenCV convention (x right, y down, z forward)."""
        if self.kind == "opengl":
            assert self.view is not None
            return np.linalg.inv(self.view) @ _GL_TO_CV
        assert self.camera_from_world is not None
        return np.linalg.inv(self.camera_from_world)

    def project(self, points: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates (N, 2) of world points (N, 3) in a ``width`` x ``height``
        frame, and a mask of the points in front of the camera."""
        homogeneous = np.hstack([points, np.ones((len(points), 1))])
        if self.kind == "opengl":
            assert self.view is not None and self.projection is not None
            eye = homogeneous @ self.view.T
            clip = eye @ self.projection.T
            w = np.where(np.abs(clip[:, 3]) < 1e-12, 1e-12, clip[:, 3])
            ndc = clip[:, :3] / w[:, None]
            u = (ndc[:, 0] + 1.0) / 2.0 * width
            v = (1.0 - ndc[:, 1]) / 2.0 * height
            return np.stack([u, v], axis=1), eye[:, 2] < 0
        assert self.intrinsics is not None and self.camera_from_world is not None
        cam = homogeneous @ self.camera_from_world.T
        z = np.where(np.abs(cam[:, 2]) < 1e-12, 1e-12, cam[:, 2])
        k = self.intrinsics
        u = k[0, 0] * cam[:, 0] / z + k[0, 1] * cam[:, 1] / z + k[0, 2]
        v = k[1, 1] * cam[:, 1] / z + k[1, 2]
        if self.width and self.height:
            u = u * width / self.width
            v = v * height / self.height
        return np.stack([u, v], axis=1), cam[:, 2] > 1e-6


def _parse_one(name: str, spec: Any) -> CameraCalibration:
    if not isinstance(spec, Mapping):
        raise ValueError(f"expected a mapping, got {type(spec).__name__}")
    width = int(spec["width"]) if spec.get("width") else None
    height = int(spec["height"]) if spec.get("height") else None
    if "view" in spec or "projection" in spec:
        if "view" not in spec or "projection" not in spec:
            raise ValueError("an OpenGL calibration needs both 'view' and 'projection'")
        return CameraCalibration(
            name=name,
            kind="opengl",
            view=as_matrix(spec["view"], name=f"cameras.{name}.view"),
            projection=as_matrix(spec["projection"], name=f"cameras.{name}.projection"),
            width=width,
            height=height,
        )
    if "K" in spec:
        k = np.asarray(spec["K"], dtype=float)
        if k.shape == (9,):
            k = k.reshape(3, 3)
        if k.shape != (3, 3):
            raise ValueError(f"'K' must be 3x3 or 9 numbers, got shape {k.shape}")
    elif all(key in spec for key in ("fx", "fy", "cx", "cy")):
        fx, fy, cx, cy = (float(spec[key]) for key in ("fx", "fy", "cx", "cy"))
        k = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
    else:
        raise ValueError(
            "expected {'view', 'projection'} (OpenGL) or fx/fy/cx/cy or K plus a pose (pinhole)"
        )
    if not np.all(np.isfinite(k)) or k[0, 0] <= 0 or k[1, 1] <= 0:
        raise ValueError("focal lengths must be positive and finite")
    for key in ("world_from_camera", "pose"):
        if key in spec:
            pose = as_matrix(spec[key], name=f"cameras.{name}.{key}")
            extrinsics = np.linalg.inv(pose)
            break
    else:
        for key in ("camera_from_world", "extrinsics"):
            if key in spec:
                extrinsics = as_matrix(spec[key], name=f"cameras.{name}.{key}")
                break
        else:
            raise ValueError(
                "a pinhole calibration needs 'world_from_camera' or 'camera_from_world'"
            )
    return CameraCalibration(
        name=name,
        kind="pinhole",
        intrinsics=k,
        camera_from_world=extrinsics,
        width=width,
        height=height,
    )


def parse_cameras(
    state: Mapping[str, Any],
) -> tuple[dict[str, CameraCalibration], dict[str, str]]:
    """Calibrations from ``state["cameras"]``: ``({name: calibration}, {name: problem})``."""
    specs = state.get("cameras") or {}
    if not isinstance(specs, Mapping):
        return {}, {"cameras": f"state['cameras'] must be a mapping, got {type(specs).__name__}"}
    cameras: dict[str, CameraCalibration] = {}
    problems: dict[str, str] = {}
    for name, spec in specs.items():
        try:
            cameras[str(name)] = _parse_one(str(name), spec)
        except (TypeError, ValueError, KeyError, np.linalg.LinAlgError) as exc:
            problems[str(name)] = f"camera {name!r}: {exc}"
    return cameras, problems


def project_box(
    camera: CameraCalibration,
    lo: tuple[float, float, float],
    hi: tuple[float, float, float],
    width: int,
    height: int,
    *,
    pad_fraction: float = 0.25,
    min_pad_px: int = 12,
) -> PixelBox | None:
    """The padded pixel rectangle around a world box's projection, clipped to the frame.

    None when the box is behind the camera or entirely outside the frame.
    """
    corners = np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    uv, in_front = camera.project(corners, width, height)
    if not in_front.any():
        return None
    uv = uv[in_front]
    u0, v0 = uv.min(axis=0)
    u1, v1 = uv.max(axis=0)
    pad = max(float(min_pad_px), pad_fraction * max(u1 - u0, v1 - v0))
    x0 = max(0, math.floor(u0 - pad))
    y0 = max(0, math.floor(v0 - pad))
    x1 = min(width, math.ceil(u1 + pad))
    y1 = min(height, math.ceil(v1 + pad))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    return (x0, y0, x1, y1)


def crop_frame(frame: np.ndarray, box: PixelBox, *, min_side: int = 128) -> np.ndarray:
    """Cut ``box`` out of an HxWxC frame; small crops are enlarged (nearest neighbour, by a
    whole factor) so a model can see them, never beyond 1024 pixels a side."""
    x0, y0, x1, y1 = box
    crop = np.ascontiguousarray(frame[y0:y1, x0:x1])
    short, long = min(crop.shape[:2]), max(crop.shape[:2])
    if short == 0:
        return crop
    factor = min(math.ceil(min_side / short), max(1, 1024 // long))
    if factor > 1:
        crop = np.repeat(np.repeat(crop, factor, axis=0), factor, axis=1)
    return crop
