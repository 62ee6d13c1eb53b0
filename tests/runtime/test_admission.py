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
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest

from benchmarks.admission_attacks import attack_reruns, run_in_threads
from benchmarks.lib.admission_hardware import MOBILE, Corridor, OverlapRecorder, StillGoing
from embodiment.envelope import SafetyEnvelope
from embodiment.types import ActionResult
from harness import Harness, HarnessConfig
from harness.events import DoneEvent, SafetyCheckEvent, ToolResultEvent
from harness.providers import ScriptedModel, call, reply
from harness.runtime.robot import robot_line
from harness.world.physical import physical_tools

MARGIN = MOBILE.base.clearance_margin_m


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


def test_a_segment_rerun_is_admitted_again_on_fresh_readings() -> None:
    robot = Corridor(obstacle_m=0.75)
    with corridor_harness(robot, [call("move_base", distance=0.5)]) as harness:
        events = list(harness.run_stream("drive up to the shelf"))
    checks = [e for e in events if isinstance(e, SafetyCheckEvent)]
    # Segment 1 as asked; segment 2 shortened to the margin on its own readings; segment
    # 3 blocked: 0.15 m clear is the margin itself.
    assert [(c.segment, c.outcome) for c in checks] == [(1, "allow"), (2, "clamp"), (3, "block")]
    assert [round(d, 3) for d, _ in robot.commands] == [0.5, 0.1]
    assert robot.bad_commands() == [] and robot.obstacle_m - robot.x >= MARGIN - 1e-9
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
    tally = attack_reruns(300, seed=25)
    assert tally.tries == 300 and tally.sent > 300  # re-runs sent more commands than calls
    assert tally.bad == 0, tally.example


def test_two_harnesses_on_one_driver_never_overlap_commands() -> None:
    driver = OverlapRecorder(hold_s=0.01)
    statuses = run_in_threads([driver, driver], calls_each=15)
    assert statuses == ["completed", "completed"]
    assert driver.counts["n"] == 30 and driver.counts["overlaps"] == 0


def test_two_drivers_of_the_same_hardware_never_overlap_commands() -> None:
    """Two driver objects naming the same hardware (the lease name) share one line."""
    first = OverlapRecorder("arm@10.0.0.7", hold_s=0.01)
    second = OverlapRecorder("arm@10.0.0.7", shared=first, hold_s=0.01)
    statuses = run_in_threads([first, second], calls_each=15)
    assert statuses == ["completed", "completed"]
    assert first.counts["n"] == 30 and first.counts["overlaps"] == 0


def test_a_driver_nobody_uses_is_collected() -> None:
    driver = OverlapRecorder()
    line = robot_line(driver)
    assert robot_line(driver) is line and robot_line(OverlapRecorder()) is not line
    probe = weakref.ref(driver)
    del driver
    gc.collect()
    assert probe() is None


@pytest.mark.parametrize("same_identity", [False, True])
def test_the_line_is_shared_by_identity_or_by_object(same_identity: bool) -> None:
    a, b = (
        (OverlapRecorder("cell-3"), OverlapRecorder("cell-3"))
        if same_identity
        else (OverlapRecorder(), OverlapRecorder())
    )
    assert (robot_line(a) is robot_line(b)) is same_identity


def test_a_reading_taken_while_another_harness_moved_the_robot_is_taken_again() -> None:
    """Harness B observes while A's command is halfway; B's command waits for A's, and
    is checked on a reading taken after A's command returned, not on the halfway one."""
    robot = Corridor(obstacle_m=2.0)
    halfway, go = threading.Event(), threading.Event()
    plain = Corridor.execute

    def execute(action: str, arguments: dict[str, Any]) -> ActionResult:
        if threading.current_thread().name.startswith("tool:") and not halfway.is_set():
            robot.x += arguments["distance"] / 2  # the first half of A's motion
            halfway.set()
            go.wait(10)
            robot.x -= arguments["distance"] / 2
        return plain(robot, action, arguments)

    robot.execute = execute  # type: ignore[method-assign]
    cfg = config()
    cfg.evaluation.required_tools = []

    def harness(steps: list[Any]) -> Harness:
        return Harness(
            cfg,
            model=ScriptedModel([*steps, reply("done")]),
            driver=robot,
            physical_tools=physical_tools(robot),
            safety=SafetyEnvelope(MOBILE, observe=robot.observe),
        )

    def b_decides(request: Any) -> Any:
        go.set()  # B has observed (1.5 m clear at halfway); let A finish
        return call("move_base", distance=1.2)

    first = threading.Thread(
        target=lambda: list(harness([call("move_base", distance=1.0)]).run_stream("A"))
    )
    first.start()
    assert halfway.wait(10)
    with harness([b_decides]) as b:
        events = list(b.run_stream("B"))
    first.join(10)
    assert [round(d, 3) for d, _ in robot.commands] == [1.0, 0.85]  # B's shortened to 1.0 m clear
    assert robot.bad_commands() == []
    (check,) = [e for e in events if isinstance(e, SafetyCheckEvent)]
    assert check.outcome == "clamp" and "1.000 m" in check.reason


def slot_test_harness(robot: Corridor, **options: Any) -> Harness:
    cfg = config()
    cfg.evaluation.required_tools = []
    cfg.run.tool_timeout_s = 0.3  # how long a command waits for another one's slot
    return Harness(
        cfg,
        model=ScriptedModel([call("move_base", distance=0.2), reply("done")]),
        driver=robot,
        physical_tools=physical_tools(robot),
        safety=SafetyEnvelope(MOBILE, observe=robot.observe),
        **options,
    )


def test_a_command_waiting_for_another_sessions_slot_is_refused_readably() -> None:
    robot = Corridor(obstacle_m=5.0)
    held = robot_line(robot).try_take("another-session", "move_arm", 0.0)
    assert held is not None
    try:
        with slot_test_harness(robot) as harness:
            events = list(harness.run_stream("drive"))
    finally:
        held.line.release(held)
    assert robot.commands == []
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.error_kind == "driver_busy" and "move_arm of session another-session" in (
        result.text
    )
    assert any(e.type == "progress" and "waiting for the robot" in e.text for e in events)


def test_the_operator_cancel_wins_over_waiting_for_the_robot() -> None:
    robot = Corridor(obstacle_m=5.0)
    held = robot_line(robot).try_take("another-session", "move_arm", 0.0)
    assert held is not None
    started = threading.Event()

    def cancel() -> bool:
        return started.is_set()

    try:
        with slot_test_harness(robot) as harness:
            events = []
            for event in harness.run_stream("drive", should_cancel=cancel):
                events.append(event)
                if event.type == "progress" and "waiting for the robot" in event.text:
                    started.set()
    finally:
        held.line.release(held)
    assert robot.commands == []
    assert next(e for e in events if isinstance(e, DoneEvent)).status == "cancelled"


def test_two_harnesses_on_one_mcp_robot_never_overlap_commands(tmp_path: Path) -> None:
    """Finding 6b for robots reached only through MCP: each Harness starts its own server
    process from the same command line (the same robot); the servers mark a grip in
    progress in a file beside their shared log, so an overlap is seen by the "hardware"."""
    import json
    import sys

    from benchmarks.lib.fuzz_arms import StateFileDriver

    fixture = str(Path(__file__).parents[1] / "fixtures" / "mcp_arm_server.py")
    server = {
        "name": "arm",
        "command": sys.executable,
        "args": [
            fixture,
            "--state",
            str(tmp_path / "state.json"),
            "--log",
            str(tmp_path / "log.jsonl"),
            "--hold",
            "0.05",
        ],
        "physical": ["grip"],
        "safety": {"grip": {"force": "force", "width": "width"}},
    }
    grips = [call("grip", force=20.0, width=0.04) for _ in range(8)]
    statuses: list[str] = []

    def drive() -> None:
        config = HarnessConfig.model_validate(
            {
                "embodiment": "panda_tabletop",
                "driver": None,
                "run": {"store": None, "failure_budget": 100, "max_turns": 50},
                "memory": {"enabled": False},
                "mcp": {"servers": [server]},
            }
        )
        with Harness.from_config(
            config,
            model=ScriptedModel([*grips, reply("done")]),
            driver=StateFileDriver(tmp_path / "state.json"),
        ) as h:
            done = [e for e in h.run_stream("grip") if isinstance(e, DoneEvent)]
            statuses.append(done[-1].status)

    threads = [threading.Thread(target=drive) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    entries = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    grip_entries = [e for e in entries if e["tool"] == "grip"]
    assert statuses == ["completed", "completed"]
    assert len(grip_entries) == 16
    assert [e for e in grip_entries if e["arguments"]["overlap"]] == []


def test_an_mcp_robot_is_named_by_its_physical_servers_command_line_or_url() -> None:
    from harness.config import MCPServerConfig
    from harness.runtime.robot import mcp_robot_name

    def stdio(name: str, *args: str, physical: bool = True) -> MCPServerConfig:
        return MCPServerConfig(
            name=name, command="ros-bridge", args=list(args), physical=["move"] if physical else []
        )

    arm = stdio("arm", "--robot", "ur5", "--token", "sk-secret-123456")
    assert mcp_robot_name([arm], "/lab") == mcp_robot_name([stdio("arm", *arm.args)], "/lab")
    assert mcp_robot_name([arm], "/lab") != mcp_robot_name(
        [stdio("arm", "--robot", "ur10")], "/lab"
    )
    assert mcp_robot_name([arm], "/lab") != mcp_robot_name([arm], "/other-lab")
    assert mcp_robot_name([stdio("camera", physical=False)]) is None
    assert "sk-secret" not in (mcp_robot_name([arm], "/lab") or "")
    http = MCPServerConfig(
        name="arm", transport="streamable-http", url="http://10.0.0.7/mcp", physical=["move"]
    )
    assert mcp_robot_name([http]) != mcp_robot_name([http.model_copy(update={"url": "http://x"})])
