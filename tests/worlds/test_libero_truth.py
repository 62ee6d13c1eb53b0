"""Issue 40, item 2: every physical skill of the LIBERO world is judged after it runs, by
LIBERO's own predicates, and a report never claims what LIBERO denies.

The deployment is the eval's own (worlds/libero/eval.yaml: the offline planner, LIBERO's
goal predicates as the task check) on libero_goal. Skills are sabotaged so that they move
but miss (a push that stops short of the plate, a knob left at exactly 0, where LIBERO's
``TurnOff`` needs a value below 0); the oracle is the env's own ``check_success()`` and
predicates read here directly, never through our code.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness import Harness
from harness.events import DoneEvent, EvaluationEvent
from worlds.libero import libero_available
from worlds.libero.suites import DEFAULT_CONFIG

pytestmark = [
    pytest.mark.long,
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]

PUSH_TASK, STOVE_TASK = 5, 7  # "push the plate to the front of the stove", "turn on the stove"


@pytest.fixture(scope="module")
def sim() -> Any:
    from worlds.libero.driver import LiberoSim

    world = LiberoSim(suite="libero_goal", task=PUSH_TASK, max_steps_per_action=120)
    world.connect()
    yield world
    world.disconnect()


def episode(sim: Any, instruction: str) -> list[Any]:
    overrides = ["run.store=null", "memory.enabled=false", "run.max_turns=12"]
    with Harness.from_config(DEFAULT_CONFIG, overrides=overrides, driver=sim) as harness:
        return list(harness.run_stream(instruction))


def done_of(events: list[Any]) -> DoneEvent:
    return next(e for e in events if isinstance(e, DoneEvent))


def test_the_eval_deployment_judges_every_physical_skill() -> None:
    from harness.config.files import resolve_config
    from worlds.libero.actions import libero_actions

    physical = {s.name for s in libero_actions(cameras=["agentview"]) if s.physical}
    physical -= {"move_to", "open_gripper", "close_gripper", "home"}
    required = set(resolve_config(DEFAULT_CONFIG).evaluation.required_tools)
    assert physical <= required, physical - required
    from harness import HarnessConfig
    from worlds.libero.demo import DEPLOYMENT

    demo = HarnessConfig.model_validate(DEPLOYMENT).evaluation.required_tools
    assert physical <= set(demo), physical - set(demo)


def test_a_push_that_misses_is_judged_failed_and_never_reported_achieved(
    sim: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worlds.libero.segments import Plan, Segment
    from worlds.libero.skills import SkillPlanner

    def short_push(self: SkillPlanner, ref: str, target: str, ee: Any) -> Plan:
        # moves, but nowhere near the plate: the arm runs, the plate stays
        x, y, z = ee
        return Plan((Segment("move", "wiggle", (x, y, z + 0.01)),), "a push that misses")

    monkeypatch.setattr(SkillPlanner, "push", short_push)
    sim.select(suite="libero_goal", task=PUSH_TASK, init_state=0)
    events = episode(sim, sim.language)
    verdicts = [e for e in events if isinstance(e, EvaluationEvent) and e.tool == "push"]
    assert verdicts and all(v.verdict.status == "failure" for v in verdicts)
    assert "LIBERO On(" in verdicts[0].verdict.evidence
    done = done_of(events)
    assert not sim.goal_achieved()  # the oracle: LIBERO's own check
    assert done.outcome == "not_achieved"
    assert done.evidence is not None and done.evidence.claim != "achieved"
    assert "Outcome: achieved" not in done.report


def test_a_knob_at_zero_is_neither_on_nor_off_as_libero_says(sim: Any) -> None:
    sim.select(suite="libero_goal", task=STOVE_TASK, init_state=0)
    inner = sim.env.env
    stove = next(r for r, i in sim.catalog.items.items() if i.kind == "fixture" and "stove" in r)
    joint = inner.object_states_dict[stove]
    qpos_addr = inner.sim.model.get_joint_qpos_addr(inner.get_object(stove).joints[0])
    inner.sim.data.qpos[qpos_addr] = 0.0
    inner.sim.forward()
    libero_off = bool(inner._eval_predicate(("turnoff", stove)))
    libero_on = bool(inner._eval_predicate(("turnon", stove)))
    assert (libero_on, libero_off) == (False, False), joint
    found = {d.ref: d for d in sim.detections()}
    assert found[stove].attributes["state"] == "neither"
    check = sim.post_conditions().check("turn_off", {"ref": stove}, {})
    assert check is not None and check.status == "failure"


def test_a_bowl_leaning_on_the_plate_is_not_said_to_be_on_it(sim: Any) -> None:
    """LIBERO-PRO libero_spatial_with_yellow_book task 8, state 0: the bowl starts leaning
    on the plate's rim, and LIBERO's On(bowl, plate) does not hold. The world named no
    support for it, the scene graph's boxes made it "on plate_1", and the planner answered
    "the Brief already shows akita_black_bowl_1 on plate_1" without moving: a claim the
    check denied. The world now says its supports are all it names, so the Brief names
    none, and the bowl is picked and put on the plate."""
    from scene import SceneGraph

    sim.select(suite="libero_spatial_with_yellow_book", task=8, init_state=0)
    inner = sim.env.env
    bowl, plate = "akita_black_bowl_1", "plate_1"
    assert not inner._eval_predicate(("on", bowl, plate))  # the oracle: LIBERO's own On
    found = {d.ref: d for d in sim.detections()}
    assert found[bowl].supports_stated and ("on", plate) not in found[bowl].relations
    graph = SceneGraph()
    graph.apply(list(found.values()), timestamp=1.0)
    assert graph.relations_of(bowl).get("on") != plate
    events = episode(sim, "pick up the black bowl next to the plate and place it on the plate")
    done = done_of(events)
    assert done.outcome == "achieved", done.report
    assert inner._eval_predicate(("on", bowl, plate))
