"""The tabletop simulator's ``move_joints``: described through the envelope's kinematic
model, and in PyBullet every physics step of the joint motions the envelope let through
stays inside the workspace and out of the base zone (plain box tests, as in
``tests/worlds/test_sim_safety.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from harness import Harness, HarnessConfig
from harness.events import ToolResultEvent
from harness.providers import ScriptedModel, call, reply

pytest.importorskip("pybullet", reason="the simulator needs the [sim] extra")
pytestmark = pytest.mark.sim

PANDA = load_profile("panda_tabletop")
ZONE, WS = PANDA.keep_out[0], PANDA.workspace


def inside(point: Any, low: Any, high: Any) -> bool:
    return all(lo <= v <= hi for v, lo, hi in zip(point, low, high, strict=True))


@pytest.fixture(scope="module")
def sim() -> Any:
    from worlds.tabletop.simulator import TabletopSim

    class TracedSim(TabletopSim):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.trace: list[tuple[float, float, float]] = []
            self.add_step_observer(self.trace.append)

    robot = TracedSim()
    robot.connect()
    yield robot
    robot.disconnect()


def test_move_joints_is_described_with_the_envelopes_kinematics(sim: Any) -> None:
    sim.reset()
    target = [0.3, -0.6, 0.0, -2.2, 0.0, 1.6, 0.8]
    described = sim.describe_motion("move_joints", {"joints": target})
    model = SafetyEnvelope(PANDA).kinematics()
    assert model is not None
    assert described.waypoints[-1] == pytest.approx(
        PANDA.to_world(model.ee_point(target), "base"), abs=1e-9
    )


def test_joint_motions_in_pybullet_stay_inside_the_profile(sim: Any) -> None:
    sim.reset()
    sim.trace.clear()
    config = HarnessConfig.model_validate(
        {
            "embodiment": "panda_tabletop",
            "driver": None,
            "run": {"store": None, "failure_budget": 100},
            "memory": {"enabled": False},
        }
    )
    calls = [
        call("move_joints", joints=[0.3, -0.6, 0.0, -2.2, 0.0, 1.6, 0.8]),
        call("move_joints", joints=[-1.1, 0.26, 0.79, -3.07, -0.01, 1.42, 1.24]),  # out
        call("move_joints", joints=[-0.5, 0.2, 0.0, -2.0, 0.0, 2.2, 0.8]),
        call("move_joints", joints=[-1.34, 0.6, 1.4, -3.07, 0.28, 2.99, 1.01]),  # zone margin
        call("home"),
    ]
    model = ScriptedModel([*calls, reply("done")])
    with Harness.from_config(config, model=model, driver=sim) as harness:
        events = list(harness.run_stream("move the joints"))
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.error_kind for r in results] == [None, "blocked", None, "blocked", None], [
        r.text for r in results
    ]
    assert len(sim.trace) > 500
    assert [p for p in sim.trace if inside(p, ZONE.min, ZONE.max)] == []
    assert [p for p in sim.trace if not inside(p, WS.min, WS.max)] == []
