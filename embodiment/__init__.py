"""What the robot is and may do: profile, driver protocol, safety envelope, action vocabulary.

Nothing here imports the harness: a driver author needs only numpy and pydantic.

Names are imported on first use, so ``import embodiment.errors`` (what the ``harness``
command imports before it knows which subcommand it runs) loads neither numpy nor
pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embodiment.lazy_names import lazy_names

if TYPE_CHECKING:
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

_HOMES: dict[str, str] = {
    **dict.fromkeys(["CheckResult", "DriverReport", "check_driver"], "embodiment.checks"),
    **dict.fromkeys(
        ["DRIVERS", "DriverOptionError", "instantiate_driver", "register_driver"],
        "embodiment.drivers",
    ),
    **dict.fromkeys(
        ["RuleOutcome", "SafetyEnvelope", "SafetyRequest", "SafetyRule"], "embodiment.envelope"
    ),
    **dict.fromkeys(
        ["EmbodimentProfile", "ProfileError", "load_profile", "render_profile"],
        "embodiment.profile",
    ),
    **dict.fromkeys(
        [
            "SAFETY_KINDS",
            "ActionResult",
            "ActionSpec",
            "Driver",
            "Locator",
            "Motion",
            "MotionDescriber",
            "ObjectInfo",
            "Observation",
            "PostCondition",
            "PostConditionChecker",
            "SafetyDecision",
        ],
        "embodiment.types",
    ),
}

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


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
