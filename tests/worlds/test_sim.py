"""The built-in PyBullet tabletop: driver checks, pick/place confirmed by the evaluator,
a failed grasp reported as failure, and stop() interrupting a long motion.

One simulator is shared by the module (reset between tests); motions run as fast as the
physics allows except where a test needs a long motion to interrupt.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from embodiment.checks import check_driver
from harness import Harness, HarnessConfig
from harness.events import DoneEvent, EvaluationEvent, ToolResultEvent
from harness.providers import ScriptedModel, call, reply
from worlds.tabletop.scene import TabletopConfig, plan_layout

pybullet = pytest.importorskip("pybullet", reason="the simulator needs the [sim] extra")
pytestmark = pytest.mark.sim


def sim_harness(sim: Any, responses: list[Any]) -> Harness:
    config = HarnessConfig.model_validate(
        {
            "embodiment": "panda_tabletop",
            "driver": None,
            "run": {"store": None},
            "memory": {"enabled": False},
            "evaluation": {"required_tools": ["pick", "place"]},
        }
    )
    return Harness.from_config(config, model=ScriptedModel(responses), driver=sim)


def test_layout_is_seeded_and_free_of_overlaps() -> None:
    config = TabletopConfig()
    assert plan_layout(config, seed=4) == plan_layout(config, seed=4)
    assert plan_layout(config, seed=4) != plan_layout(config, seed=5)
    objects = plan_layout(config, seed=4).objects
    for a in objects:
        for b in objects:
            if a is not b:
                gap = (a.position[0] - b.position[0]) ** 2 + (a.position[1] - b.position[1]) ** 2
                assert gap**0.5 > 0.06


def test_import_prints_nothing() -> None:
    code = "from embodiment.pybullet_import import import_pybullet; import_pybullet()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout == "" and done.stderr == ""


def test_check_driver_passes_on_the_simulator(sim: Any) -> None:
    report = check_driver(sim, sim.profile)
    assert report.ok, report.render()
    assert report.status("cameras_match_profile") == "pass"


def test_observation_and_ground_truth(sim: Any) -> None:
    observation = sim.observe()
    assert observation.images["front"].shape == (240, 320, 3)
    assert observation.state["gripper"] == "open"
    detections = {d.ref: d for d in sim.perception().perceive(observation)}
    assert {"red_cube_1", "green_cube_1", "blue_cube_1", "tray_1", "table_1", "gripper"} <= set(
        detections
    )
    red = detections["red_cube_1"]
    assert red.label == "red cube" and red.color == "red" and red.provenance == "ground_truth"
    assert red.relations == [("on", "table_1")]
    assert detections["tray_1"].category == "container" and detections["tray_1"].is_open


def test_pick_and_place_are_confirmed_by_the_evaluator(sim: Any) -> None:
    responses = [
        call("pick", ref="red_cube_1"),
        call("place", ref="red_cube_1", target="tray_1"),
        reply("The red cube is in the tray."),
    ]
    with sim_harness(sim, responses) as h:
        events = list(h.run_stream("put the red cube in the tray"))
    verdicts = [e.verdict for e in events if isinstance(e, EvaluationEvent)]
    assert [v.status for v in verdicts] == ["success", "success"]
    assert "held between both fingers" in verdicts[0].evidence
    assert "rests in tray_1" in verdicts[1].evidence
    assert events[-1].status == "completed"
    red = {d.ref: d for d in sim.detections()}["red_cube_1"]
    assert red.relations == [("inside", "tray_1")]


def test_a_failed_grasp_is_reported_as_failure_and_a_retry_succeeds(sim: Any) -> None:
    sim.inject_faults(drop_on_lift={"green_cube_1": 1})
    responses = [
        call("pick", ref="green_cube_1"),
        call("pick", ref="green_cube_1"),
        reply("picked on the second try"),
    ]
    with sim_harness(sim, responses) as h:
        events = list(h.run_stream("pick up the green cube"))
        notes = h.task_notes.render()
    verdicts = [e.verdict for e in events if isinstance(e, EvaluationEvent)]
    assert verdicts[0].status == "failure"
    assert "green_cube_1 is not in the gripper" in verdicts[0].evidence
    assert "on table_1" in verdicts[0].evidence
    assert verdicts[1].status == "success"
    first_result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert "evaluation: failure" in first_result.text
    assert "pick: failure" in notes


def test_stop_from_another_thread_interrupts_a_motion(sim: Any) -> None:
    sim.real_time_factor = 1.0
    outcome: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: outcome.update(
            result=sim.execute("move_to", {"x": 0.7, "y": 0.3, "z": 0.8, "speed": 0.05})
        )
    )
    worker.start()
    deadline = time.monotonic() + 60  # a hang guard: the stop comes once the arm moves
    while sim.state.motion != "moving" and worker.is_alive():
        assert time.monotonic() < deadline, "the motion never began"
        time.sleep(0.01)
    sim.stop()
    worker.join(30)
    assert not worker.is_alive()
    result = outcome["result"]
    assert result.interrupted and not result.ok
    assert sim.observe().state["motion"] == "stopped"


def test_cancel_during_a_long_motion_ends_cancelled_with_the_robot_stopped(sim: Any) -> None:
    sim.real_time_factor = 1.0
    cancel = threading.Event()
    responses = [call("move_to", x=0.7, y=0.3, z=0.8, speed=0.05), reply("never reached")]
    with sim_harness(sim, responses) as h:
        stream = h.run_stream("move slowly", should_cancel=cancel.is_set)
        events = []
        for event in stream:
            events.append(event)
            if event.type == "tool_call":
                threading.Timer(0.3, cancel.set).start()
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "cancelled"
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.error_kind == "cancelled"
    ee = sim.ee_position()
    assert abs(ee[0] - 0.7) > 0.1  # far from the target: the motion really stopped midway
    assert sim.observe().state["motion"] == "stopped"
    before = sim.ee_position()
    sim.advance(0.5)  # a stopped arm stays put
    assert max(abs(a - b) for a, b in zip(before, sim.ee_position(), strict=True)) < 0.003


def test_get_object_image_crops_the_object_in_the_simulator(sim: Any) -> None:
    """The simulator publishes its camera calibration, so the scene's image tool crops
    the object instead of falling back to the whole frame."""
    from harness.assembly.build import build_scene

    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    observation = sim.observe()
    calibration = observation.state["cameras"]["front"]
    assert len(calibration["view"]) == 16 and len(calibration["projection"]) == 16
    scene = build_scene(config, driver=sim)
    assert scene is not None
    scene.refresh(observation, focus="the red cube")
    tool = next(t for t in scene.tools() if t.name == "get_object_image")
    from harness.tools import ToolContext

    output = tool.invoke(tool.validate({"ref": "red_cube_1"}), ToolContext())
    assert not output.is_error, output.text
    assert "crop of camera 'front'" in output.text
    [image] = output.images
    assert image.width < 320 and image.height < 240
