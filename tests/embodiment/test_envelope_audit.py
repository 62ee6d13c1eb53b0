"""``harness check`` says, per physical tool, how the envelope checks its motion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from harness import Harness, HarnessConfig
from harness.assembly.checks import run_checks
from harness.providers import ScriptedModel
from harness.world.physical import physical_tools
from worlds.fake import FakeRobot

ROOT = Path(__file__).resolve().parents[2]
MOBILE_FILE = ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml"
MOBILE = load_profile(MOBILE_FILE)


def motion_lines(profile_source: Any, **robot: Any) -> dict[str, tuple[str, str]]:
    profile = load_profile(profile_source)
    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    driver = FakeRobot(profile, **robot)
    with Harness(
        config,
        model=ScriptedModel([]),
        driver=driver,
        physical_tools=physical_tools(driver),
        safety=SafetyEnvelope(profile, locator=driver, observe=driver.observe),
    ) as harness:
        return {
            r.subject.removeprefix("motion "): (r.status, r.detail)
            for r in run_checks(harness)
            if r.subject.startswith("motion ")
        }


def test_each_physical_tool_says_how_its_motion_is_checked() -> None:
    lines = motion_lines(MOBILE_FILE)
    assert lines["move_joints"][0] == "ok" and "forward kinematics" in lines["move_joints"][1]
    assert "xarm6_robot.urdf" in lines["move_joints"][1]
    assert lines["move_base"][0] == "ok" and "base sweep" in lines["move_base"][1]
    assert lines["rotate_base"][0] == "ok" and "arc" in lines["rotate_base"][1]
    assert lines["navigate_to"][0] == "warn" and "not checked" in lines["navigate_to"][1]
    assert "described waypoints" in lines["move_to"][1]
    assert "described waypoints" in lines["home"][1]
    assert lines["close_gripper"] == ("ok", "no motion to check: force within the profile's limits")


def test_the_assumptions_and_the_joint_limits_only_warning_are_shown() -> None:
    lines = motion_lines(MOBILE_FILE)
    assert "straight line" in lines["move_to"][1]  # when the driver describes none
    assert "box between the gripper" in lines["pick"][1]
    assert "not checked" in lines["home"][1]
    data = MOBILE.model_dump()
    data["kinematics"] = None
    data["safety"]["joint_limits_only"] = True
    limits_only = motion_lines(data)
    assert limits_only["move_joints"][0] == "warn"
    assert "joint_limits_only" in limits_only["move_joints"][1]
    data["safety"]["joint_limits_only"] = False
    assert "blocked" in motion_lines(data)["move_joints"][1]
