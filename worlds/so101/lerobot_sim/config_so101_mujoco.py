"""The ``so101_mujoco`` robot's config, registered with LeRobot's ``RobotConfig``."""

from __future__ import annotations

from dataclasses import dataclass

from lerobot.robots import RobotConfig


@RobotConfig.register_subclass("so101_mujoco")
@dataclass
class So101MujocoConfig(RobotConfig):
    """A simulated SO-101 follower: the scene's ``layout`` and ``seed``, and the follower's
    own safety knob, ``max_relative_target`` (degrees per action, as on the real arm)."""

    seed: int = 0
    layout: str = "place"
    max_relative_target: float | None = None
    cameras_on: bool = True
    gripper_torque_limit: float = 0.5
    """The gripper motor's torque as a fraction of the model's (the published
    ``forcerange``, the STS3215's): the real follower's ``configure()`` writes
    ``Max_Torque_Limit`` 500 of 1000 to its gripper motor ("to avoid burnout"), so the
    real jaw squeezes with half the torque of the arm's motors."""
