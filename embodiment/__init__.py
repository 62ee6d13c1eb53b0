"""What the robot is and may do: profile, driver protocol, safety envelope, action vocabulary.

Nothing here imports the harness: a driver author needs only numpy and pydantic.
"""

from embodiment.checks import CheckResult, DriverReport, check_driver
from embodiment.drivers import DRIVERS, DriverOptionError, instantiate_driver, register_driver
from embodiment.envelope import RuleOutcome, SafetyEnvelope, SafetyRequest, SafetyRule
from embodiment.profile import EmbodimentProfile, ProfileError, load_profile, render_profile
from embodiment.types import (
    SAFETY_KINDS,
    ActionResult,
    ActionSpec,
    Driver,
    Locator,
    Motion,
    MotionDescriber,
    ObjectInfo,
    Observation,
    PostCondition,
    PostConditionChecker,
    SafetyDecision,
)

__all__ = [
    "DRIVERS",
    "SAFETY_KINDS",
    "ActionResult",
    "ActionSpec",
    "CheckResult",
    "Driver",
    "DriverOptionError",
    "DriverReport",
    "EmbodimentProfile",
    "Locator",
    "Motion",
    "MotionDescriber",
    "ObjectInfo",
    "Observation",
    "PostCondition",
    "PostConditionChecker",
    "ProfileError",
    "RuleOutcome",
    "SafetyDecision",
    "SafetyEnvelope",
    "SafetyRequest",
    "SafetyRule",
    "check_driver",
    "instantiate_driver",
    "load_profile",
    "register_driver",
    "render_profile",
]
