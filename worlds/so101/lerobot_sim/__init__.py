"""A LeRobot ``Robot`` backed by the MuJoCo SO-101 (``type: so101_mujoco``): LeRobot's
own API (``connect``, ``get_observation``, ``send_action``, ``disconnect``) over the
simulated arm, the way LeRobot's tests use mock robots, so the ``lerobot.robot`` driver
is tested against LeRobot itself without hardware. Importing this package registers the
config type with LeRobot (it needs LeRobot: Python >= 3.12)."""

from worlds.so101.lerobot_sim.config_so101_mujoco import So101MujocoConfig
from worlds.so101.lerobot_sim.so101_mujoco import So101Mujoco

__all__ = ["So101Mujoco", "So101MujocoConfig"]
