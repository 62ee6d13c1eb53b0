"""Issue 25, finding 5: a profile that would switch a limit off does not load.

Every limit is finite (``.inf`` passed ``Field(gt=0)``), reading age is bounded (``null``
meant "never stale"), and a width is never checked against a gripper with no opening.
The error names the key.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import ProfileError, builtin_profiles, load_profile
from embodiment.types import Observation

ROOT = Path(__file__).resolve().parents[2]
PANDA = load_profile("panda_tabletop")


def changed(section: str, key: str, value: Any) -> dict[str, Any]:
    data = PANDA.model_dump()
    data[section] = {**data[section], key: value}
    return data


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("limits", "max_speed_m_s", math.inf),
        ("limits", "max_force_n", math.inf),
        ("limits", "max_step_m", math.inf),
        ("limits", "payload_kg", math.inf),
        ("limits", "max_joint_step_rad", math.inf),
        ("limits", "max_speed_m_s", math.nan),
        ("limits", "joint_limits", [[-math.inf, math.inf]] * 7),
        ("safety", "max_reading_age_s", math.inf),
        ("safety", "max_reading_age_s", None),
        ("safety", "keep_out_margin_m", math.inf),
        ("base", "clearance_margin_m", math.inf),
    ],
)
def test_a_profile_that_switches_a_limit_off_does_not_load(
    section: str, key: str, value: Any
) -> None:
    with pytest.raises(ProfileError) as error:
        load_profile(changed(section, key, value))
    assert f"{section}.{key}" in str(error.value)


def test_a_gripper_without_a_maximum_opening_takes_no_width() -> None:
    data = PANDA.model_dump()
    data["grippers"][0]["max_opening_m"] = None
    profile = load_profile(data)
    observation = Observation(
        state={"ee_position": [0.3, 0, 1.1], "joint_positions": [0.0] * 7}, timestamp=time.time()
    )
    decision = SafetyEnvelope(profile).check_call(
        "open", {"width": 3.0}, {"width": "width"}, observation
    )
    assert decision.outcome == "block"
    assert "grippers.0.max_opening_m" in decision.reason


@pytest.mark.parametrize(
    "source",
    [
        *builtin_profiles(),
        *sorted(str(p) for p in (ROOT / "configs" / "embodiments").glob("*.yaml")),
    ],
)
def test_every_shipped_profile_still_loads(source: str) -> None:
    assert load_profile(source).name
