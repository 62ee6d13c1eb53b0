"""Resume keeps the world and the context in agreement.

On the simulator the world state (object poses, gripper, held object) is recorded with
each turn and put back on resume, so a cube the context says was placed is still placed in
the new process's simulator; a real driver cannot be put back, so resume re-observes it and
says so. The "crash" here is a process that stops iterating mid-task and never finalises
(the store is closed under it), as in ``tests/runtime/test_resume.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import Harness
from harness.events import DoneEvent, EventBase, NotificationEvent, TaskResumedEvent
from harness.messages import ModelRequest, ModelResponse
from harness.providers import ScriptedModel, call, reply
from harness.store.reader import RunLog
from tests.conftest import fake_robot, move_to_tool
from tests.fixtures.parts import AllowAll
from worlds.tabletop.simulator import TabletopSim

INSTRUCTION = "put the red cube in the tray then put the green cube in the tray"


def _sim_config(tmp_path: Path) -> Path:
    path = tmp_path / "sim.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "model": {"provider": "planner", "name": "tabletop-planner"},
                "embodiment": "panda_tabletop",
                "driver": {"name": "sim.tabletop", "seed": 0},
                "run": {"store": str(tmp_path / "store"), "max_turns": 40},
                "memory": {"enabled": False},
                "evaluation": {"required_tools": ["pick", "place"]},
            }
        )
    )
    return path


ABANDONED: list[Any] = []
"""Streams of "crashed" processes, kept referenced so they are not finalised mid-test."""


def _crash_at(harness: Harness, stop: Any) -> list[EventBase]:
    """Iterate until ``stop(event)``; then the process "dies" (never finalises)."""
    seen: list[EventBase] = []
    stream = harness.run_stream(INSTRUCTION)
    ABANDONED.append(stream)
    for event in stream:
        seen.append(event)
        if stop(event):
            break
    harness.store.close()
    harness.session.driver.disconnect()  # type: ignore[union-attr]
    return seen


def _is_second_pick(event: EventBase) -> bool:
    return event.type == "tool_call" and getattr(event, "arguments", {}).get("ref") == (
        "green_cube_1"
    )


@pytest.mark.sim
def test_placed_cubes_stay_placed_across_a_resume(tmp_path: Path) -> None:
    config = _sim_config(tmp_path)
    crashed = Harness.from_config(config)
    session_id = crashed.session_id
    before = _crash_at(crashed, _is_second_pick)
    assert any(
        e.type == "evaluation" and e.tool == "place" and e.verdict.status == "success"  # type: ignore[attr-defined]
        for e in before
    )
    with RunLog(tmp_path / "store") as log:
        recorded = log.world_state(session_id)
    assert recorded is not None
    _, turn, world = recorded
    assert world["objects"]["red_cube_1"]["position"][2] > 0.64  # in the tray, on its floor

    with Harness.resume(session_id, config) as harness:
        sim: TabletopSim = harness.session.driver  # type: ignore[assignment]
        stream = harness.resume_stream()
        first = next(stream)
        assert isinstance(first, TaskResumedEvent)
        assert first.world == "restored" and first.world_turn == turn
        # before anything moves again: the new process's simulator has the placed cube
        placed = sim.post_conditions().check(
            "place", {"ref": "red_cube_1", "target": "tray_1"}, None
        )
        assert placed is not None and placed.status == "success", placed
        events = [first, *stream]
    notes = [e for e in events if isinstance(e, NotificationEvent)]
    assert any("restored to its state after turn" in n.message for n in notes)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.status == "completed" and done.outcome == "achieved", done.evidence
    # the interrupted pick is "outcome unknown", not a failure in the report
    interrupted = next(e for e in events if e.type == "tool_result")
    assert interrupted.error_kind == "outcome_unknown"  # type: ignore[attr-defined]
    assert "NOT done" not in done.report and "failed grasps" not in done.report
    picks_after = [
        e
        for e in events
        if e.type == "tool_call" and e.name == "pick"  # type: ignore[attr-defined]
    ]
    assert [e.arguments["ref"] for e in picks_after] == ["green_cube_1"]  # type: ignore[attr-defined]


@pytest.mark.sim
def test_a_held_cube_is_still_held_after_a_resume(tmp_path: Path) -> None:
    config = _sim_config(tmp_path)
    crashed = Harness.from_config(config)
    session_id = crashed.session_id

    def first_place(event: EventBase) -> bool:
        return event.type == "tool_call" and event.name == "place"  # type: ignore[attr-defined]

    _crash_at(crashed, first_place)
    with Harness.resume(session_id, config) as harness:
        sim: TabletopSim = harness.session.driver  # type: ignore[assignment]
        stream = harness.resume_stream()
        first = next(stream)
        assert isinstance(first, TaskResumedEvent) and first.world == "restored"
        assert sim.held_ref() == "red_cube_1"
        events = [first, *stream]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.outcome == "achieved"


def test_a_real_driver_is_re_observed_and_the_resume_says_so(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = tmp_path / "real.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": {"provider": "scripted", "name": "s", "options": {"responses": []}},
                "embodiment": None,
                "driver": None,
                "memory": {"enabled": False},
                "run": {"store": str(store)},
            }
        )
    )
    driver = fake_robot(motion_s=0.0)
    model = ScriptedModel(
        [call("move_to", x=0.1, y=0.0, z=0.2), call("move_to", x=0.2, y=0.0, z=0.2)]
    )
    harness = Harness.from_config(
        config, model=model, driver=driver, safety=AllowAll(), physical_tools=[move_to_tool(driver)]
    )
    session_id = harness.session_id
    stream = harness.run_stream("move twice")
    ABANDONED.append(stream)
    for event in stream:
        if event.type == "tool_call" and event.turn == 2:
            break
    harness.store.close()

    fresh = fake_robot()
    seen: list[ModelRequest] = []

    def responder(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return reply("observed; stopping here\nOutcome: not achieved")

    with Harness.resume(
        session_id,
        config,
        model=ScriptedModel(responder=responder),
        driver=fresh,
        safety=AllowAll(),
        physical_tools=[move_to_tool(fresh)],
    ) as resumed:
        events = list(resumed.resume_stream())
    first = events[0]
    assert isinstance(first, TaskResumedEvent) and first.world == "re_observed"
    assert first.world_turn is None
    [note] = [e for e in events if isinstance(e, NotificationEvent)]
    assert note.level == "warning" and "re-observed" in note.message
    kinds = [e.type for e in events]
    assert kinds.index("observation") < kinds.index("model_response")
    assert seen[0].refreshed is not None and seen[0].refreshed.observation
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.outcome == "not_achieved"
