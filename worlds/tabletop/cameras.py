"""The tabletop's cameras: frames rendered with PyBullet's tiny renderer from the profile's
camera poses, and their view and projection matrices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worlds.tabletop.parts import (
    SEEN_MIN_PIXELS,
)
from worlds.tabletop.state import SimState


@dataclass(frozen=True)
class KeptFrame:
    """A camera's last frame, what the world looked like then, and the bodies it shows."""

    appearance: tuple[object, ...]
    frame: np.ndarray
    bodies: frozenset[int]


class Cameras:
    """Rendering (a part of :class:`~worlds.tabletop.simulator.TabletopSim`).

    The tiny renderer takes about 40 ms a frame on one core, and many turns move nothing
    (a skill loaded, a memory read, a look). A frame is kept with what it showed: every
    body's id, pose, joint positions and visual shapes. While all of those are the same,
    the same camera gives the same frame (the renderer is deterministic), so it is handed
    out again rather than drawn again, with the bodies it showed (``perception: seen``: a
    kept frame shows them to perception as a fresh one would, after a reset forgot them)."""

    def __init__(self, state: SimState) -> None:
        self.state = state
        self.frame_cache: dict[str, KeptFrame] = {}
        self.camera_cache: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}

    def render(self, camera_name: str) -> np.ndarray:
        """An HxWx3 uint8 RGB frame from a camera declared in the profile."""
        with self.state.lock:
            appearance = self.world_appearance()
            kept = self.frame_cache.get(camera_name)
            if kept is None or kept.appearance != appearance:
                kept = KeptFrame(appearance, *self.draw(camera_name))
                self.frame_cache[camera_name] = kept
            self.state.seen.update(kept.bodies)
            return kept.frame.copy()

    def world_appearance(self) -> tuple[object, ...]:
        """Everything a frame depends on besides the camera: each body's id, base pose,
        joint positions and visual shapes (colours, meshes, scales)."""
        pb, cid = self.state.pb, self.state.cid
        bodies = []
        for index in range(pb.getNumBodies(physicsClientId=cid)):
            body = pb.getBodyUniqueId(index, physicsClientId=cid)
            joints = pb.getNumJoints(body, physicsClientId=cid)
            bodies.append(
                (
                    body,
                    pb.getBasePositionAndOrientation(body, physicsClientId=cid),
                    tuple(
                        state[0]
                        for state in pb.getJointStates(body, range(joints), physicsClientId=cid)
                    )
                    if joints
                    else (),
                    tuple(pb.getVisualShapeData(body, physicsClientId=cid)),
                )
            )
        return tuple(bodies)

    def draw(self, camera_name: str) -> tuple[np.ndarray, frozenset[int]]:
        """A frame drawn now, and the bodies it shows (only counted for ``perception: seen``)."""
        camera = self.state.profile.camera(camera_name)
        pb = self.state.pb
        view, projection = self.camera_matrices(camera_name)
        renderer = pb.ER_BULLET_HARDWARE_OPENGL if self.state.config.gui else pb.ER_TINY_RENDERER
        _, _, rgba, _, segmentation = pb.getCameraImage(
            camera.width,
            camera.height,
            view,
            projection,
            renderer=renderer,
            physicsClientId=self.state.cid,
        )
        shown: frozenset[int] = frozenset()
        if self.state.config.perceives_only_what_was_seen:
            bodies = np.asarray(segmentation, dtype=np.int64).reshape(-1)
            bodies = bodies[bodies >= 0] & 0xFFFFFF  # the low 24 bits are the body id
            ids, counts = np.unique(bodies, return_counts=True)
            shown = frozenset(
                int(i) for i, n in zip(ids, counts, strict=True) if n >= SEEN_MIN_PIXELS
            )
        frame = np.asarray(rgba, dtype=np.uint8).reshape(camera.height, camera.width, 4)
        return np.ascontiguousarray(frame[:, :, :3]), shown

    def camera_matrices(self, camera_name: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """PyBullet's flat (column-major) view and projection matrices of a fixed camera.

        They are published in ``state["cameras"]`` so that ``get_object_image`` can project
        an object's box into the frame and crop it (see ``scene/camera.py``).
        """
        cached = self.camera_cache.get(camera_name)
        if cached is None:
            camera = self.state.profile.camera(camera_name)
            pb = self.state.pb
            eye = self.state.profile.to_world(camera.position, camera.frame)
            target = self.state.profile.to_world(
                self.state.profile.camera_look_at(camera), camera.frame
            )
            view = pb.computeViewMatrix(eye, target, camera.up, physicsClientId=self.state.cid)
            projection = pb.computeProjectionMatrixFOV(
                camera.fov_deg,
                camera.width / camera.height,
                0.02,
                5.0,
                physicsClientId=self.state.cid,
            )
            cached = (tuple(view), tuple(projection))
            self.camera_cache[camera_name] = cached
        return cached
