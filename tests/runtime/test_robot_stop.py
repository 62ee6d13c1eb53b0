"""How a task leaves the robot: ``done.robot_stopped``, the ``safety`` events, the
``driver_busy`` gate across tasks, and how the timeline and the CLI show them."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from harness import Harness, HarnessConfig
from harness.cli.common import exit_code_for
from harness.cli.render import TimelineRenderer
from harness.events import DoneEvent, SafetyEvent, ToolResultEvent
from harness.providers import ScriptedModel, call, reply
from harness.world.physical import physical_tools
from tests.conftest import StubbornRobot
from worlds.fake import FakeRobot

PANDA = load_profile("panda_tabletop")


def config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )


def harness(robot: Any, responses: list[Any], **parts: Any) -> Harness:
    return Harness(
        config(),
        model=ScriptedModel(responses),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(PANDA, locator=robot, observe=robot.observe),
        **parts,
    )


def test_a_stopped_robot_says_so_and_no_robot_says_nothing() -> None:
    robot = FakeRobot(PANDA)
    with harness(robot, [call("move_to", x=0.5, y=0.0, z=0.9), reply("moved")]) as h:
        events = list(h.run_stream("move"))
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.robot_stopped is True
    assert not any(isinstance(e, SafetyEvent) for e in events)
    assert exit_code_for(done, interrupted=False) == 0
    with Harness(config(), model=ScriptedModel([reply("hello")])) as h:
        assert list(h.run_stream("talk"))[-1].robot_stopped is None


def test_the_driver_stays_busy_across_tasks_until_it_returns(short_grace: None) -> None:
    robot = StubbornRobot(PANDA)
    tools = physical_tools(robot)
    next(t for t in tools if t.name == "move_to").timeout_s = 0.1
    model = ScriptedModel(
        [
            call("move_to", x=0.5, y=0.0, z=0.9),
            reply("first"),
            call("move_to", x=0.5, y=0.1, z=0.9),
            reply("second"),
            call("move_to", x=0.5, y=0.1, z=0.9),
            reply("third"),
        ]
    )
    h = Harness(
        config(),
        model=model,
        driver=robot,
        physical_tools=tools,
        safety=SafetyEnvelope(PANDA, locator=robot, observe=robot.observe),
    )
    try:
        first = list(h.run_stream("move"))
        assert first[-1].status == "failed" and first[-1].robot_stopped is False
        [lost] = [e for e in first if isinstance(e, SafetyEvent)]
        assert lost.problem == "command_not_returned" and lost.tool == "move_to"
        assert "may still be moving" in first[-1].report
        assert exit_code_for(first[-1], interrupted=False) == 3

        second = list(h.run_stream("move again"))  # the first command still runs
        result = next(e for e in second if isinstance(e, ToolResultEvent))
        assert result.error_kind == "driver_busy" and "move_to has not returned" in result.text
        assert second[-1].status == "failed" and robot.most_at_once == 1

        robot.release.set()  # the driver returns at last; from now on it returns at once
        robot.wait_idle()
        third = list(h.run_stream("move once more"))  # returned: physical calls run again
        result = next(e for e in third if isinstance(e, ToolResultEvent))
        assert result.error_kind is None
        assert third[-1].status == "completed" and third[-1].robot_stopped is True
    finally:
        robot.release.set()
        h.close()


def test_a_failed_stop_is_shown_loudly_in_the_timeline() -> None:
    class StopFails(FakeRobot):
        def stop(self) -> None:
            raise RuntimeError("e-stop relay not answering")

    with harness(StopFails(PANDA), [reply("nothing to do")]) as h:
        events = list(h.run_stream("idle"))
    done = events[-1]
    assert done.status == "completed" and done.robot_stopped is False  # true, but not safe
    [event] = [e for e in events if isinstance(e, SafetyEvent)]
    assert event.problem == "stop_failed" and "e-stop relay not answering" in event.reason
    assert events.index(event) == len(events) - 2  # right before done
    out = io.StringIO()
    render = TimelineRenderer(Console(file=out, width=200, color_system=None))
    for e in events:
        render(e)
    text = out.getvalue()
    assert "ROBOT" in text and "e-stop relay not answering" in text
    assert "may still be moving: check it" in text
