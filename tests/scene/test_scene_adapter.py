"""The scene adapter: query tools and their errors, evaluator confirmations, events, the
factory, and the whole thing inside a real Harness loop."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from embodiment.types import ActionResult, Observation
from harness import Harness, HarnessConfig
from harness.assembly.build import build_scene
from harness.config import SceneConfig, load_config
from harness.errors import ConfigError
from harness.events import SceneUpdateEvent, parse_event
from harness.messages import Verdict
from harness.providers import ScriptedModel, call, reply
from harness.tools import Tool, ToolContext, ToolOutput
from harness.world.observation import render_observation
from harness.world.scene import SceneAdapter
from scene import Detection, SceneGraph
from tests.scene_helpers import (
    TABLE_TOP,
    ListPerception,
    column_major,
    cube_on,
    look_at,
    perspective,
    table,
    tray,
)

W, H = 320, 240


def gl_spec() -> dict[str, object]:
    """A camera above the front edge of the table, looking at its middle."""
    view = look_at(np.array([1.3, 0.0, 1.4]), np.array([0.5, 0.0, TABLE_TOP]), np.eye(3)[2])
    return {
        "view": column_major(view),
        "projection": column_major(perspective(60.0, W / H, 0.01, 5.0)),
    }


def run_tool(adapter: SceneAdapter, name: str, **arguments: Any) -> ToolOutput:
    tool = next(t for t in adapter.tools() if t.name == name)
    return tool.invoke(tool.validate(arguments), ToolContext())


def scene_objects() -> list[Detection]:
    return [
        table(),
        tray(),
        cube_on("red_cube_1", (0.4, 0.0), color="red"),
        cube_on("blue_cube_1", (0.46, 0.0), color="blue"),
        cube_on("green_cube_1", (0.9, -0.3), color="green"),
    ]


def observation(t: float = 1.0, **state: Any) -> Observation:
    frame = np.full((H, W, 3), 90, dtype=np.uint8)
    base = {"ee_position": [0.3, 0.0, 1.0], "gripper_open": True, "holding": None}
    return Observation(timestamp=t, images={"front": frame}, state={**base, **state})


@pytest.fixture
def adapter() -> SceneAdapter:
    scene = SceneAdapter(SceneGraph(ListPerception(scene_objects())))
    scene.refresh(observation(cameras={"front": gl_spec()}), focus="")
    return scene


# --------------------------------------------------------------------------- find_objects


def test_find_objects_returns_the_contract_json(adapter: SceneAdapter) -> None:
    out = run_tool(adapter, "find_objects", label="cubes")
    records = json.loads(out.render())
    assert [r["ref"] for r in records] == ["red_cube_1", "blue_cube_1", "green_cube_1"]
    first = records[0]
    assert first["label"] == "red cube" and first["position"] == [0.4, 0.0, 0.74]
    assert first["relations"] == {"on": "table_1", "near": ["blue_cube_1", "tray_1"]}
    assert {"ref", "label", "position", "relations", "confidence", "stale"} <= set(first)
    red = json.loads(run_tool(adapter, "find_objects", attribute="red").render())
    assert [r["ref"] for r in red] == ["red_cube_1"]
    containers = json.loads(run_tool(adapter, "find_objects", attribute="container, open").render())
    assert [r["ref"] for r in containers] == ["tray_1"]
    near = json.loads(run_tool(adapter, "find_objects", near="red_cube_1", within_m=0.05).render())
    assert [(r["ref"], r["distance_m"]) for r in near] == [("blue_cube_1", 0.02)]
    assert json.loads(run_tool(adapter, "find_objects", label="giraffe").render()) == []
    assert len(json.loads(run_tool(adapter, "find_objects", limit=2).render())) == 2


def test_query_tools_name_close_matches_for_unknown_refs(adapter: SceneAdapter) -> None:
    out = run_tool(adapter, "find_objects", near="red_cub_1")
    assert out.is_error and out.error_kind == "unknown_ref"
    assert "unknown object 'red_cub_1'" in out.text and "red_cube_1" in out.text
    out = run_tool(adapter, "get_object_relations", ref="red cube")
    assert out.is_error and "close matches: red_cube_1" in out.text
    out = run_tool(adapter, "get_object_image", ref="zebra")
    assert out.is_error and "known objects (5): blue_cube_1, green_cube_1" in out.text
    assert "use find_objects" in out.text


def test_get_object_relations(adapter: SceneAdapter) -> None:
    data = json.loads(run_tool(adapter, "get_object_relations", ref="table_1").render())
    assert data["relations"]["supports"] == ["blue_cube_1", "green_cube_1", "red_cube_1", "tray_1"]
    data = json.loads(
        run_tool(adapter, "get_object_relations", ref="red_cube_1", relation="on").render()
    )
    assert data == {
        "ref": "red_cube_1",
        "label": "red cube",
        "relations": {"on": "table_1"},
        "origins": {"on": "geometry"},
    }
    tool = next(t for t in adapter.tools() if t.name == "get_object_relations")
    with pytest.raises(Exception, match="relation"):
        tool.validate({"ref": "red_cube_1", "relation": "under"})


# --------------------------------------------------------------------------- images


def test_get_object_image_crops_with_calibration(adapter: SceneAdapter) -> None:
    out = run_tool(adapter, "get_object_image", ref="red_cube_1")
    assert not out.is_error and len(out.images) == 1
    image = out.images[0]
    assert "crop of camera 'front'" in out.text and image.label == "red_cube_1 (front)"
    assert image.width < W and image.height < H


def test_get_object_image_falls_back_to_the_whole_frame() -> None:
    graph = SceneGraph(ListPerception(scene_objects()))
    graph.apply(scene_objects(), timestamp=0.0)
    scene = SceneAdapter(graph)
    out = run_tool(scene, "get_object_image", ref="red_cube_1")
    assert out.is_error and out.error_kind == "no_image"
    scene.refresh(observation(), focus="")
    out = run_tool(scene, "get_object_image", ref="red_cube_1")
    assert not out.is_error and (out.images[0].width, out.images[0].height) == (W, H)
    assert "no camera calibration (state['cameras'])" in out.text
    out = run_tool(scene, "get_object_image", ref="red_cube_1", camera="wrist")
    assert out.is_error and out.error_kind == "unknown_camera" and "front" in out.text
    scene.refresh(observation(t=2.0, cameras={"front": {"fx": 1.0}}), focus="")
    out = run_tool(scene, "get_object_image", ref="red_cube_1")
    assert "cannot crop (camera 'front'" in out.text and "fx/fy/cx/cy" in out.text


# --------------------------------------------------------------------------- confirmations


def test_evaluator_verdicts_update_the_graph_at_once(adapter: SceneAdapter) -> None:
    graph = adapter.graph
    adapter.on_verdict("pick", {"ref": "red_cube_1"}, Verdict(status="failure"))
    assert graph.held() == [] and adapter.last_targets == ["red_cube_1"]
    adapter.on_verdict("pick", {"ref": "red_cube_1"}, Verdict(status="success"))
    assert graph.held() == ["red_cube_1"]
    # place without naming the object: the one held is placed
    adapter.on_verdict("place", {"in": "tray_1"}, Verdict(status="success"))
    assert graph.relations_of("red_cube_1") == {"in": "tray_1"}
    assert adapter.last_targets == ["red_cube_1", "tray_1"]
    adapter.on_verdict(
        "place", {"ref": "blue_cube_1", "target": "red_cube_1"}, Verdict(status="success")
    )
    assert graph.relations_of("blue_cube_1")["on"] == "red_cube_1"  # not a container: on
    adapter.on_verdict("wave", {"ref": "green_cube_1"}, Verdict(status="success"))
    assert adapter.last_targets == ["blue_cube_1", "red_cube_1"]  # unconfigured tools: ignored


def test_refresh_events_carry_diff_snapshot_and_warnings() -> None:
    perception = ListPerception(scene_objects())
    scene = SceneAdapter(
        SceneGraph(perception), config=SceneConfig(snapshot_interval=2, brief_max_tokens=400)
    )
    first = scene.refresh(observation(t=1.0), focus="red cube")
    assert isinstance(first.event, SceneUpdateEvent)
    assert "red_cube_1" in first.event.added and first.event.snapshot is not None
    assert first.event.objects == 5 and first.event.brief_tokens == scene.estimate(first.brief)
    assert scene.refresh(observation(t=2.0), focus="red cube").event is None  # nothing changed
    perception.detections[2] = cube_on("red_cube_1", (0.6, 0.2), color="red")
    moved = scene.refresh(observation(t=3.0), focus="red cube").event
    assert moved is not None and moved.changed == ["red_cube_1"] and moved.snapshot is None
    assert parse_event(moved.model_dump_json()) == moved
    perception.fail = RuntimeError("camera unplugged")
    failed = scene.refresh(observation(t=4.0), focus="red cube")
    assert failed.event is not None and failed.event.snapshot is not None  # 3rd event
    assert "perception failed this turn (RuntimeError: camera unplugged)" in failed.brief
    assert failed.event.warnings[0].startswith("perception failed")


# --------------------------------------------------------------------------- building


class StaticPerception:
    def perceive(self, observation: Any) -> list[Detection]:
        return scene_objects()


def test_build_scene_from_config_and_clear_errors(config: HarnessConfig) -> None:
    assert build_scene(config) is None  # no driver, no perception
    config.scene.perception = "tests.scene.test_scene_adapter:StaticPerception"
    scene = build_scene(config)
    assert scene is not None and isinstance(scene.graph.perception, StaticPerception)
    for path, message in (
        ("tests.scene.test_scene_adapter", "expected 'package.module:function'"),
        ("tests.nowhere:X", "cannot import"),
        ("tests.scene.test_scene_adapter:Missing", "has no attribute"),
        ("tests.scene.test_scene_adapter:scene_objects", "is not a Perception"),
    ):
        config.scene.perception = path
        with pytest.raises(ConfigError, match=message) as info:
            build_scene(config)
        assert info.value.key == "scene.perception"
    config.scene.enabled = False
    assert build_scene(config) is None


def test_scene_config_keys_are_validated(tmp_path: Any) -> None:
    path = tmp_path / "h.yaml"
    path.write_text("scene:\n  confirm_tools: {pick: grab}\n")
    with pytest.raises(ConfigError, match=r"scene\.confirm_tools\.pick"):
        load_config(path)


def test_observation_text_leaves_out_calibration() -> None:
    text = render_observation(observation(cameras={"front": gl_spec()}, frames={"x": []}))
    assert "ee_position" in text and "projection" not in text and "frames" not in text


# --------------------------------------------------------------------------- the loop


class Tabletop:
    """A small tabletop driver: objects are ground truth, but its camera cannot see into
    the tray (so only the evaluator knows what was placed there)."""

    def __init__(self) -> None:
        self.objects = {d.ref: d for d in scene_objects()}
        self.t = 0.0
        self.stops = 0

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None:
        self.stops += 1

    def observe(self) -> Observation:
        self.t += 0.5
        return observation(t=self.t, cameras={"front": gl_spec()})

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        cube = self.objects[arguments["ref"]]
        x, y, _ = self.objects[arguments["target"]].position
        self.objects[cube.ref] = cube.model_copy(update={"position": (x, y, TABLE_TOP + 0.024)})
        return ActionResult(ok=True, message=f"placed {cube.ref}")

    def perception(self) -> Tabletop:
        return self

    def perceive(self, observation: Any) -> list[Detection]:
        tx, ty, _ = self.objects["tray_1"].position
        return [
            d
            for d in self.objects.values()
            if d.label != "cube" or abs(d.position[0] - tx) > 0.1 or abs(d.position[1] - ty) > 0.075
        ]


class PlaceEvaluator:
    def __init__(self, driver: Tabletop) -> None:
        self.driver = driver

    def evaluate(self, *, tool: Tool, arguments: Mapping[str, Any], **_: Any) -> Verdict:
        x, y, _ = self.driver.objects[arguments["ref"]].position
        tx, ty, _ = self.driver.objects[arguments["target"]].position
        ok = abs(x - tx) < 0.1 and abs(y - ty) < 0.075
        return Verdict(status="success" if ok else "failure", evidence="checked", evaluator="test")


def test_scene_in_a_real_harness_loop(config: HarnessConfig) -> None:
    driver = Tabletop()
    config.evaluation.required_tools = ["place"]

    def place(ref: str, target: str) -> str:
        """Place an object on or in a target.

        Args:
            ref: The object.
            target: Where to put it.
        """
        return driver.execute("place", {"ref": ref, "target": target}).message

    model = ScriptedModel(
        [
            call("find_objects", label="red cube"),
            call("get_object_image", ref="red_cube_1"),
            call("get_object_relations", ref="red_cub_1"),
            call("place", ref="red_cube_1", target="tray_1"),
            reply("the red cube is in the tray"),
        ]
    )
    with Harness.from_config(
        config, model=model, driver=driver, evaluator=PlaceEvaluator(driver), tools=[place]
    ) as h:
        assert isinstance(h.scene, SceneAdapter)  # built by the factory from driver.perception()
        events = list(h.run_stream("put the red cube in the tray"))
    model.assert_consumed()
    assert events[-1].type == "done" and events[-1].status == "completed"
    tools_listed = next(e for e in events if e.type == "tools_listed")
    assert {"find_objects", "get_object_relations", "get_object_image"} <= set(tools_listed.tools)

    first = model.requests[0].refreshed
    assert first is not None and first.brief.startswith("Scene (world frame, metres; t=0.500)")
    lines = first.brief.splitlines()
    assert lines[3].startswith("- red_cube_1: red cube at (0.400, 0.000, 0.740)")  # named first
    assert lines[4].startswith("- tray_1: tray [container, open]")

    results = [e for e in events if e.type == "tool_result"]
    assert json.loads(results[0].text)[0]["ref"] == "red_cube_1"
    assert "crop of camera 'front'" in results[1].text and len(results[1].images) == 1
    crop_sha = results[1].images[0]
    assert crop_sha in {i.sha256 for i in model.requests[2].refreshed.images}  # next call only
    assert crop_sha not in {i.sha256 for i in model.requests[3].refreshed.images}
    assert results[2].is_error and "close matches: red_cube_1" in results[2].text
    assert results[3].evaluation is not None and results[3].evaluation.status == "success"

    last = model.requests[4].refreshed.brief
    red_line = next(line for line in last.splitlines() if line.startswith("- red_cube_1:"))
    assert "; in tray_1;" in red_line and "confirmed by evaluator" in red_line
    assert "contains red_cube_1" in last

    updates = [e for e in events if isinstance(e, SceneUpdateEvent)]
    assert updates[0].snapshot is not None and "red_cube_1" in updates[0].added
    assert updates[0].objects == 5 and updates[0].turn == 1
    placed = updates[-1]
    assert "red_cube_1" in placed.changed and placed.turn == 5
    added = [(e["source"], e["relation"], e["target"]) for e in placed.diff["relations_added"]]
    assert ("red_cube_1", "inside", "tray_1") in added
    for event in updates:
        assert parse_event(event.model_dump_json()) == event
