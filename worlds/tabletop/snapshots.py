"""The tabletop world's state saved as plain JSON data and put back, for resume.

A part of :class:`~worlds.tabletop.simulator.TabletopSim` built on the shared
:class:`~worlds.tabletop.state.SimState`: :meth:`WorldSnapshots.take` records every loose
object's pose and velocity, the arm, the fingers, what is held and what the cameras have
shown; :meth:`WorldSnapshots.restore` resets a simulator of the same scene (config and
seed) to it. Kept apart from the simulator module so the lifecycle and the Driver protocol
read in one place and the format of a snapshot in another.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from worlds.tabletop.parts import ARM_JOINTS, FINGER_JOINTS, RESTORE_SETTLE_STEPS, SNAPSHOT_VERSION
from worlds.tabletop.physics import Physics
from worlds.tabletop.state import SimState
from worlds.tabletop.truth import GroundTruth

__all__ = ["WorldSnapshots"]


class WorldSnapshots:
    """Saves and restores the world of one :class:`~worlds.tabletop.state.SimState`."""

    def __init__(self, state: SimState, physics: Physics, truth: GroundTruth) -> None:
        self.state = state
        self.physics = physics
        self.truth = truth

    def take(self) -> dict[str, Any]:
        """The world's state as plain JSON data: every loose object's pose and velocity, the
        arm's joints, the fingers and their command, what is held, what the cameras have
        shown (``perception: seen``), the simulated clock.
        :meth:`restore` puts a simulator with the same scene (config and seed) back into it;
        resume records one after every turn so placed cubes stay placed."""
        pb, cid = self.state.pb, self.state.cid
        with self.state.lock:
            objects: dict[str, Any] = {}
            for ref, body in self.state.bodies.items():
                if body.category != "object":
                    continue  # the table and the tray are fixed (mass 0)
                position, orientation = pb.getBasePositionAndOrientation(
                    body.body, physicsClientId=cid
                )
                linear, angular = pb.getBaseVelocity(body.body, physicsClientId=cid)
                objects[ref] = {
                    "position": list(position),
                    "orientation": list(orientation),
                    "linear": list(linear),
                    "angular": list(angular),
                }
            arm = [
                pb.getJointState(self.state.robot, j, physicsClientId=cid)[0] for j in ARM_JOINTS
            ]
            fingers = [
                pb.getJointState(self.state.robot, j, physicsClientId=cid)[0] for j in FINGER_JOINTS
            ]
            return {
                "version": SNAPSHOT_VERSION,
                "seed": self.state.config.seed,
                "sim_time": self.state.sim_time,
                "yaw": self.state.yaw,
                "objects": objects,
                "arm": arm,
                "fingers": fingers,
                "finger_command": list(self.state.finger_command),
                "held": self.truth.held_ref(),
                "picks": dict(self.state.picks),
                "seen": sorted(
                    r for r, b in self.state.bodies.items() if b.body in self.state.seen
                ),
            }

    def restore(self, state: dict[str, Any]) -> None:
        """Put the world back into a snapshot :meth:`take` made (see there). Raises ValueError for a
        snapshot of another scene (an object this simulator does not have) or version."""
        if state.get("version") != SNAPSHOT_VERSION:
            raise ValueError(
                f"world snapshot version {state.get('version')!r}; this simulator reads "
                f"version {SNAPSHOT_VERSION}"
            )
        objects = state.get("objects") or {}
        unknown = sorted(
            set(objects) - {r for r, b in self.state.bodies.items() if b.category == "object"}
        )
        if unknown:
            raise ValueError(
                f"the snapshot is of another scene: no object {', '.join(unknown)} here "
                f"(objects: {', '.join(self.truth.refs())})"
            )
        pb, cid = self.state.pb, self.state.cid
        with self.state.lock:
            for joint, value in zip(ARM_JOINTS, state["arm"], strict=True):
                pb.resetJointState(self.state.robot, joint, value, physicsClientId=cid)
            for joint, value in zip(FINGER_JOINTS, state["fingers"], strict=True):
                pb.resetJointState(self.state.robot, joint, value, physicsClientId=cid)
            for ref, pose in objects.items():
                body = self.state.bodies[ref].body
                pb.resetBasePositionAndOrientation(
                    body, pose["position"], pose["orientation"], physicsClientId=cid
                )
                pb.resetBaseVelocity(body, pose["linear"], pose["angular"], physicsClientId=cid)
            self.physics.drive_arm(list(state["arm"]))
            each, force = state["finger_command"]
            self.physics.set_fingers(float(each), float(force))
            self.physics.send_targets()
            self.state.sim_time = float(state["sim_time"])
            self.state.steps = round(self.state.sim_time / self.state.dt)
            self.state.yaw = float(state["yaw"])
            self.state.picks = Counter(
                {str(k): int(v) for k, v in (state.get("picks") or {}).items()}
            )
            seen = set(state.get("seen") or [])  # what perception had been shown (``seen``)
            self.state.seen = {b.body for r, b in self.state.bodies.items() if r in seen}
            self.state.motion = "idle"
            self.state.truth = None
            for _ in range(RESTORE_SETTLE_STEPS):  # contacts (the grasp) exist after a step
                pb.stepSimulation(physicsClientId=cid)
