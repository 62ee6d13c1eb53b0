"""The offline planner: reads only the request (Brief, results, instruction, revisions),
one tool call per turn; and end to end on the simulator."""

from __future__ import annotations

import queue
from typing import Any

import pytest

from harness import Harness, HarnessConfig
from harness.config import ModelConfig
from harness.events import EvaluationEvent, ModelResponseEvent
from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    RefreshedBlock,
    RevisionItem,
    SystemBlock,
    ToolCall,
    ToolResultItem,
    ToolSpec,
    Verdict,
)
from harness.planner import Planner, parse_instruction
from harness.providers import build_model

TOOLS = ["pick", "place", "open_gripper", "update_task_notes", "load_skill", "find_objects"]
CATALOG = "Skill Catalog: ...\n- pick-and-place: Move objects.\n- stacking: Stack objects."


def spec(name: str) -> ToolSpec:
    properties = {"label": {"type": "string"}} if name == "find_objects" else {}
    return ToolSpec(
        name=name, description=name, parameters={"type": "object", "properties": properties}
    )


def brief(*objects: str, holding: str = "nothing", tail: str = "") -> str:
    lines = [
        "Scene (world frame, metres; t=1.000)",
        f"robot: gripper at (0.307, 0.000, 1.110), open, holding {holding}",
        f"objects ({len(objects)} of {len(objects)} shown, most relevant first):",
        *objects,
    ]
    return "\n".join(lines + ([tail] if tail else []))


TABLE = "- table_1: table at (0.350, 0.000, 0.605) size 1.300x1.400x0.040; conf 1.00"
TRAY = "- tray_1: tray [container, open] at (0.620, -0.240, 0.640); on table_1; conf 1.00"
RED = (
    "- red_cube_1: red cube at (0.513, -0.057, 0.645) size 0.040x0.040x0.040; on table_1; conf 1.00"
)
RED_IN = "- red_cube_1: red cube at (0.620, -0.250, 0.651); in tray_1; conf 1.00"
RED_HELD = "- red_cube_1: red cube at (0.513, -0.057, 0.795); held; conf 1.00"
GREEN = "- green_cube_1: green cube at (0.535, 0.245, 0.645); on table_1; conf 1.00"
BLUE = "- blue_cube_1: blue cube at (0.445, 0.153, 0.645); on table_1; conf 1.00"


class Transcript:
    """Builds requests the way the loop does, turn after turn."""

    def __init__(self, instruction: str, *, tools: list[str] = TOOLS, catalog: str = CATALOG):
        self.items: list[Any] = [InstructionItem(text=instruction)]
        self.tools = [spec(name) for name in tools]
        self.system = [
            SystemBlock(name="system", text="..."),
            SystemBlock(name="skills", text=catalog),
        ]
        self.planner = Planner()

    def decide(self, brief_text: str) -> Any:
        request = ModelRequest(
            system=self.system,
            tools=self.tools,
            items=self.items,
            refreshed=RefreshedBlock(brief=brief_text),
        )
        response = self.planner.decide(request)
        assert len(response.tool_calls) <= 1
        self.items.append(AssistantItem(text=response.text, tool_calls=response.tool_calls))
        return response

    def result(
        self, text: str = "ok", *, verdict: str | None = None, error: str | None = None
    ) -> None:
        call: ToolCall = self.items[-1].tool_calls[0]
        evaluation = Verdict(status=verdict, evidence=f"{call.name} {verdict}") if verdict else None
        self.items.append(
            ToolResultItem(
                call_id=call.id,
                name=call.name,
                text=text,
                evaluation=evaluation,
                is_error=error is not None,
                error_kind=error,
            )
        )


def names(response: Any) -> tuple[str, dict[str, Any]] | None:
    if not response.tool_calls:
        return None
    return response.tool_calls[0].name, response.tool_calls[0].arguments


def test_put_the_red_cube_in_the_tray_step_by_step() -> None:
    t = Transcript("put the red cube in the tray")
    scene = brief(TABLE, TRAY, RED, GREEN)
    assert names(t.decide(scene)) == ("load_skill", {"name": "pick-and-place"})
    t.result("skill loaded")
    notes = t.decide(scene)
    assert names(notes)[0] == "update_task_notes"
    assert names(notes)[1]["add_notes"] == ["plan: red_cube_1 in tray_1"]
    t.result("Task Notes updated")
    assert names(t.decide(scene)) == ("pick", {"ref": "red_cube_1"})
    t.result("lifted", verdict="success")
    held = brief(TABLE, TRAY, RED_HELD, GREEN, holding="red_cube_1")
    assert names(t.decide(held)) == (
        "place",
        {"ref": "red_cube_1", "target": "tray_1", "relation": "in"},
    )
    t.result("released", verdict="success")
    report = t.decide(brief(TABLE, TRAY, RED_IN, GREEN))
    assert report.tool_calls == []
    assert "Result: 1 of 1 objects where they belong" in report.text
    assert "red_cube_1 is in tray_1 (evaluator: place success)" in report.text


def test_a_failed_grasp_is_retried_then_given_up() -> None:
    t = Transcript("put the red cube in the tray", tools=["pick", "place"])
    scene = brief(TABLE, TRAY, RED)
    for attempt in range(3):
        response = t.decide(scene)
        assert names(response) == ("pick", {"ref": "red_cube_1"})
        if attempt:
            assert f"retrying (attempt {attempt + 1} of 3)" in response.text
        t.result("fingers closed", verdict="failure")
    report = t.decide(scene)
    assert report.tool_calls == []
    assert "NOT done: red_cube_1 in tray_1: 3 grasps failed" in report.text


def test_stack_loads_the_stacking_skill_and_skips_an_occupied_target() -> None:
    t = Transcript("stack the blue cube on the green cube", tools=["pick", "place", "load_skill"])
    assert names(t.decide(brief(TABLE, GREEN, BLUE))) == ("load_skill", {"name": "stacking"})
    t.result("loaded")
    assert names(t.decide(brief(TABLE, GREEN, BLUE))) == ("pick", {"ref": "blue_cube_1"})
    t.result("lifted", verdict="success")
    occupied = brief(
        TABLE,
        GREEN,
        BLUE.replace("on table_1", "held"),
        RED.replace("table_1", "green_cube_1"),
        holding="blue_cube_1",
    )
    response = t.decide(occupied)
    assert names(response) == (
        "place",
        {"ref": "blue_cube_1", "target": "table_1", "relation": "on"},
    )


def test_a_revision_is_acknowledged_and_changes_the_goal() -> None:
    t = Transcript("put the red cube in the tray", tools=["pick", "place", "update_task_notes"])
    scene = brief(TABLE, TRAY, RED, GREEN)
    t.decide(scene)  # plan notes
    t.result("updated")
    t.items.append(RevisionItem(text="put the green cube in the tray instead"))
    response = t.decide(scene)
    assert response.text.startswith("Revision: I could not use")  # "instead" is not grammar
    t.result("updated")
    t.items.append(RevisionItem(text="put the green cube in the tray"))
    response = t.decide(scene)
    assert names(response)[0] == "update_task_notes"
    assert response.text == "Revision: the goal is now: the green cube in the tray."
    t.result("updated")
    assert names(t.decide(scene)) == ("pick", {"ref": "green_cube_1"})


def test_revision_without_a_notes_tool_prefixes_the_next_action() -> None:
    t = Transcript("put the red cube in the tray", tools=["pick", "place"])
    t.items.append(RevisionItem(text="also put the blue cube in the tray"))
    response = t.decide(brief(TABLE, TRAY, RED, BLUE))
    assert response.text.startswith("Revision: the goal is now: the red cube in the tray; ")
    assert names(response) == ("pick", {"ref": "red_cube_1"})


def test_objects_left_out_of_the_brief_are_looked_up() -> None:
    t = Transcript("put all cubes in the tray", tools=["pick", "place", "find_objects"])
    tail = "+5 more objects: 3 cubes, 2 other; use find_objects"
    response = t.decide(brief(TABLE, TRAY, RED, tail=tail))
    assert names(response) == ("find_objects", {"label": "cube"})
    t.result(
        '[{"ref": "purple_cube_1", "label": "purple cube", "position": [0.4, 0.3, 0.645], '
        '"relations": {"on": "table_1"}}]'
    )
    assert names(t.decide(brief(TABLE, TRAY, RED, tail=tail))) == ("pick", {"ref": "purple_cube_1"})


def test_clear_the_table_and_unknown_words() -> None:
    t = Transcript("clear the table", tools=["pick", "place"])
    assert names(t.decide(brief(TABLE, TRAY, RED_IN, GREEN, BLUE))) == (
        "pick",
        {"ref": "blue_cube_1"},
    )
    confused = Transcript("juggle the cubes").decide(brief(TABLE, TRAY, RED))
    assert confused.tool_calls == [] and "I understand" in confused.text
    assert parse_instruction("stop please").stop


def test_planner_provider_is_registered_and_offline() -> None:
    model = build_model(ModelConfig(provider="planner", name="tabletop-planner"))
    assert model.supports_summaries is False
    assert model.context_window and model.image_cost == "generic"
    assert model.name == "tabletop-planner"


# --------------------------------------------------------------------------- end to end


def planner_harness(sim: Any) -> Harness:
    """The planner with the real scene graph (built from the driver's ground truth)."""
    config = HarnessConfig.model_validate(
        {
            "model": {"provider": "planner"},
            "embodiment": "panda_tabletop",
            "driver": None,
            "run": {"store": None, "max_turns": 40},
            "memory": {"enabled": False},
            "evaluation": {"required_tools": ["pick", "place"]},
        }
    )
    harness = Harness.from_config(config, driver=sim)
    assert harness.scene is not None
    return harness


def run(h: Harness, instruction: str, **options: Any) -> list[Any]:
    return list(h.run_stream(instruction, **options))


@pytest.mark.sim
def test_planner_puts_all_the_cubes_in_the_tray(sim: Any) -> None:
    h = planner_harness(sim)
    with h:
        events = run(h, "put all the cubes in the tray")
    done = events[-1]
    assert done.status == "completed", done.termination_reason
    assert "Result: 3 of 3 objects where they belong" in done.report
    places = [
        e.verdict.status for e in events if isinstance(e, EvaluationEvent) and e.tool == "place"
    ]
    assert places == ["success"] * 3
    inside = {d.ref for d in sim.detections() if ("inside", "tray_1") in d.relations}
    assert inside == {"red_cube_1", "green_cube_1", "blue_cube_1"}
    decisions = [e for e in events if isinstance(e, ModelResponseEvent)]
    assert all(len(e.tool_calls) <= 1 for e in decisions)


@pytest.mark.sim
def test_planner_stacks_and_recovers_from_a_failed_grasp(sim: Any) -> None:
    sim.inject_faults(drop_on_lift={"blue_cube_1": 1})
    h = planner_harness(sim)
    with h:
        events = run(h, "stack the blue cube on the green cube")
    done = events[-1]
    assert done.status == "completed", done.termination_reason
    verdicts = [(e.tool, e.verdict.status) for e in events if isinstance(e, EvaluationEvent)]
    assert verdicts == [("pick", "failure"), ("pick", "success"), ("place", "success")]
    assert "Recovered from failed grasps: blue_cube_1 needed 2 grasps" in done.report
    blue = {d.ref: d for d in sim.detections()}["blue_cube_1"]
    assert blue.relations == [("on", "green_cube_1")]


@pytest.mark.sim
def test_planner_answers_a_replan_from_a_queue(sim: Any) -> None:
    revisions: queue.Queue[str] = queue.Queue()
    h = planner_harness(sim)
    placed = 0

    def poll() -> str | None:
        try:
            return revisions.get_nowait()
        except queue.Empty:
            return None

    with h:
        events = []
        for event in h.run_stream("put the red cube in the tray", poll_replan=poll):
            events.append(event)
            if isinstance(event, EvaluationEvent) and event.tool == "place":
                placed += 1
                if placed == 1:
                    revisions.put("also put the blue cube in the tray")
    done = events[-1]
    assert done.status == "completed"
    assert any(e.type == "replan" for e in events)
    assert "Result: 2 of 2 objects" in done.report
    assert "(revised: the red cube in the tray; the blue cube in the tray)" in done.report
