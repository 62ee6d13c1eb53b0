"""Driver registry, check_driver on a fake driver (and broken ones), physical tools."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from embodiment.checks import check_driver
from embodiment.drivers import DRIVERS, DriverOptionError, register_driver
from embodiment.profile import load_profile
from embodiment.types import ActionResult, ActionSpec
from harness import Harness, HarnessConfig
from harness.errors import ConfigError
from harness.providers import ScriptedModel, reply
from harness.world.physical import action_output, physical_tools
from worlds import build_driver
from worlds.fake import FakeRobot

ROOT = Path(__file__).resolve().parents[2]
PANDA = load_profile("panda_tabletop")
MOBILE = load_profile(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml")


def test_registry_builds_by_name_and_names_bad_options() -> None:
    robot = build_driver("fake", profile=PANDA, options={"step_m": 0.02})
    assert isinstance(robot, FakeRobot) and robot.config.step_m == 0.02
    with pytest.raises(DriverOptionError) as unknown:
        build_driver("ros2.arm", profile=PANDA)
    assert unknown.value.key == "driver.name" and "fake" in str(unknown.value)
    with pytest.raises(DriverOptionError) as bad:
        build_driver("fake", profile=PANDA, options={"step_m": -1, "colour": "red"})
    assert "driver.step_m" in str(bad.value) and "driver.colour: unknown option" in str(bad.value)


def test_registered_driver_is_used_by_from_config() -> None:
    register_driver("test.fake", lambda *, profile, **options: FakeRobot(profile, **options))
    try:
        config = HarnessConfig.model_validate(
            {
                "embodiment": "panda_tabletop",
                "driver": {"name": "test.fake", "step_m": 0.05},
                "run": {"store": None},
                "memory": {"enabled": False},
                "evaluation": {"required_tools": ["pick", "place"]},
            }
        )
        with Harness.from_config(config, model=ScriptedModel([reply("ok")])) as h:
            assert isinstance(h.driver, FakeRobot) and h.driver.connected
            assert h.safety is not None and h.evaluator is not None
            physical = [t.name for t in h.tools if t.physical]
            assert {"move_to", "pick", "place", "home"} <= set(physical)
            assert h.tools.get("move_to").safety["x"] == "position.x"
            driver = h.driver
        assert not driver.connected  # closed with the harness
    finally:
        DRIVERS.pop("test.fake")


def test_bad_driver_option_is_a_config_error_with_the_key() -> None:
    config = HarnessConfig.model_validate(
        {"driver": {"name": "fake", "stepm": 1}, "run": {"store": None}}
    )
    with pytest.raises(ConfigError) as info:
        Harness.from_config(config, model=ScriptedModel([]))
    assert info.value.key == "driver.stepm"


def test_check_driver_passes_on_the_fake_robot() -> None:
    report = check_driver(FakeRobot(PANDA, step_s=0.002), PANDA)
    assert report.ok, report.render()
    assert report.status("stop_interrupts_motion") == "pass"
    assert report.status("cameras_match_profile") == "pass"
    mobile = check_driver(FakeRobot(MOBILE), MOBILE)
    assert mobile.ok, mobile.render()
    assert "clearance.forward" in next(
        r.detail for r in mobile.results if r.name == "safety_readings"
    )


def test_check_driver_names_what_is_wrong() -> None:
    wrong_camera = check_driver(FakeRobot(PANDA, camera_shape=(100, 100)), PANDA, motion=False)
    assert wrong_camera.status("cameras_match_profile") == "fail"
    no_clearance = check_driver(FakeRobot(MOBILE, drop_clearance=True), MOBILE, motion=False)
    assert no_clearance.status("safety_readings") == "fail"
    assert not no_clearance.ok

    class IgnoresStop(FakeRobot):
        def stop(self) -> None:
            self.stops += 1  # never interrupts

    stubborn = check_driver(IgnoresStop(PANDA, step_s=0.005), PANDA)
    assert stubborn.status("stop_interrupts_motion") == "warn"

    class Incomplete:
        def connect(self) -> None: ...

    assert check_driver(Incomplete(), PANDA).status("protocol") == "fail"


def test_physical_tools_are_typed_from_capabilities() -> None:
    robot = FakeRobot(PANDA)
    tools = {tool.name: tool for tool in physical_tools(robot)}
    move = tools["move_to"]
    assert move.physical and move.safety == {
        "x": "position.x",
        "y": "position.y",
        "z": "position.z",
        "speed": "speed",
    }
    assert set(move.parameters["required"]) == {"x", "y", "z"}
    assert "Checked afterwards" in move.description
    with pytest.raises(ValueError, match="declares no safety kinds"):
        ActionSpec(name="wave", description="wave", arguments=move.input_model)


def test_action_results_become_tool_outputs() -> None:
    frame = np.zeros((24, 32, 3), dtype=np.uint8)
    ok = action_output(
        "look", ActionResult(ok=True, message="fresh", data={"images": {"front": frame}, "n": 1})
    )
    assert not ok.is_error and ok.images[0].label == "front" and ok.images[0].width == 32
    assert '"n": 1' in ok.text
    failed = action_output("pick", ActionResult(ok=False, message="no such cube", applied={"a": 1}))
    assert failed.is_error and failed.error_kind == "action_failed" and failed.applied == {"a": 1}
    stopped = action_output("move_to", ActionResult(ok=False, interrupted=True, message="stopped"))
    assert stopped.error_kind == "interrupted"


def test_move_to_through_the_loop_with_a_given_driver() -> None:
    robot = FakeRobot(PANDA)
    config = HarnessConfig.model_validate(
        {"driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    from harness.providers import call

    model = ScriptedModel([call("move_to", x=0.5, y=0.1, z=0.9), reply("moved")])
    with Harness.from_config(config, model=model, driver=robot) as h:
        result = h.run("move the gripper")
    assert result.ok
    assert robot.commands == [
        ("move_to", {"x": 0.5, "y": 0.1, "z": 0.9, "speed": PANDA.limits.default_speed_m_s})
    ]
    assert robot.ee == pytest.approx([0.5, 0.1, 0.9])


def test_a_driver_whose_dependency_is_missing_is_a_config_error() -> None:
    register_driver("test.missing", "no_such_robot_sdk.driver:Robot")
    try:
        config = HarnessConfig.model_validate(
            {"driver": {"name": "test.missing"}, "run": {"store": None}}
        )
        with pytest.raises(ConfigError) as info:
            Harness.from_config(config, model=ScriptedModel([]))
        assert info.value.key == "driver.name" and "no_such_robot_sdk" in str(info.value)
    finally:
        DRIVERS.pop("test.missing")
