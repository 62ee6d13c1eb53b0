"""What the embodiment costs: simulator start, camera render, pick/place, the safety
envelope, the offline planner, and a whole demo task.

Run: ``python benchmarks/embodiment_costs.py``. Prints one table (medians) and the ratios that
matter: a model-visible 320x240 frame against 640x480, the envelope's check against one
physics-paced pick, and the planner's decision against a render.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from embodiment.envelope import SafetyEnvelope
from embodiment.profile import load_profile
from embodiment.types import Observation
from harness.messages import InstructionItem, ModelRequest, RefreshedBlock, SystemBlock, ToolSpec
from harness.planner import Planner


def median_ms(action: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    from worlds.tabletop.simulator import TabletopSim

    rows: list[tuple[str, float]] = []
    start = time.perf_counter()
    sim = TabletopSim(seed=0)
    sim.connect()
    rows.append(("simulator start (import + load + layout)", (time.perf_counter() - start) * 1000))
    rows.append(
        ("render front 320x240 (tiny renderer)", median_ms(lambda: sim.render("front"), 10))
    )
    big = sim.profile.camera("front").model_copy(update={"width": 640, "height": 480})
    sim.profile = sim.profile.model_copy(update={"cameras": [big, *sim.profile.cameras[1:]]})
    rows.append(("render front 640x480", median_ms(lambda: sim.render("front"), 5)))
    sim.profile = load_profile("panda_tabletop")
    rows.append(("observe (image + state + ground truth)", median_ms(sim.observe, 10)))

    def pick_place() -> None:
        sim.reset()
        sim.execute("pick", {"ref": "red_cube_1"})
        sim.execute("place", {"ref": "red_cube_1", "target": "tray_1"})

    rows.append(("pick + place (physics, fast as possible)", median_ms(pick_place, 3)))
    envelope = SafetyEnvelope(sim.profile, locator=sim)
    observation = Observation(state={"ee_position": [0.3, 0.0, 1.1], "joint_positions": [0.0] * 7})
    kinds = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}
    rows.append(
        (
            "safety envelope check (move_to)",
            median_ms(
                lambda: envelope.check_call(
                    "move_to", {"x": 0.5, "y": 0.1, "z": 0.8, "speed": 0.9}, kinds, observation
                ),
                200,
            ),
        )
    )
    brief = "\n".join(
        [
            "Scene (world frame, metres; t=1.000)",
            "robot: gripper at (0.307, 0.000, 1.110), open, holding nothing",
            "objects (5 of 5 shown, most relevant first):",
            "- table_1: table at (0.350, 0.000, 0.605); conf 1.00",
            "- tray_1: tray [container, open] at (0.620, -0.240, 0.640); on table_1",
            "- red_cube_1: red cube at (0.513, -0.057, 0.645); on table_1",
            "- green_cube_1: green cube at (0.535, 0.245, 0.645); on table_1",
            "- blue_cube_1: blue cube at (0.445, 0.153, 0.645); on table_1",
        ]
    )
    request = ModelRequest(
        system=[SystemBlock(name="system", text="...")],
        tools=[ToolSpec(name=n, description=n, parameters={}) for n in ("pick", "place")],
        items=[InstructionItem(text="put all the cubes in the tray")],
        refreshed=RefreshedBlock(brief=brief),
    )
    planner = Planner()
    rows.append(("planner decision", median_ms(lambda: planner.decide(request), 200)))
    sim.disconnect()

    width = max(len(name) for name, _ in rows)
    print(f"{'what':<{width}}  {'ms':>9}")
    for name, value in rows:
        print(f"{name:<{width}}  {value:>9.2f}")
    small, large = rows[1][1], rows[2][1]
    motion, check, decision = rows[4][1], rows[5][1], rows[6][1]
    print()
    print(
        f"640x480 / 320x240 render: {large / small:.1f}x; pick+place / envelope check: "
        f"{motion / check:.0f}x; 320x240 render / planner decision: {small / decision:.0f}x"
    )


if __name__ == "__main__":
    main()
