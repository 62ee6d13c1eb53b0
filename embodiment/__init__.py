"""What the robot is and may do: profile, driver protocol, safety envelope, simulator."""

from embodiment.types import ActionResult, Driver, Observation, SafetyDecision

__all__ = ["ActionResult", "Driver", "Observation", "SafetyDecision"]
