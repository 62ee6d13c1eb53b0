"""How the scene Brief's rendering time grows with the number of objects.

    python benchmarks/scene_brief.py [--sizes 10 100 1000 10000] [--budget 1500]

For each size, a seeded synthetic warehouse of tables, trays and coloured objects
(``scene.synthetic``) is loaded into a SceneGraph with the gripper holding one object, and
the Brief is rendered with the harness's token estimator and a focus text naming a few
objects. The table shows the median render time, the time per object, and the ratio to
the previous size next to what O(n) and O(n log n) growth would give for the same step;
also the graph update time (first load, and a steady re-observation with nothing moved),
which the loop pays every turn too, and how many objects the Brief showed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

from harness.tokens import TokenEstimator
from scene import SceneGraph, render_brief
from scene.synthetic import synthetic_scene


def median_ms(
    action: Callable[[], object], *, min_total_s: float = 0.5, max_runs: int = 200
) -> float:
    """Median wall time of ``action`` over enough runs to fill ``min_total_s`` (at least 3)."""
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < 3 or (
        time.perf_counter() - started < min_total_s and len(samples) < max_runs
    ):
        t0 = time.perf_counter()
        action()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def measure(n: int, budget: int) -> dict[str, float]:
    detections = synthetic_scene(n, seed=7)
    objects = [d.ref for d in detections if d.category == "object"]
    held = objects[len(objects) // 2] if objects else None
    state = {"ee_position": [0.5, 0.0, 1.0], "gripper_open": held is None, "holding": held}
    focus = "put " + " and ".join(objects[:3]) + " in the tray; keep the red cubes together"
    estimate = TokenEstimator().text

    t0 = time.perf_counter()
    graph = SceneGraph()
    graph.apply(detections, timestamp=1.0, state=state)
    first_ms = (time.perf_counter() - t0) * 1000
    tick = iter(range(2, 10_000_000))
    steady_ms = median_ms(
        lambda: graph.apply(detections, timestamp=float(next(tick)), state=state), max_runs=50
    )
    brief = render_brief(graph, max_tokens=budget, estimate=estimate, focus=focus)
    render_ms = median_ms(
        lambda: render_brief(graph, max_tokens=budget, estimate=estimate, focus=focus)
    )
    return {
        "n": len(graph.objects()),
        "render_ms": render_ms,
        "first_ms": first_ms,
        "steady_ms": steady_ms,
        "shown": len(brief.shown),
        "tokens": brief.tokens,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--budget", type=int, default=1500, help="scene.brief_max_tokens")
    args = parser.parse_args(argv)

    header = (
        f"{'objects':>8} {'brief ms':>9} {'us/obj':>7} {'ratio':>6} {'O(n)':>5} "
        f"{'O(nlogn)':>8} {'shown':>6} {'tokens':>6} {'load ms':>8} {'update ms':>9}"
    )
    print(f"scene Brief rendering, budget {args.budget} tokens (median of repeated runs)")
    print(header)
    print("-" * len(header))
    previous: dict[str, float] | None = None
    for size in args.sizes:
        row = measure(size, args.budget)
        n = row["n"]
        ratio = linear = nlogn = "-"
        if previous is not None:
            step = n / previous["n"]
            ratio = f"{row['render_ms'] / previous['render_ms']:.1f}"
            linear = f"{step:.0f}"
            nlogn = f"{step * math.log(n) / math.log(previous['n']):.1f}"
        print(
            f"{n:>8} {row['render_ms']:>9.2f} {row['render_ms'] * 1000 / n:>7.1f} "
            f"{ratio:>6} {linear:>5} {nlogn:>8} {row['shown']:>6} {row['tokens']:>6} "
            f"{row['first_ms']:>8.1f} {row['steady_ms']:>9.1f}"
        )
        previous = row
    print(
        "ratio: brief time over the previous size's; O(n), O(nlogn): the same ratio for "
        "linear and n log n growth. load: first update with every object new; update: a "
        "re-observation with nothing moved (what a ground-truth simulator costs per turn)."
    )


if __name__ == "__main__":
    main()
