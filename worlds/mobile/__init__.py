"""The mobile world: a PyBullet mobile manipulator (``driver: {name: sim.mobile}``).

Importing this package does not import PyBullet; building the driver does.
"""
