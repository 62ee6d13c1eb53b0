"""The console's Stop reaches the robot while the loop is busy elsewhere.

Found in the third attack round: from the browser, click to ``driver.stop()`` took a median
66 ms, p90 240 ms, max 289 ms, because the cancel was read only when the loop reached its
next check, after the evaluation's settle and the next observation. The fix stops the
driver from the web server's thread as soon as the cancel is set.

No timing is asserted here (benchmarks/console_stop.py measures it in Chromium): the test
holds the loop inside a blocking phase (an observation that does not return, an evaluation
that does not return) and checks, by the order of events, that ``driver.stop()`` was
called while the phase was still blocked, and that the task then ends ``cancelled`` with
the robot stopped.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from embodiment.types import Observation
from harness.config import HarnessConfig
from harness.console import attach
from harness.providers.scripted import ScriptedModel, call, reply
from harness.runtime.harness import Harness
from harness.tools import tool
from harness.world.evaluation import ProgrammaticEvaluator
from harness.world.physical import physical_tools
from tests.console_support import (
    TaskLoop,
    browser_session,
    post_action,
    wait_a_moment,
    wait_for,
)
from worlds.fake import FakeRobot

PANDA = load_profile("panda_tabletop")
HANG_GUARD_S = 20.0
"""Generous: only a hang fails on it, never a slow machine."""


class HeldRobot(FakeRobot):
    """A robot that blocks once armed in one phase, as a camera or a settling simulator
    would: its first observation (``observe``), its post-condition check (``evaluate``),
    the world snapshot after the physical tool (``snapshot``, a phase the loop does not
    watch) or the one at the task's start, before the console knows a task runs
    (``start``: a Stop then was "no task is running" before)."""

    def __init__(self, hold: str) -> None:
        super().__init__(PANDA)
        self.hold = hold
        self.calls: dict[str, int] = {}
        self.armed = threading.Event()
        self.blocked = threading.Event()
        self.release = threading.Event()
        self.stopped_while_blocked = threading.Event()

    def _hold(self, phase: str, at_call: int = 1) -> None:
        self.calls[phase] = self.calls.get(phase, 0) + 1
        if self.hold != phase or self.calls[phase] != at_call:
            return
        if self.armed.is_set() and not self.release.is_set():
            self.blocked.set()
            self.release.wait(HANG_GUARD_S)

    def observe(self) -> Observation:
        self._hold("observe")
        return super().observe()

    def snapshot(self) -> dict[str, Any]:
        """The world's state, recorded after each physical tool (resume restores it)."""
        self._hold("start")  # the first: at the task's start, before task_started
        self._hold("snapshot", at_call=2)  # the second: after the physical tool
        return {"robot": "held"}

    def stop(self) -> None:
        if self.blocked.is_set() and not self.release.is_set():
            self.stopped_while_blocked.set()
        super().stop()


class HeldChecker:
    """The robot's post-condition check, blocking while the robot holds its evaluation."""

    def __init__(self, robot: HeldRobot) -> None:
        self.robot = robot

    def check(self, action: str, arguments: Any, applied: Any) -> Any:
        from embodiment.types import PostCondition

        self.robot._hold("evaluate")
        return PostCondition(status="success", evidence="where it was sent")


@pytest.mark.parametrize("hold", ["start", "observe", "evaluate", "snapshot"])
def test_stop_reaches_the_driver_while_the_loop_is_blocked(hold: str, tmp_path: Path) -> None:
    robot = HeldRobot(hold)
    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None},
            "memory": {"enabled": False},
            "evaluation": {"required_tools": ["move_to"]},
        }
    )
    responses = [call("move_to", x=0.5, y=0.0, z=0.9), call("wait_a_moment"), reply("done")]
    harness = Harness(
        config,
        model=ScriptedModel(responses),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(PANDA, locator=robot, observe=robot.observe),
        evaluator=ProgrammaticEvaluator(HeldChecker(robot)),
        tools=[tool(wait_a_moment)],
    )
    with attach(harness) as ui, TaskLoop(harness, ui) as loop:
        page = browser_session(ui)
        base = ui.address.rstrip("/")
        status, _ = post_action(base, "/api/claim", {"take_over": True}, **page)
        assert status == 200
        robot.armed.set()  # the first observation of the task (or the evaluation) holds
        # the page's Start is taken only while the task loop waits for one (a loaded machine
        # may not have started waiting yet: 409 "not waiting for one from the page")
        wait_for(lambda: ui.hub.state()["accepts_tasks"])
        status, body = post_action(base, "/api/start", {"instruction": "move"}, **page)
        assert status == 200, body
        assert robot.blocked.wait(HANG_GUARD_S), f"the {hold} phase never started"
        status, body = post_action(base, "/api/stop", {"client": "p"}, **page)
        assert status == 200 and body["effect"] == "stopping"
        reached = robot.stopped_while_blocked.wait(HANG_GUARD_S)
        robot.release.set()
        assert reached, f"driver.stop() waited for the {hold} phase to end"
        done = wait_for(lambda: loop.done and loop.done[-1], timeout=HANG_GUARD_S)
    harness.close()
    assert done is not None and done.status == "cancelled" and done.robot_stopped is True
