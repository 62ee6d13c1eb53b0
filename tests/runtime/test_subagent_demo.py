"""The offline sub-agent demo: a cube hidden behind the tray, a search handed to a child,
the parent acting on the handoff (issue 19, item 7).

Unit level: the hidden-cube scene variant and its camera-seen perception, the grammar of
"find X and put it in Y", the planner as a parent (delegates only after find_objects does
not know the object) and as a sub-agent (searches camera by camera, answers the handoff).
End to end: the planner on the simulator, and ``harness demo "find the yellow cube and put
it in the tray" --seed N`` as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig
from harness.events import EvaluationEvent, HandoffEvent, LaneStartedEvent, ModelResponseEvent
from harness.messages import NoticeItem, ToolSpec
from harness.planner import parse_instruction
from harness.planner.grammar import search_phrase
from harness.prompts import SUBAGENT_CONTRACT
from tests.cli.test_demo import HAS_SCENE, HAS_SIM, ROOT, run_cli
from tests.planner.test_planner import TABLE, TRAY, Transcript, brief, names
from worlds.tabletop.scene import HIDDEN_CUBE_REF, TabletopConfig, plan_layout

YELLOW = "- yellow_cube_1: yellow cube at (0.415, 0.000, 0.645); on table_1; conf 1.00"
SEARCH_TOOLS = ["look", "find_objects", "get_object_image"]


# ====================================================================== the scene variant


def test_the_hidden_cube_variant_keeps_its_seeded_layout_clear_of_the_shadow() -> None:
    for seed in range(40):
        config = TabletopConfig(seed=seed, variant="hidden_cube")
        layout = plan_layout(config)
        refs = [o.ref for o in layout.objects]
        assert refs == ["red_cube_1", "green_cube_1", "blue_cube_1", HIDDEN_CUBE_REF]
        hidden = layout.objects[-1]
        assert layout.tray_position == (0.56, 0.0) and hidden.position == (0.415, 0.0)
        for other in layout.objects[:-1]:  # nothing else stands in the tray's shadow
            x, y = other.position
            assert not (x < 0.56 and abs(y) < 0.1), (seed, other)
    assert config.perceives_only_what_was_seen
    assert not TabletopConfig(seed=1).perceives_only_what_was_seen
    assert config.scene().scene() == config.scene()  # applying it twice changes nothing
    standard = plan_layout(TabletopConfig(seed=5))
    assert [o.ref for o in standard.objects] == ["red_cube_1", "green_cube_1", "blue_cube_1"]


@pytest.mark.sim
@pytest.mark.skipif(not HAS_SIM, reason="needs the [sim] extra")
def test_only_a_look_from_above_finds_the_hidden_cube() -> None:
    from worlds.tabletop.simulator import TabletopSim

    for seed in (0, 7):
        sim = TabletopSim(seed=seed, variant="hidden_cube")
        sim.connect()
        try:
            sim.observe()
            detected = {d.ref for d in sim.detections() if d.category == "object"}
            assert detected == {"red_cube_1", "green_cube_1", "blue_cube_1"}
            assert sim.execute("look", {"camera": "front"}).ok
            assert HIDDEN_CUBE_REF not in {d.ref for d in sim.detections()}
            assert sim.execute("look", {"camera": "top"}).ok
            assert HIDDEN_CUBE_REF in {d.ref for d in sim.detections()}
            assert sim.locate(HIDDEN_CUBE_REF) is not None  # ground truth always knew it
        finally:
            sim.disconnect()


# ====================================================================== the planner


def test_find_and_put_it_reads_as_a_put() -> None:
    goal = parse_instruction("find the yellow cube and put it in the tray")
    [clause] = goal.clauses
    assert (clause.subject.color, clause.subject.kind, clause.target.kind) == (
        "yellow",
        "cube",
        "tray",
    )
    phrase = search_phrase("find the yellow cube and report its ref, position and how sure")
    assert phrase is not None and (phrase.color, phrase.kind) == ("yellow", "cube")
    assert search_phrase("put the red cube in the tray") is None


def test_the_parent_delegates_only_what_find_objects_does_not_know() -> None:
    t = Transcript(
        "find the yellow cube and put it in the tray",
        tools=["pick", "place", "find_objects", "delegate", *SEARCH_TOOLS[::2]],
    )
    scene = brief(TABLE, TRAY)
    assert names(t.decide(scene)) == ("find_objects", {"label": "yellow cube"})
    t.result("[]")
    action = names(t.decide(scene))
    assert action is not None and action[0] == "delegate"
    assert action[1]["tools"] == ["look", "find_objects", "get_object_image"]
    assert "yellow cube" in action[1]["goal"]
    handoff = {
        "status": "completed",
        "summary": "found",
        "findings": [{"ref": HIDDEN_CUBE_REF, "label": "yellow cube", "position": [0.4, 0, 0.6]}],
    }
    t.result(json.dumps(handoff))
    assert names(t.decide(scene)) == ("pick", {"ref": HIDDEN_CUBE_REF})  # from the handoff


def test_a_failed_search_is_reported_not_retried() -> None:
    t = Transcript("find the yellow cube and put it in the tray", tools=["pick", "delegate"])
    scene = brief(TABLE, TRAY)
    assert names(t.decide(scene))[0] == "delegate"  # type: ignore[index]
    t.result(json.dumps({"status": "failed", "summary": "not found", "findings": []}))
    final = t.decide(scene)
    assert final.tool_calls == []
    assert "NOT done: no yellow cube in the scene" in final.text
    assert "Sub-agent search (failed): not found" in final.text


def _child(tools: list[str]) -> Transcript:
    t = Transcript("find the yellow cube and report its ref, position and how sure you are")
    t.tools = [
        ToolSpec(
            name=name,
            description="Take a fresh picture (cameras: front, top); moves nothing."
            if name == "look"
            else name,
            parameters={"type": "object", "properties": {"label": {"type": "string"}}},
        )
        for name in tools
    ]
    t.items.append(NoticeItem(text=SUBAGENT_CONTRACT.format(withheld="", schema="{}")))
    return t


def test_as_a_sub_agent_the_planner_searches_camera_by_camera() -> None:
    t = _child(SEARCH_TOOLS)
    scene = brief(TABLE, TRAY)
    assert names(t.decide(scene)) == ("find_objects", {"label": "yellow cube"})
    t.result("[]")
    assert names(t.decide(scene)) == ("look", {"camera": "front"})
    t.result("fresh image from front")
    assert names(t.decide(scene)) == ("find_objects", {"label": "yellow cube"})
    t.result("[]")
    assert names(t.decide(scene)) == ("look", {"camera": "top"})
    t.result("fresh image from top")
    found = brief(TABLE, TRAY, YELLOW)  # the top camera saw it: the Brief lists it now
    assert names(t.decide(found)) == ("get_object_image", {"ref": HIDDEN_CUBE_REF})
    t.result("yellow_cube_1 crop")
    answer = t.decide(found)
    assert answer.tool_calls == []
    handoff = json.loads(answer.text)
    assert handoff["status"] == "completed"
    assert handoff["findings"] == [
        {
            "ref": HIDDEN_CUBE_REF,
            "label": "yellow cube",
            "position": [0.415, 0.0, 0.645],
            "confidence": 1.0,
        }
    ]


def test_as_a_sub_agent_the_planner_admits_it_found_nothing() -> None:
    t = _child(["look", "find_objects"])
    scene = brief(TABLE, TRAY)
    for _ in range(10):
        response = t.decide(scene)
        if not response.tool_calls:
            break
        t.result("[]" if response.tool_calls[0].name == "find_objects" else "image")
    assert [c.name for i in t.items if i.kind == "assistant" for c in i.tool_calls] == [
        "find_objects",
        "look",
        "find_objects",
        "look",
        "find_objects",
    ]
    handoff = json.loads(response.text)
    assert handoff["status"] == "failed" and handoff["findings"] == []
    assert "no camera (front, top) shows the yellow cube" in handoff["unresolved"]


# ====================================================================== end to end


def _search_config() -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "model": {"provider": "planner"},
            "embodiment": "panda_tabletop",
            "driver": {"name": "sim.tabletop", "seed": 4, "variant": "hidden_cube"},
            "run": {"store": None, "max_turns": 30},
            "memory": {"enabled": False},
            "evaluation": {"required_tools": ["pick", "place"]},
            "subagents": {"enabled": True},
        }
    )


@pytest.mark.sim
@pytest.mark.skipif(not HAS_SIM, reason="needs the [sim] extra")
@pytest.mark.skipif(not HAS_SCENE, reason="needs the scene package (scene graph and Brief)")
def test_the_planner_finds_the_hidden_cube_through_a_sub_agent() -> None:
    with Harness.from_config(_search_config()) as h:
        events = list(h.run_stream("find the yellow cube and put it in the tray"))
        sim: Any = h.driver
        assert sim.support_of(HIDDEN_CUBE_REF) == ("inside", "tray_1")
    done = events[-1]
    assert done.status == "completed", done.termination_reason  # type: ignore[attr-defined]
    [started] = [e for e in events if isinstance(e, LaneStartedEvent)]
    assert started.tools == [
        "look",
        "update_task_notes",
        "recall",
        "search_archive",
        "find_objects",
        "get_object_image",
    ]
    lane = [e for e in events if e.task_id == started.task_id]
    calls = [c["name"] for e in lane if isinstance(e, ModelResponseEvent) for c in e.tool_calls]
    assert calls == ["find_objects", "look", "find_objects", "look", "get_object_image"]
    [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
    assert handoff.status == "completed"
    assert handoff.handoff["findings"][0]["ref"] == HIDDEN_CUBE_REF
    assert all(a.startswith(f"archive://{started.task_id}/") for a in handoff.handoff["evidence"])
    verdicts = [(e.tool, e.verdict.status) for e in events if isinstance(e, EvaluationEvent)]
    assert verdicts == [("pick", "success"), ("place", "success")]
    assert not any(isinstance(e, EvaluationEvent) and e.task_id == started.task_id for e in events)


@pytest.mark.sim
@pytest.mark.skipif(not HAS_SIM, reason="needs the [sim] extra")
@pytest.mark.skipif(not HAS_SCENE, reason="needs the scene package (scene graph and Brief)")
def test_harness_demo_shows_the_sub_agent(tmp_path: Path) -> None:
    done = run_cli(
        "demo", "find the yellow cube and put it in the tray", "--seed", "3", cwd=ROOT, tmp=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "scene: hidden_cube" in out
    assert "sub-agent lane_" in out and "handoff" in out
    assert "found yellow_cube_1" in out
    assert "ok   place: yellow_cube_1 rests in tray_1" in out
    assert "evaluator confirmed 2 action(s), reported 0 failure(s)" in out
