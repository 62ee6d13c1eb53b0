"""In the PyBullet simulator, the gripper never enters a keep-out zone or leaves the
workspace: every physics step of real pick, place and move_to motions near the robot's
base zone and the workspace boundary is checked against the profile.

The simulator records the grasp point's position after every physics step; the checks
are plain point-in-box tests written here, not the envelope's geometry. Motions run
through the real loop (Harness + ScriptedModel), so what is checked is what the
envelope let through.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from embodiment.profile import load_profile
from harness import Harness, HarnessConfig
from harness.events import SafetyCheckEvent, ToolResultEvent
from harness.providers import ScriptedModel, call, reply

pybullet = pytest.importorskip("pybullet", reason="the simulator needs the [sim] extra")
pytestmark = [pytest.mark.long, pytest.mark.sim]

PANDA = load_profile("panda_tabletop")
ZONE = PANDA.keep_out[0]
WS = PANDA.workspace


def inside(point: Any, low: Any, high: Any) -> bool:
    return all(lo <= v <= hi for v, lo, hi in zip(point, low, high, strict=True))


def traced_sim(**options: Any) -> Any:
    from worlds.tabletop.simulator import TabletopSim

    class TracedSim(TabletopSim):
        """The simulator, recording the grasp point after every physics step."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.trace: list[tuple[float, float, float]] = []
            self.add_step_observer(self.trace.append)

    sim = TracedSim(**options)
    sim.connect()
    return sim


def run(sim: Any, calls: list[Any]) -> list[Any]:
    config = HarnessConfig.model_validate(
        {
            "embodiment": "panda_tabletop",
            "driver": None,
            "run": {"store": None, "failure_budget": 1000, "max_turns": 1000},
            "memory": {"enabled": False},
        }
    )
    with Harness.from_config(config, model=ScriptedModel([*calls, reply("done")]), driver=sim) as h:
        return list(h.run_stream("move near the limits"))


def violations(trace: list[Any]) -> tuple[list[Any], list[Any]]:
    in_zone = [p for p in trace if inside(p, ZONE.min, ZONE.max)]
    outside = [p for p in trace if not inside(p, WS.min, WS.max)]
    return in_zone, outside


@pytest.fixture(scope="module")
def edge_sim() -> Any:
    """Cubes beside the base's zone, next to the workspace's side and far edges."""
    from worlds.tabletop.scene import ObjectSpec, TraySpec

    sim = traced_sim(
        objects=[
            ObjectSpec(color="red", position=(0.23, 0.35)),  # across the base from -y
            ObjectSpec(color="green", position=(0.30, 0.0)),  # 6 cm from the zone's face
            ObjectSpec(color="blue", position=(0.45, 0.41)),  # 4 cm from the y edge
            ObjectSpec(color="yellow", position=(0.72, 0.0)),  # 6 cm from the x edge
        ],
        tray=TraySpec(position=(0.52, -0.30)),
    )
    yield sim
    sim.disconnect()


def test_1_in_pybullet_a_pick_across_the_base_is_blocked_and_the_detour_runs(
    edge_sim: Any,
) -> None:
    sim = edge_sim
    sim.reset()
    sim.trace.clear()
    events = run(
        sim,
        [
            call("move_to", x=0.23, y=-0.35, z=0.70),  # beside the base
            call("pick", ref="red_cube_1"),  # its approach would cross the base's zone
            call("move_to", x=0.23, y=-0.35, z=0.85),  # over the zone instead
            call("move_to", x=0.23, y=0.35, z=0.85),
            call("pick", ref="red_cube_1"),
            call("place", ref="red_cube_1", target="tray_1"),
        ],
    )
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.error_kind for r in results] == [None, "blocked", None, None, None, None]
    assert "keep_out:robot_base" in results[1].text and "crosses the zone" in results[1].text
    in_zone, outside = violations(sim.trace)
    assert len(sim.trace) > 3000  # the allowed motions really ran
    assert in_zone == [], f"{len(in_zone)} physics steps inside {ZONE.name}"
    assert outside == [], f"{len(outside)} physics steps outside the workspace"
    assert {d.ref: d for d in sim.detections()}["red_cube_1"].relations == [("inside", "tray_1")]


def test_picks_and_places_near_the_zone_and_the_edges_stay_inside(edge_sim: Any) -> None:
    sim = edge_sim
    sim.reset()
    sim.trace.clear()
    events = run(
        sim,
        [
            call("pick", ref="green_cube_1"),  # descends 6 cm from the zone's face
            call("place", ref="green_cube_1", target="table_1"),
            call("pick", ref="blue_cube_1"),  # beside the workspace's y edge
            call("place", ref="blue_cube_1", target="yellow_cube_1"),  # stacked by the x edge
            call("move_to", x=0.40, y=0.0, z=1.18),  # under the ceiling
            call("home"),
        ],
    )
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.error_kind for r in results] == [None] * 6, [r.text for r in results]
    in_zone, outside = violations(sim.trace)
    assert len(sim.trace) > 4000
    assert in_zone == [] and outside == []


def test_seeded_calls_at_the_limits_never_take_the_gripper_out(edge_sim: Any) -> None:
    """Random targets on and just beyond the workspace boundary and around the zone
    (the envelope clamps, shortens or blocks them), interleaved with picks, places and
    returns home."""
    sim = edge_sim
    sim.reset()
    sim.trace.clear()
    rng = random.Random(14)

    def edge_value(axis: int) -> float:
        low, high = WS.min[axis], WS.max[axis]
        return rng.choice([low, high]) + rng.uniform(-0.025, 0.025)

    def near_zone() -> list[float]:
        centre = [
            rng.uniform(lo - 0.06, hi + 0.06) for lo, hi in zip(ZONE.min, ZONE.max, strict=True)
        ]
        return [max(WS.min[0], centre[0]), centre[1], max(WS.min[2], centre[2])]

    calls = []
    for index in range(30):
        kind = index % 5
        if kind == 0:
            point = [rng.uniform(lo, hi) for lo, hi in zip(WS.min, WS.max, strict=True)]
            point[rng.randrange(3)] = edge_value(rng.randrange(3))
            calls.append(call("move_to", x=point[0], y=point[1], z=point[2]))
        elif kind == 1:
            point = near_zone()
            calls.append(call("move_to", x=point[0], y=point[1], z=point[2]))
        elif kind == 2:
            calls.append(
                call(
                    "pick",
                    ref=rng.choice(["green_cube_1", "blue_cube_1", "yellow_cube_1", "red_cube_1"]),
                )
            )
        elif kind == 3:
            calls.append(
                call(
                    "place",
                    ref=rng.choice(["green_cube_1", "blue_cube_1"]),
                    target=rng.choice(["tray_1", "table_1", "yellow_cube_1"]),
                )
            )
        else:
            calls.append(call("home"))  # a joint-space path, described by sampling
    events = run(sim, calls)
    checks = [e for e in events if isinstance(e, SafetyCheckEvent)]
    outcomes = {o: sum(c.outcome == o for c in checks) for o in ("allow", "clamp", "block")}
    assert len(checks) == len(calls)
    assert outcomes["allow"] + outcomes["clamp"] >= 8, outcomes  # enough really ran
    in_zone, outside = violations(sim.trace)
    assert in_zone == [], f"{len(in_zone)} physics steps inside {ZONE.name}"
    assert outside == [], f"{len(outside)} of {len(sim.trace)} physics steps outside the workspace"
