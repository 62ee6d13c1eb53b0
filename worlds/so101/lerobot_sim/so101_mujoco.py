"""The ``so101_mujoco`` LeRobot robot: the MuJoCo SO-101 in LeRobot's units.

Like the real ``so101_follower`` with ``use_degrees=True``: the five arm motors in
degrees (0 = mid-range, the published model's calibration), the gripper in 0..100 (its
joint range mapped linearly), the goal clipped to the motors' ranges and, when
``max_relative_target`` is set, to that many degrees from the present position; the
action returned is the one applied. Each ``send_action`` holds the goal for one control
period of the simulator (1/25 s of simulated time).

``connect`` ends with ``configure()``, as the real follower's does, and does what that
writes to the motors that the published model does not already have: the gripper motor's
torque limited to half (``gripper_torque_limit``). Without it the simulated jaw squeezes
with the full torque of an arm motor: sent LeRobot's closed target (0), it kept closing
after it met the cube (seed 0 of ``place``: from 0.16 to -0.07 rad as the lift began),
drew the cube about 7 mm off the fingertip pads into the jaws' angled bodies, and the
wedged cube popped out at the carry's first turn. With the follower's half torque the
jaw stops on the cube (0.13 rad) and the pads carry it.
"""

from __future__ import annotations

import math
from typing import Any

from lerobot.robots import Robot

from worlds.so101.lerobot_sim.config_so101_mujoco import So101MujocoConfig
from worlds.so101.physics import JOINT_NAMES

__all__ = ["So101Mujoco"]

GRIPPER_RANGE = (-0.17453, 1.74533)


class So101Mujoco(Robot):
    config_class = So101MujocoConfig
    name = "so101_mujoco"

    def __init__(self, config: So101MujocoConfig) -> None:
        super().__init__(config)
        self.config = config
        self.sim: Any = None

    @property
    def observation_features(self) -> dict[str, Any]:
        features: dict[str, Any] = {f"{m}.pos": float for m in JOINT_NAMES}
        if self.config.cameras_on:
            features.update({"front": (240, 320, 3), "wrist": (240, 320, 3)})
        return features

    @property
    def action_features(self) -> dict[str, Any]:
        return {f"{m}.pos": float for m in JOINT_NAMES}

    @property
    def is_connected(self) -> bool:
        return self.sim is not None

    @property
    def is_calibrated(self) -> bool:
        return True

    def connect(self, calibrate: bool = True) -> None:
        from worlds.so101.driver import So101Sim

        self.sim = So101Sim(seed=self.config.seed, layout=self.config.layout)
        self.sim.connect()
        self.configure()

    def calibrate(self) -> None:
        return None  # the model is calibrated: 0 is each joint's mid-range

    def configure(self) -> None:
        """The follower's motor settings the model lacks: the gripper's torque limit
        (``SOFollower.configure`` writes ``Max_Torque_Limit`` 500 of 1000 to it)."""
        limit = self.config.gripper_torque_limit
        if not 0.0 < limit <= 1.0:
            raise ValueError(f"gripper_torque_limit: {limit} is not in (0, 1]")
        physics = self._physics()
        with physics.lock:
            actuator = physics.model.actuator("gripper").id
            physics.model.actuator_forcerange[actuator] *= limit

    def get_observation(self) -> dict[str, Any]:
        physics = self._physics()
        with physics.lock:
            joints = physics.joints()
            reading: dict[str, Any] = {
                f"{m}.pos": _to_units(m, v) for m, v in zip(JOINT_NAMES, joints, strict=True)
            }
            if self.config.cameras_on:
                reading["front"] = physics.render("front")
                reading["wrist"] = physics.render("wrist")
        return reading

    def send_action(self, action: dict[str, Any]) -> dict[str, Any]:
        physics = self._physics()
        with physics.lock:
            present = {
                m: _to_units(m, v) for m, v in zip(JOINT_NAMES, physics.joints(), strict=True)
            }
            targets = physics.targets()
            applied: dict[str, float] = {}
            for index, motor in enumerate(JOINT_NAMES):
                key = f"{motor}.pos"
                if key not in action:
                    continue
                goal = float(action[key])
                limit = self.config.max_relative_target
                if limit is not None:
                    goal = min(max(goal, present[motor] - limit), present[motor] + limit)
                low, high = _unit_range(physics, motor)
                goal = min(max(goal, low), high)
                applied[key] = goal
                targets[index] = _to_rad(motor, goal)
        physics.control_step(targets)
        return applied

    def disconnect(self) -> None:
        if self.sim is not None:
            self.sim.disconnect()
            self.sim = None

    def _physics(self) -> Any:
        if self.sim is None or self.sim.physics is None:
            raise ConnectionError(f"{self} is not connected")
        return self.sim.physics


def _to_units(motor: str, radians: float) -> float:
    if motor == "gripper":
        low, high = GRIPPER_RANGE
        return (radians - low) / (high - low) * 100.0
    return math.degrees(radians)


def _to_rad(motor: str, value: float) -> float:
    if motor == "gripper":
        low, high = GRIPPER_RANGE
        return low + value / 100.0 * (high - low)
    return math.radians(value)


def _unit_range(physics: Any, motor: str) -> tuple[float, float]:
    if motor == "gripper":
        return 0.0, 100.0
    low, high = physics.model.jnt_range[physics.model.joint(motor).id]
    return math.degrees(float(low)), math.degrees(float(high))
