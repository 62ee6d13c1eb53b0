"""The scene graph: geometric relations, association, staleness, confirmations, frames,
snapshots and diffs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embodiment.types import Observation
from scene import Detection, RelationTolerances, SceneGraph, SceneSnapshot, UnknownRefError, diff
from scene.synthetic import synthetic_scene
from tests.scene_helpers import (
    GRIPPER_STATE,
    TABLE_TOP,
    ListPerception,
    build,
    cube_on,
    det,
    table,
    tray,
)
from tests.tiers import examples

# --------------------------------------------------------------------------- relations


def test_relations_on_a_hand_built_tabletop() -> None:
    g = build(
        [
            table(),
            tray(),
            # in the tray: its bottom sits 4 mm above the table top, on the tray floor
            det("cube_in", "cube", (0.5, 0.2, TABLE_TOP + 0.004 + 0.02)),
            cube_on("cube_b", (0.3, -0.2)),
            cube_on("cube_c", (0.3, -0.2), top=TABLE_TOP + 0.04),  # stacked on cube_b
            det("cube_air", "cube", (0.7, -0.2, 0.9)),  # hovering
            cube_on("cube_off", (1.2, 0.0)),  # beyond the table's edge (x 1.1)
            cube_on("cube_f", (0.44, -0.2)),  # 10 cm gap from cube_b
        ]
    )
    rel = g.relations_of
    assert rel("tray_1") == {"on": "table_1", "contains": ["cube_in"]}
    assert rel("cube_in") == {"in": "tray_1"}  # never also "on table_1"
    assert rel("cube_b")["on"] == "table_1" and rel("cube_b")["supports"] == ["cube_c"]
    assert rel("cube_c")["on"] == "cube_b"  # the highest support wins
    assert "on" not in rel("cube_air") and "on" not in rel("cube_off")
    assert rel("cube_b")["near"] == ["cube_f"]  # not cube_c: it is on cube_b
    assert rel("cube_f")["near"] == ["cube_b", "cube_c"]  # equal gaps: by ref
    assert rel("cube_c")["near"] == ["cube_f"]
    assert sorted(rel("table_1")["supports"]) == ["cube_b", "cube_f", "tray_1"]
    assert "near" not in rel("table_1")  # surfaces are never "near"


@pytest.mark.parametrize(
    ("lift", "on"),
    [(0.0, True), (0.019, True), (-0.019, True), (0.021, False), (-0.021, False)],
)
def test_on_respects_contact_tolerance(lift: float, on: bool) -> None:
    g = build([table(), det("c", "cube", (0.5, 0.0, TABLE_TOP + 0.02 + lift))])
    assert (g.relations_of("c").get("on") == "table_1") is on


@pytest.mark.parametrize(("overhang", "on"), [(0.009, True), (0.011, False)])
def test_on_respects_footprint_margin(overhang: float, on: bool) -> None:
    edge = 0.5 + 0.6  # the table spans x -0.1 .. 1.1
    g = build([table(), cube_on("c", (edge + overhang, 0.0))])
    assert (g.relations_of("c").get("on") == "table_1") is on


@pytest.mark.parametrize(("gap", "near"), [(0.149, True), (0.151, False)])
def test_near_is_the_gap_between_boxes(gap: float, near: bool) -> None:
    g = build([table(), cube_on("a", (0.3, 0.0)), cube_on("b", (0.3 + 0.04 + gap, 0.0))])
    assert ("b" in g.relations_of("a").get("near", [])) is near
    tight = SceneGraph(tolerances=RelationTolerances(near_m=0.05))
    tight.apply(
        [table(), cube_on("a", (0.3, 0.0)), cube_on("b", (0.3 + 0.04 + gap, 0.0))],
        timestamp=1,
    )
    assert "near" not in tight.relations_of("a")


def test_innermost_container_and_rim() -> None:
    bin_ = det("bin_1", "bin", (0.5, 0.0, TABLE_TOP + 0.1), (0.4, 0.4, 0.2), category="container")
    box = det("box_1", "box", (0.5, 0.0, TABLE_TOP + 0.005 + 0.04), (0.1, 0.1, 0.08))
    box = box.model_copy(update={"category": "container"})
    inner = det("cube_1", "cube", (0.5, 0.0, TABLE_TOP + 0.01 + 0.02))
    # a cube resting on the tray's rim level is on the tray, not in it
    rim = det("cube_rim", "cube", (0.9, 0.25, TABLE_TOP + 0.03 + 0.02))
    g = build([table(), bin_, box, inner, tray(xy=(0.9, 0.25)), rim])
    assert g.relations_of("cube_1")["in"] == "box_1"
    assert g.relations_of("box_1")["in"] == "bin_1"
    assert g.relations_of("cube_rim") == {"on": "tray_1"}


def test_holding_from_state_and_geometric_fallback() -> None:
    scene = [table(), cube_on("red_cube_1", (0.3, 0.0)), cube_on("blue_cube_1", (0.6, 0.0))]
    held = {"ee_position": [0.3, 0.0, 0.9], "gripper_open": False, "holding": "red_cube_1"}
    g = build(scene, state=held)
    assert g.held() == ["red_cube_1"]
    assert g.relations_of("red_cube_1") == {"held_by": "gripper"}  # not on, not near
    assert g.robot().holding == ["red_cube_1"] and g.robot().gripper_open is False
    # the held object (not seen this time) follows the gripper
    g.apply([table(), scene[2]], timestamp=2.0, state={**held, "ee_position": [0.2, 0.1, 1.0]})
    assert g.node("red_cube_1").position == (0.2, 0.1, 1.0)
    assert not g.node("red_cube_1").stale

    # no "holding" key: a closed gripper around an object holds it
    fallback = build(scene, state={"ee_position": [0.6, 0.0, TABLE_TOP + 0.03]})
    assert fallback.held() == []  # gripper state unknown: no guess
    closed = {"ee_position": [0.6, 0.0, TABLE_TOP + 0.03], "gripper_open": False}
    assert build(scene, state=closed).held() == ["blue_cube_1"]
    opened = {"ee_position": [0.6, 0.0, TABLE_TOP + 0.03], "gripper_open": True}
    assert build(scene, state=opened).held() == []


def test_perception_asserted_relations_override_geometry() -> None:
    # a detector that knows the cube is in the tray although its box says otherwise
    asserted = cube_on("cube_1", (0.0, 0.0), relations=[("in", "tray_1"), ("near", "table_1")])
    g = build([table(), tray(), asserted, cube_on("cube_2", (0.02, 0.1), relations=[("on", "x")])])
    assert g.relations_of("cube_1")["in"] == "tray_1"
    assert "on" not in g.relations_of("cube_1")
    assert g.relation_origins("cube_1")["in"] == "perception"
    assert g.relations_of("table_1")["near"] == ["cube_1"]  # asserted both ways
    assert g.relation_origins("table_1")["near"] == "perception"


def test_a_thing_whose_supports_are_stated_gets_none_from_its_box() -> None:
    """A simulator that judges support by its own predicates names every support a thing
    has; where it names none (a bowl leaning on a plate's rim: LIBERO's On denies it), the
    box over the table is not made an "on" by geometry. Said again without the flag, the
    geometry's "on" comes back; a later detection's flag replaces the earlier one's."""
    stated = cube_on("cube_1", (0.5, 0.0), supports_stated=True)
    g = build([table(), stated])
    assert "on" not in g.relations_of("cube_1")
    assert "supports" not in g.relations_of("table_1")
    named = stated.model_copy(update={"relations": [("on", "table_1")]})
    g.apply([table(), named], timestamp=2.0, state=GRIPPER_STATE)
    assert g.relations_of("cube_1")["on"] == "table_1"
    assert g.relation_origins("cube_1")["on"] == "perception"
    g.apply([table(), cube_on("cube_1", (0.5, 0.0))], timestamp=3.0, state=GRIPPER_STATE)
    assert g.relations_of("cube_1")["on"] == "table_1"
    assert g.relation_origins("cube_1")["on"] == "geometry"
    g.apply([table(), stated], timestamp=4.0, state=GRIPPER_STATE)
    assert "on" not in g.relations_of("cube_1")


# --------------------------------------------------------------------------- association


def _unnamed(label: str, color: str, xy: tuple[float, float]) -> Detection:
    return cube_on(None, xy, color=color).model_copy(update={"label": label})


def test_association_by_label_and_distance() -> None:
    g = SceneGraph(association_gate_m=0.1)
    first = g.apply(
        [table(), _unnamed("cube", "red", (0.3, 0.0)), _unnamed("cube", "blue", (0.6, 0.0))],
        timestamp=1.0,
    )
    assert sorted(first.created) == ["blue_cube_1", "red_cube_1", "table_1"]
    # moved 3 cm: same objects; far red cube: a new one; a green cube: new
    second = g.apply(
        [
            table(),
            _unnamed("cube", "red", (0.33, 0.0)),
            _unnamed("cube", "blue", (0.6, 0.02)),
            _unnamed("cube", "red", (0.9, 0.3)),
        ],
        timestamp=2.0,
    )
    assert sorted(second.matched_by_label) == ["blue_cube_1", "red_cube_1"]
    assert second.matched_by_ref == ["table_1"]
    assert second.created == ["red_cube_2"]
    assert g.node("red_cube_1").position[0] == pytest.approx(0.33)


def test_association_is_greedy_nearest_and_respects_colour() -> None:
    g = SceneGraph()
    g.apply(
        [table(), _unnamed("cube", "red", (0.3, 0.0)), _unnamed("cube", "red", (0.36, 0.0))],
        timestamp=1.0,
    )
    a, b = g.node("red_cube_1").position, g.node("red_cube_2").position
    # both moved 2 cm right: each must stay itself, not swap
    g.apply(
        [table(), _unnamed("cube", "red", (0.38, 0.0)), _unnamed("cube", "red", (0.32, 0.0))],
        timestamp=2.0,
    )
    assert g.node("red_cube_1").position[0] == pytest.approx(a[0] + 0.02)
    assert g.node("red_cube_2").position[0] == pytest.approx(b[0] + 0.02)
    # a blue cube where a red one was is another object
    report = g.apply([table(), _unnamed("cube", "blue", (0.32, 0.0))], timestamp=3.0)
    assert report.created == ["blue_cube_1"]


def test_refs_are_never_reused_and_bad_detections_are_rejected() -> None:
    g = SceneGraph()
    g.apply([_unnamed("cube", "red", (0.3, 0.0))], timestamp=1.0)
    g.remove("red_cube_1")
    report = g.apply(
        [
            _unnamed("cube", "red", (0.3, 0.0)),
            det("Odd-Ref 7", "cube", (0, 0, 0)),
            det("dup", "cube", (0, 0, 0)),
            det("dup", "cube", (1, 0, 0)),
            det("nan", "cube", (math.nan, 0, 0)),
        ],
        timestamp=2.0,
    )
    assert "red_cube_2" in report.created and "red_cube_1" not in g
    assert "odd_ref_7" in g  # refs are normalised to [a-z0-9_]+
    assert any("dup" in r and "twice" in r for r in report.rejected)
    assert any("nan" in r and "non-finite" in r for r in report.rejected)
    assert "nan" not in g


# --------------------------------------------------------------------------- staleness


def test_unseen_objects_become_stale_not_deleted_and_recover() -> None:
    perception = ListPerception([table(), cube_on("red_cube_1", (0.3, 0.0), color="red")])
    g = SceneGraph(perception, stale_after_s=30.0)
    g.update(Observation(timestamp=100.0, state=GRIPPER_STATE))
    g.take_changes()
    perception.detections = [table()]  # the cube is occluded
    assert g.update(Observation(timestamp=129.0, state=GRIPPER_STATE)).newly_stale == []
    report = g.update(Observation(timestamp=131.0, state=GRIPPER_STATE))
    assert report.newly_stale == ["red_cube_1"]
    node = g.node("red_cube_1")
    assert node.stale and node.last_seen == 100.0 and "red_cube_1" in g
    assert g.relations_of("red_cube_1")["on"] == "table_1"  # last known relations kept
    changes = g.take_changes()
    assert changes.stale == ["red_cube_1"] and changes.removed == []
    perception.detections = [table(), cube_on("red_cube_1", (0.3, 0.0), color="red")]
    g.update(Observation(timestamp=140.0, state=GRIPPER_STATE))
    assert not g.node("red_cube_1").stale
    assert g.take_changes().refreshed == ["red_cube_1"]


def test_perception_failure_keeps_the_graph_and_reports() -> None:
    perception = ListPerception([table()])
    g = SceneGraph(perception)
    g.update(Observation(timestamp=1.0, state=GRIPPER_STATE))
    perception.fail = TimeoutError("detector timed out")
    report = g.update(Observation(timestamp=2.0, state={**GRIPPER_STATE, "ee_position": [0, 0, 1]}))
    assert report.perception_error == "TimeoutError: detector timed out"
    assert "table_1" in g and g.robot().gripper == (0.0, 0.0, 1.0)


# --------------------------------------------------------------------------- confirmations


def test_confirmed_pick_and_place_update_at_once_until_observed_again() -> None:
    cube = cube_on("red_cube_1", (0.3, 0.0), color="red")
    perception = ListPerception([table(), tray(), cube])
    g = SceneGraph(perception)
    g.update(Observation(timestamp=1.0, state={"ee_position": [0.3, 0.0, 0.8]}))
    g.confirm_pick("red_cube_1")
    assert g.held() == ["red_cube_1"] and "on" not in g.relations_of("red_cube_1")
    assert g.node("red_cube_1").position == (0.3, 0.0, 0.8)
    g.confirm_place("red_cube_1", target="tray_1")
    assert g.held() == []
    assert g.relations_of("red_cube_1") == {"in": "tray_1"}
    assert g.relation_origins("red_cube_1")["in"] == "evaluator"
    assert g.node("red_cube_1").provenance == "evaluator"
    assert g.relations_of("tray_1")["contains"] == ["red_cube_1"]
    # the detector cannot see into the tray: the confirmation stands
    perception.detections = [table(), tray()]
    g.update(Observation(timestamp=2.0))
    assert g.relations_of("red_cube_1") == {"in": "tray_1"}
    # seen again on the table: the observation wins
    perception.detections = [table(), tray(), cube_on("red_cube_1", (0.8, -0.2), color="red")]
    g.update(Observation(timestamp=3.0))
    assert g.relations_of("red_cube_1")["on"] == "table_1"
    assert g.relation_origins("red_cube_1")["on"] == "geometry"


def test_confirmations_reject_unknown_refs_with_suggestions() -> None:
    g = build([table(), cube_on("red_cube_1", (0.3, 0.0), color="red")])
    with pytest.raises(UnknownRefError) as info:
        g.confirm_place("red_cube_1", target="tray_9")
    assert info.value.ref == "tray_9"
    with pytest.raises(UnknownRefError) as info:
        g.confirm_pick("red_cube")
    assert "red_cube_1" in info.value.suggestions and "close matches" in str(info.value)
    assert g.suggest("red cube") == ["red_cube_1"]


def test_release_and_open_confirmations() -> None:
    state = {"ee_position": [0.3, 0.0, TABLE_TOP + 0.02], "gripper_open": False}
    g = build([table(), cube_on("c", (0.3, 0.0)), tray()], state=state)
    assert g.held() == ["c"]  # geometric: a closed gripper around it
    g.confirm_pick("c")
    assert g.relation_origins("c")["held_by"] == "evaluator"
    assert g.confirm_release() == ["c"]
    assert g.held() == [] and g.robot().gripper_open is True
    assert g.relations_of("c")["on"] == "table_1"
    g.confirm_open("tray_1", False)
    assert g.node("tray_1").is_open is False


# --------------------------------------------------------------------------- frames


def test_detections_in_declared_frames_are_moved_into_world() -> None:
    shelf = np.eye(4)
    shelf[:3, 3] = [1.0, 2.0, 0.5]
    # a 90 degree turn about z: the frame's +x is world +y
    shelf[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
    g = SceneGraph()
    report = g.apply(
        [
            det("a", "cube", (0.1, 0.0, 0.0), frame="shelf", orientation=(0, 0, 0, 1)),
            det("b", "cube", (0.1, 0.0, 0.0), frame="nowhere"),
        ],
        timestamp=1.0,
        state={"frames": {"shelf": shelf.tolist()}},
    )
    a = g.node("a")
    assert a.frame == "world" and a.position == pytest.approx((1.0, 2.1, 0.5))
    assert a.orientation == pytest.approx((0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4)))
    assert g.node("b").frame == "nowhere"
    assert any("nowhere" in r for r in report.rejected)


# --------------------------------------------------------------------------- snapshot, diff


def test_snapshot_round_trips_through_json() -> None:
    g = build(synthetic_scene(60, seed=3), state={**GRIPPER_STATE, "holding": None})
    g.confirm_place("red_cube_1", target="tray_1") if "red_cube_1" in g else None
    snap = g.snapshot()
    text = snap.model_dump_json()
    back = SceneSnapshot.model_validate_json(text)
    assert back == snap
    rebuilt = SceneGraph.from_snapshot(back)
    assert rebuilt.snapshot() == snap
    assert json.loads(text)["format"] == "scene-graph/1"
    # refs stay unique after a restore
    rebuilt.apply([cube_on(None, (5.0, 5.0), color="red")], timestamp=snap.time + 1)
    assert len({n.ref for n in rebuilt.nodes()}) == len(snap.nodes) + 1


def test_diff_reports_additions_moves_relations_and_ignores_noise() -> None:
    g = build([table(), tray(), cube_on("c1", (0.3, 0.0)), cube_on("c2", (0.8, 0.0))])
    before = g.snapshot()
    assert diff(before, before).empty
    g.apply(
        [
            table(),
            tray(),
            cube_on("c1", (0.3004, 0.0)),  # 0.4 mm: below display resolution
            det("c2", "cube", (0.5, 0.2, TABLE_TOP + 0.024)),  # moved into the tray
            cube_on("c3", (0.1, 0.1)),
        ],
        timestamp=2.0,
    )
    g.remove("c1")
    after = g.snapshot()
    d = diff(before, after)
    assert [n.ref for n in d.added] == ["c3"]
    assert d.removed == ["c1"]
    assert [c.ref for c in d.changed] == ["c2"]
    assert set(d.changed[0].fields) == {"position"}
    added = {(e.source, e.relation, e.target) for e in d.relations_added}
    removed = {(e.source, e.relation, e.target) for e in d.relations_removed}
    assert ("c2", "inside", "tray_1") in added and ("c2", "on", "table_1") in removed
    assert d.changed_refs() == ["c2"]
    assert diff(None, after).added == after.nodes


@settings(max_examples=examples(25), deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["move", "drop", "add", "confirm", "remove", "stale"]),
            st.integers(0, 50),
        ),
        min_size=1,
        max_size=8,
    ),
    seed=st.integers(0, 1000),
)
def test_change_log_agrees_with_snapshot_diff(steps: list[tuple[str, int]], seed: int) -> None:
    """take_changes() (the per-turn log) says what diff() of full snapshots says."""
    detections = synthetic_scene(30, seed=seed)
    perception = ListPerception(detections)
    g = SceneGraph(perception, stale_after_s=5.0)
    t = 0.0
    g.update(Observation(timestamp=t, state=GRIPPER_STATE))
    g.take_changes()
    for action, k in steps:
        before = g.snapshot()
        t += 1.0
        current = perception.detections
        if action == "move" and current:
            i = k % len(current)
            x, y, z = current[i].position
            current[i] = current[i].model_copy(update={"position": (x + 0.05, y, z)})
        elif action == "drop" and current:
            del current[k % len(current)]
        elif action == "add":
            current.append(cube_on(None, (k / 10, -3.0), color="red"))
        elif action == "stale":
            t += 10.0
        objects = [n.ref for n in g.objects()]
        if action == "confirm" and objects and "tray_1" in g:
            g.confirm_place(objects[k % len(objects)], target="tray_1", timestamp=t)
        elif action == "remove" and objects:
            g.remove(objects[k % len(objects)])
        g.update(Observation(timestamp=t, state=GRIPPER_STATE))
        logged = g.take_changes()
        full = diff(before, g.snapshot())
        assert [n.ref for n in logged.added] == [n.ref for n in full.added]
        assert logged.removed == full.removed
        assert [(c.ref, sorted(c.fields)) for c in logged.changed] == [
            (c.ref, sorted(c.fields)) for c in full.changed
        ]
        assert logged.stale == full.stale and logged.refreshed == full.refreshed
        assert [e.key for e in logged.relations_added] == [e.key for e in full.relations_added]
        assert [e.key for e in logged.relations_removed] == [e.key for e in full.relations_removed]


def test_malformed_robot_state_is_reported_not_guessed() -> None:
    g = SceneGraph()
    report = g.apply(
        [table()],
        timestamp=1.0,
        state={"ee_position": [0.1, "x", 0.2], "gripper_open": "yes", "holding": ["ghost_1"]},
    )
    assert "gripper" not in g
    assert any(r.startswith("ee_position: expected 3 finite numbers") for r in report.rejected)
    assert any(r.startswith("gripper_open: expected true or false") for r in report.rejected)
    report = g.apply([table()], timestamp=2.0, state={**GRIPPER_STATE, "holding": "ghost_1"})
    assert "holding: 'ghost_1' is not a known object" in report.rejected
    assert g.held() == []


def test_a_perceived_gripper_says_what_it_holds() -> None:
    """The built-in simulator's convention: the gripper is a detection that asserts what it
    holds (nothing, when it holds nothing), and the state names the gripper's opening."""

    def gripper(holding: str | None) -> Detection:
        return det(
            "gripper",
            "gripper",
            (0.3, 0.0, TABLE_TOP + 0.03),
            (0.02, 0.2, 0.05),
            category="robot_part",
            provenance="ground_truth",
            relations=[("holding", holding)] if holding else [],
        )

    cube = cube_on("red_cube_1", (0.3, 0.0), color="red")
    g = SceneGraph()
    g.apply(
        [table(), cube, gripper("red_cube_1")], timestamp=1.0, state={"gripper": "partly closed"}
    )
    assert g.held() == ["red_cube_1"] and g.robot().gripper_open is False
    assert g.relation_origins("red_cube_1")["held_by"] == "perception"
    # a failed grasp: closed fingers right at the cube, but the gripper reports nothing held
    g.apply([table(), cube, gripper(None)], timestamp=2.0, state={"gripper": "closed"})
    assert g.held() == [] and g.relations_of("red_cube_1")["on"] == "table_1"
    g.apply([table(), cube, gripper(None)], timestamp=3.0, state={"gripper": "open"})
    assert g.robot().gripper_open is True
    report = g.apply([table()], timestamp=4.0, state={"gripper": "ajar"})
    assert "gripper: expected 'open' or 'closed', got 'ajar'" in report.rejected


def test_held_asserted_by_the_object_survives_the_gripper_being_seen() -> None:
    cube = cube_on("red_cube_1", (0.3, 0.0), relations=[("held", "gripper")])
    seen_gripper = det("gripper", "gripper", (0.3, 0.0, 0.8), None, category="robot_part")
    g = SceneGraph()
    for t in (1.0, 2.0):
        g.apply([table(), cube, seen_gripper], timestamp=t)
        assert g.held() == ["red_cube_1"]
        assert g.relation_origins("red_cube_1")["held_by"] == "perception"
