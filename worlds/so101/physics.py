"""The SO-101 scene running in MuJoCo: control steps, the step audit, rendering, stop.

One :class:`Physics` owns the ``MjModel``/``MjData`` of a scene and everything that
advances it. The arm is driven the way the real follower is: joint position targets for
the model's six position actuators, changed only at control steps (``control_hz``; the
physics runs at 500 Hz underneath), so a recorded (state, action) pair is exact: the
state measured at the step, the targets held until the next one.

After **every** physics step each step observer gets the end-effector point (the
model's ``gripperframe`` site, world frame = the arm's base frame): the step audit counts
the steps it spent outside the profile's workspace or inside a keep-out zone.

A stop (any thread) is seen at the next control step: the targets are set to the measured
joints (the arm holds where it is) and :class:`Interrupted` unwinds the motion.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from embodiment.recording import ControlLayout, ControlRecorder
from worlds.so101.model import (
    ARM_JOINTS,
    EE_SITE,
    GRIPPER_JOINT,
    PHYSICS_DT,
    SceneObject,
    compile_scene,
)

__all__ = ["JOINT_NAMES", "Interrupted", "Physics"]

JOINT_NAMES = (*ARM_JOINTS, GRIPPER_JOINT)
"""The six joints a control step measures and commands, in the follower's order."""
GRIPPER_OPEN = 1.2
"""Gripper target (rad) for an open jaw: about 10 cm between the pads."""
GRIPPER_CLOSED = -0.1
"""Gripper target when closing: below any cube's width, so the actuator squeezes (its
force is the model's own ``forcerange``)."""


class Interrupted(Exception):
    """A stop arrived during a motion; the arm holds where it was."""


class Physics:
    """A compiled scene and its state (see the module docstring)."""

    def __init__(
        self,
        objects: tuple[SceneObject, ...],
        *,
        control_hz: float,
        camera_size: tuple[int, int],
        real_time_factor: float = 0.0,
        clock_start: float = 0.0,
    ) -> None:
        import mujoco

        self._mj = mujoco
        self.objects = objects
        self.model = compile_scene(objects, camera_size=camera_size)
        self.data = mujoco.MjData(self.model)
        ratio = 1.0 / (control_hz * PHYSICS_DT)
        if abs(ratio - round(ratio)) > 1e-6:
            raise ValueError(
                f"control_hz: {control_hz} does not divide the physics rate {1 / PHYSICS_DT:.0f} Hz"
            )
        self.clock_start = clock_start
        """The driver's clock when this scene began (a recording's time never goes back
        when a reused driver builds the next episode's scene)."""
        self.control_hz = control_hz
        self.substeps = round(ratio)
        self.real_time_factor = real_time_factor
        self.lock = threading.RLock()
        self.stop_event = threading.Event()
        self.observers: list[Callable[[tuple[float, float, float]], None]] = []
        self.recorder: ControlRecorder | None = None
        self.render_cameras: Callable[[Sequence[str]], dict[str, np.ndarray]] | None = None
        self._qpos = [int(self.model.joint(n).qposadr[0]) for n in JOINT_NAMES]
        self._actuators = [int(self.model.actuator(n).id) for n in JOINT_NAMES]
        self._ee = int(self.model.site(EE_SITE).id)
        self._width, self._height = camera_size
        self._renderer: Any = None
        self._pace: tuple[float, float] | None = None

    # ------------------------------------------------------------------ state

    @property
    def time(self) -> float:
        return float(self.data.time)

    def clock(self) -> float:
        """Seconds on the driver's clock: every scene it built, one after the other."""
        return self.clock_start + self.time

    def joints(self) -> list[float]:
        """Measured positions of the six joints (rad)."""
        return [float(self.data.qpos[a]) for a in self._qpos]

    def targets(self) -> list[float]:
        """The position targets in force (rad)."""
        return [float(self.data.ctrl[a]) for a in self._actuators]

    def ee_position(self) -> tuple[float, float, float]:
        p = self.data.site_xpos[self._ee]
        return (float(p[0]), float(p[1]), float(p[2]))

    def reset(self, arm: Sequence[float], gripper: float, settle_s: float = 0.4) -> None:
        """Put the arm at ``arm`` (and the jaw at ``gripper``), the objects where the
        scene lays them, and let everything settle (the audit is restarted by the caller)."""
        mj = self._mj
        with self.lock:
            mj.mj_resetData(self.model, self.data)
            values = [*arm, gripper]
            for address, value in zip(self._qpos, values, strict=True):
                self.data.qpos[address] = value
            for actuator, value in zip(self._actuators, values, strict=True):
                self.data.ctrl[actuator] = value
            mj.mj_forward(self.model, self.data)
            for _ in range(int(settle_s / PHYSICS_DT)):
                mj.mj_step(self.model, self.data)

    def jaw_contacts(self, arm: Sequence[float], gripper: float, ignore: set[str]) -> list[str]:
        """The bodies the jaw would touch with the arm at ``arm`` and the jaw at
        ``gripper``, everything else where it is now (a scratch copy of the state: nothing
        moves), other than those in ``ignore`` and the table."""
        mj, model = self._mj, self.model
        with self.lock:
            scratch = mj.MjData(model)
            scratch.qpos[:] = self.data.qpos
            for address, value in zip(self._qpos, [*arm, gripper], strict=True):
                scratch.qpos[address] = value
            mj.mj_forward(model, scratch)
            jaw = {int(model.body(n).id) for n in ("gripper", "moving_jaw_so101_v1")}
            found = []
            for index in range(scratch.ncon):
                contact = scratch.contact[index]
                bodies = (
                    int(model.geom_bodyid[contact.geom1]),
                    int(model.geom_bodyid[contact.geom2]),
                )
                for mine, other in (bodies, bodies[::-1]):
                    if mine in jaw and other not in jaw and other != 0:
                        name = model.body(other).name
                        if name not in ignore and name not in found:
                            found.append(name)
            return found

    # ------------------------------------------------------------------ motion

    def control_step(self, targets: Sequence[float]) -> None:
        """One control period holding ``targets`` (six joint targets, rad): recorded, then
        ``substeps`` physics steps, each audited."""
        if self.stop_event.is_set():
            self.hold()
            raise Interrupted
        mj = self._mj
        with self.lock:
            for actuator, value in zip(self._actuators, targets, strict=True):
                self.data.ctrl[actuator] = float(value)
            recorder = self.recorder
            if recorder is not None and recorder.active:
                frames = self.render_cameras(recorder.cameras) if self.render_cameras else {}
                recorder.emit(self.clock(), self.joints(), self.targets(), frames)
            for _ in range(self.substeps):
                mj.mj_step(self.model, self.data)
                point = self.ee_position()
                for observer in self.observers:
                    observer(point)
        self._pace_step()

    def hold(self) -> None:
        """Targets := the measured joints: the arm stays where it is."""
        with self.lock:
            for actuator, value in zip(self._actuators, self.joints(), strict=True):
                self.data.ctrl[actuator] = value

    def start_motion(self) -> None:
        self.stop_event.clear()
        self._pace = (time.monotonic(), self.time)

    def _pace_step(self) -> None:
        if self.real_time_factor <= 0 or self._pace is None:
            return
        wall0, sim0 = self._pace
        ahead = (self.time - sim0) / self.real_time_factor - (time.monotonic() - wall0)
        if ahead > 0:
            self.stop_event.wait(ahead)

    # ------------------------------------------------------------------ rendering

    def render(self, camera: str) -> np.ndarray:
        """An HxWx3 uint8 frame from a camera of the scene (``front`` or ``wrist``)."""
        with self.lock:
            if self._renderer is None:
                self._renderer = self._mj.Renderer(self.model, self._height, self._width)
            gl = getattr(self._renderer, "_gl_context", None)
            if gl is not None:
                gl.make_current()
            try:
                self._renderer.update_scene(self.data, camera=camera)
                return np.asarray(self._renderer.render(), dtype=np.uint8).copy()
            finally:
                _release_gl(gl)

    def close(self) -> None:
        with self.lock:
            if self._renderer is not None:
                gl = getattr(self._renderer, "_gl_context", None)
                if gl is not None:
                    gl.make_current()  # close() frees the context from this thread
                self._renderer.close()
                self._renderer = None


def _release_gl(gl: Any) -> None:
    """Make no GL context current on this thread (EGL binds a context to one thread at a
    time; a render on a tool's worker thread after one on the main thread fails with
    EGL_BAD_ACCESS unless the first thread let it go). Other back ends need nothing."""
    module = sys.modules.get(type(gl).__module__) if gl is not None else None
    egl, display = getattr(module, "EGL", None), getattr(module, "EGL_DISPLAY", None)
    if egl is not None and display is not None:
        egl.eglMakeCurrent(display, egl.EGL_NO_SURFACE, egl.EGL_NO_SURFACE, egl.EGL_NO_CONTEXT)


def control_layout(control_hz: float, cameras: tuple[str, ...]) -> ControlLayout:
    """What the SO-101's control steps hold (LeRobot's follower order and units: rad)."""
    return ControlLayout(
        rate_hz=control_hz,
        state_names=tuple(f"{name}.pos" for name in JOINT_NAMES),
        action_names=tuple(f"{name}.pos" for name in JOINT_NAMES),
        state_description="measured positions of the SO-101's five arm joints and its "
        "gripper joint (rad; the published model's calibration: 0 is each joint's mid-range)",
        action_description="the position targets of the same six joints (rad), held by the "
        "model's position actuators until the next step",
        cameras=cameras,
    )
