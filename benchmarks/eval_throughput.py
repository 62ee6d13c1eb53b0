"""Episodes per minute of ``harness eval`` on this machine: 1 and 2 local worker processes
and 2 Ray actors on a local Ray, side by side in one run, over the same episodes of the
tabletop suite with the offline planner. Each row also says whether its per-episode
outcomes are identical to the first row's (they must be: the planner and the simulator
are deterministic).

    python benchmarks/eval_throughput.py                  # 12 episodes (2 per family)
    python benchmarks/eval_throughput.py --episodes 24 --no-ray

The Ray row includes starting the local Ray (about 15 s here), as a user's ``--ray`` run
does. The machine is shared, so compare the rows of one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.config import load_config  # noqa: E402
from harness.fleet.journal import Manifest  # noqa: E402
from harness.fleet.runner import choose_backend, plan_eval, run_eval  # noqa: E402
from harness.fleet.suite import load_suite  # noqa: E402

SUITE = ROOT / "configs" / "suites" / "tabletop.yaml"


def _run(label: str, *, workers: int, ray: bool, episodes: int, scratch: Path) -> dict:
    suite = load_suite(SUITE)
    config = load_config(suite.config_path())
    manifest = Manifest(suite=suite.suite, suite_path=str(SUITE), episodes=[])
    folder = scratch / label.replace(" ", "-")
    plan = plan_eval(suite, config, folder=folder, manifest=manifest, episodes=episodes)
    backend = choose_backend(plan, workers=workers, ray=ray, ray_address=None, notice=print)
    started = time.monotonic()
    run_eval(plan, backend)
    wall = time.monotonic() - started
    records = {r.key: r for r in plan.finished}
    return {
        "label": label,
        "workers": workers,
        "episodes": len(records),
        "wall_s": wall,
        "per_minute": len(records) / wall * 60,
        "outcomes": {k: (r.status, r.outcome, r.success, r.turns) for k, r in records.items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--no-ray", action="store_true", help="leave the Ray row out")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="eval-throughput-") as scratch:
        runs = [("local 1", 1, False), ("local 2", 2, False)]
        try:
            import ray  # noqa: F401

            if not args.no_ray:
                runs.append(("ray 2", 2, True))
        except ImportError:
            print("Ray is not installed (pip install 'embodied-harness[fleet]'): no Ray row")
        for label, workers, ray_backend in runs:
            rows.append(
                _run(
                    label,
                    workers=workers,
                    ray=ray_backend,
                    episodes=args.episodes,
                    scratch=Path(scratch),
                )
            )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\n{args.episodes} episodes of {SUITE.name} (offline planner), {os.cpu_count()} CPUs, "
        f"load average {load:.1f} at the end\n"
    )
    print("| backend | workers | episodes | wall s | episodes/min | speed-up | same outcomes |")
    print("|---|---:|---:|---:|---:|---:|---|")
    base = rows[0]
    for row in rows:
        same = "yes" if row["outcomes"] == base["outcomes"] else "NO"
        print(
            f"| {row['label'].split()[0]} | {row['workers']} | {row['episodes']} | "
            f"{row['wall_s']:.1f} | {row['per_minute']:.1f} | "
            f"{base['wall_s'] / row['wall_s']:.2f}x | {same} |"
        )
    return 0 if all(r["outcomes"] == base["outcomes"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
