"""Issue 25, findings 2 and 6b: every command reaches a robot through one admission, and
one robot takes one command at a time, whichever Harness sends it.

Finding 2: when the evaluator answered "in progress", a segmented tool ran again without
the envelope, the ``driver_busy`` gate or the cancel check; a relative ``move_base
forward 0.5`` allowed with 0.75 m clear ran again with 0.25 m and 0.00 m clear and ended
inside the obstacle. Finding 6b: two Harness instances given one driver were not
serialised. The oracles here are the drivers' own ground truth (the true clearance when a
command arrives, calls that overlap in time), never the envelope's view.
"""

from __future__ import annotations

import gc
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from embodiment.profile import load_profile
from embodiment.safety import SafetyEnvelope
from embodiment.types import ActionResult, ActionSpec, Observation
from harness import Harness, HarnessConfig
from harness.events import DoneEvent, SafetyCheckEvent, ToolResultEvent
from harness.messages import Verdict
from harness.providers import ScriptedModel, call, reply
from harness.runtime.robot import robot_line
from harness.world.physical import physical_tools

MOBILE = load_profile(Path(__file__).parent.parent / "configs/embodiments/mobile_manipulator.yaml")
MARGIN = MOBILE.base.clearance_margin_m


class MoveBase(BaseModel):
    distance: float = Field(description="metres; negative drives backward")


class Corridor:
    """A mobile base in a corridor with an obstacle ahead; it records the true clearance
    each command arrived with (its ground truth, not a reading)."""

    def __init__(self, obstacle_m: float = 0.75) -> None:
        self.x = 0.0
        self.obstacle_m = obstacle_m
        self.commands: list[tuple[float, float]] = []
        """(distance, true clearance ahead when it arrived)."""

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None: ...

    def capabilities(self) -> list[ActionSpec]:
        return [
            ActionSpec(
                name="move_base",
                description="Drive the base straight by a distance (relative).",
                arguments=MoveBase,
                safety={"distance": "distance"},
            )
        ]

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        distance = float(arguments["distance"])
        self.commands.append((distance, self.obstacle_m - self.x))
        self.x += distance
        return ActionResult(ok=True, message=f"moved {distance:.3f} m", applied=arguments)

    def observe(self) -> Observation:
        ahead = max(self.obstacle_m - self.x, 0.0)  # a sensor reads 0 at contact, never less
        return Observation(
            state={
                "ee_position": [self.x + 0.4, 0.0, 0.9],
                "joint_positions": [0.0] * 6,
                "base_pose": [self.x, 0.0, 0.0],
                "clearance": {"forward": ahead, "backward": 5.0, "left": 5.0, "right": 5.0},
            }
        )


class StillGoing:
    """An evaluator that always answers "in progress" (the case that re-runs a tool)."""

    def evaluate(self, **_: Any) -> Verdict:
        return Verdict(status="process", evidence="not there yet", evaluator="test")


def config(max_segments: int = 3) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "failure_budget": 1000, "max_turns": 1000},
            "memory": {"enabled": False},
            "evaluation": {
                "required_tools": ["move_base"],
                "segment_tools": ["move_base"],
                "max_segments": max_segments,
            },
        }
    )


def corridor_harness(robot: Corridor, calls: list[Any], *, max_segments: int = 3) -> Harness:
    return Harness(
        config(max_segments),
        model=ScriptedModel([*calls, reply("done")]),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(MOBILE, observe=robot.observe),
        evaluator=StillGoing(),
    )


def bad_commands(robot: Corridor) -> list[tuple[float, float]]:
    """Commands that drove the base closer to the obstacle than the profile's margin."""
    return [(d, clear) for d, clear in robot.commands if d > 0 and clear - d < MARGIN - 1e-9]


def test_a_segment_rerun_is_admitted_again_on_fresh_readings() -> None:
    robot = Corridor(obstacle_m=0.75)
    with corridor_harness(robot, [call("move_base", distance=0.5)]) as harness:
        events = list(harness.run_stream("drive up to the shelf"))
    checks = [e for e in events if isinstance(e, SafetyCheckEvent)]
    # Segment 1 as asked; segment 2 shortened to the margin on its own readings; segment
    # 3 blocked: 0.15 m clear is the margin itself.
    assert [(c.segment, c.outcome) for c in checks] == [(1, "allow"), (2, "clamp"), (3, "block")]
    assert [round(d, 3) for d, _ in robot.commands] == [0.5, 0.1]
    assert bad_commands(robot) == [] and robot.obstacle_m - robot.x >= MARGIN - 1e-9
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.is_error and result.error_kind == "blocked"
    assert "segments 1-2 ran" in result.text and "segment 3 was not run" in result.text
    assert "base_clearance" in result.text
    (done,) = [e for e in events if isinstance(e, DoneEvent)]
    assert done.status == "completed" and done.robot_stopped is True


def test_a_rerun_waits_for_its_own_cancel_check() -> None:
    """The operator cancels while segment 1 runs: no segment 2 reaches the robot."""
    robot = Corridor(obstacle_m=5.0)
    cancel = threading.Event()
    original = robot.execute

    def execute(action: str, arguments: dict[str, Any]) -> ActionResult:
        result = original(action, arguments)
        cancel.set()
        return result

    robot.execute = execute  # type: ignore[method-assign]
    with corridor_harness(robot, [call("move_base", distance=0.3)]) as harness:
        events = list(harness.run_stream("drive", should_cancel=cancel.is_set))
    assert len(robot.commands) == 1
    assert next(e for e in events if isinstance(e, DoneEvent)).status == "cancelled"


def test_300_randomised_segmented_moves_never_enter_the_margin() -> None:
    """The issue's attack (448 bad commands in 300 calls before): random obstacles,
    distances (forward and back) and segment counts; the oracle is the corridor's true
    clearance when each command arrived."""
    rng = random.Random(25)
    calls_made, sent, bad = 0, 0, []
    for _ in range(30):
        robot = Corridor(obstacle_m=rng.uniform(0.2, 3.0))
        calls = [
            call("move_base", distance=round(rng.choice([-1, 1]) * rng.uniform(0.05, 1.2), 3))
            for _ in range(10)
        ]
        with corridor_harness(robot, calls, max_segments=rng.randint(2, 5)) as harness:
            list(harness.run_stream("drive"))
        calls_made += len(calls)
        sent += len(robot.commands)
        bad += bad_commands(robot)
    assert calls_made == 300 and sent > 300  # re-runs sent more commands than calls
    assert bad == []


# ------------------------------------------------------------------ one robot, many Harnesses


class Recorder:
    """A driver that records calls that overlap in time (execute, or a stop() landing in
    another command)."""

    def __init__(self, identity: str | None = None, *, shared: dict[str, int] | None = None):
        self.identity = identity
        self.state = shared if shared is not None else {"in_flight": 0, "overlaps": 0, "n": 0}
        self.lock = threading.Lock()

    def hardware_identity(self) -> str | None:
        return self.identity

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None:
        with self.lock:
            if self.state["in_flight"]:
                self.state["overlaps"] += 1

    def capabilities(self) -> list[ActionSpec]:
        return [
            ActionSpec(
                name="move_base",
                description="Drive the base.",
                arguments=MoveBase,
                safety={"distance": "distance"},
            )
        ]

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        with self.lock:
            self.state["in_flight"] += 1
            self.state["n"] += 1
            if self.state["in_flight"] > 1:
                self.state["overlaps"] += 1
        time.sleep(0.01)
        with self.lock:
            self.state["in_flight"] -= 1
        return ActionResult(ok=True, message="moved", applied=arguments)

    def observe(self) -> Observation:
        return Corridor(obstacle_m=100.0).observe()


def run_in_threads(drivers: list[Recorder], calls_each: int) -> list[str]:
    statuses: list[str] = []

    def run(driver: Recorder) -> None:
        cfg = config()
        cfg.evaluation.required_tools = []
        with Harness(
            cfg,
            model=ScriptedModel(
                [*[call("move_base", distance=0.05) for _ in range(calls_each)], reply("done")]
            ),
            driver=driver,
            physical_tools=physical_tools(driver),
            safety=SafetyEnvelope(MOBILE, observe=driver.observe),
        ) as harness:
            for event in harness.run_stream("drive"):
                if isinstance(event, DoneEvent):
                    statuses.append(event.status)

    threads = [threading.Thread(target=run, args=(driver,)) for driver in drivers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return statuses


def test_two_harnesses_on_one_driver_never_overlap_commands() -> None:
    driver = Recorder()
    statuses = run_in_threads([driver, driver], calls_each=15)
    assert statuses == ["completed", "completed"]
    assert driver.state["n"] == 30 and driver.state["overlaps"] == 0


def test_two_drivers_of_the_same_hardware_never_overlap_commands() -> None:
    """Two driver objects naming the same hardware (the lease name) share one line."""
    shared = {"in_flight": 0, "overlaps": 0, "n": 0}
    first, second = Recorder("arm@10.0.0.7", shared=shared), Recorder("arm@10.0.0.7", shared=shared)
    second.lock = first.lock
    statuses = run_in_threads([first, second], calls_each=15)
    assert statuses == ["completed", "completed"]
    assert shared["n"] == 30 and shared["overlaps"] == 0


def test_a_driver_nobody_uses_is_collected() -> None:
    driver = Recorder()
    line = robot_line(driver)
    assert robot_line(driver) is line and robot_line(Recorder()) is not line
    probe = __import__("weakref").ref(driver)
    del driver
    gc.collect()
    assert probe() is None


@pytest.mark.parametrize("same_identity", [False, True])
def test_the_line_is_shared_by_identity_or_by_object(same_identity: bool) -> None:
    a, b = (Recorder("cell-3"), Recorder("cell-3")) if same_identity else (Recorder(), Recorder())
    assert (robot_line(a) is robot_line(b)) is same_identity
