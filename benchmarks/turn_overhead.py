"""Harness overhead per turn, how it grows with history, loop rate and memory.

    python -m benchmarks.turn_overhead                      # histories 50, 200, 800, 3200
    python -m benchmarks.turn_overhead --histories 50,200,800,3200,12800

*Overhead* is everything a turn costs except the model call and the driver: recording
the result, Task Notes, the observation (JPEG encoding, hashing, storing), the Brief,
compaction and pruning passes (without their summarizer calls), building the request,
events, the tool thread. It is measured on a real Harness replaying a seeded trace (see
:mod:`benchmarks.lib.session_trace`) with a :class:`~harness.providers.scripted.ScriptedModel` and a
null driver whose ``observe`` returns a camera frame every turn; wall time between two
consecutive ``prompt_snapshot`` events, minus the time spent inside the model (decision
and summarizer) and inside the driver.

Each mode runs in its own Python process (so its peak RSS is its own), one after the
other, over one trace as long as the longest history: without compaction (window large
enough that nothing is ever folded) and with compaction (the comparison window, the
project's compactor and the shared deterministic summarizer). A third mode,
``bounded_memory``, repeats the compaction run with the project's SQLite run store (so
nothing the store keeps is in the process) and samples RSS at turns 500 and 3,000: what a
long session costs the process itself, which must stay flat. At each history length
*h* the table gives the median and p95 of the last 20% of turns up to *h*, in CPU time of
the process (robust to other work on a shared machine) and in wall time, and the growth of
the CPU median against the shortest history (flat is the goal). Images must not
accumulate: the run store keeps only image hashes and sizes here (it stands in for the
on-disk store), so RSS growth from 800 to 3,200 turns is the harness's own.

The modes, their instruments and their tables are in :mod:`benchmarks.lib.overhead_modes`,
:mod:`benchmarks.lib.overhead_instruments` and :mod:`benchmarks.lib.overhead_report`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.lib.overhead_instruments import STORES, open_store
from benchmarks.lib.overhead_modes import (
    MEMORY_MODE,
    MODES,
    ModeResult,
    OverheadOptions,
    run_mode,
    summarize_mode,
)
from benchmarks.lib.overhead_report import plot, render_tables
from benchmarks.lib.session_trace import TraceSpec
from benchmarks.lib.tables import OUT_DIR, save_json
from benchmarks.lib.trace_generator import generate_trace
from harness.runtime.harness import Harness

__all__ = ["main", "render", "run_benchmark", "sim_loop_rate"]


def sim_loop_rate(turns: int) -> dict[str, Any]:
    """Full loop rate on the built-in simulator with its offline planner, if present."""
    if importlib.util.find_spec("worlds.tabletop") is None:
        return {"skipped": "worlds.tabletop is not on this branch (issue #5 not merged)"}
    try:
        import worlds.tabletop  # noqa: F401
    except Exception as exc:
        return {"skipped": f"import worlds.tabletop failed: {type(exc).__name__}: {exc}"}
    try:
        started = time.perf_counter()
        with Harness.from_config(
            overrides=[f"run.max_turns={turns}", "run.store=null", "memory.enabled=false"]
        ) as harness:
            built = time.perf_counter() - started
            started = time.perf_counter()
            result = harness.run("put all the cubes in the tray")
            seconds = time.perf_counter() - started
    except Exception as exc:
        return {"skipped": f"simulator run failed: {type(exc).__name__}: {exc}"}
    return {
        "turns": result.turns,
        "seconds": seconds,
        "build_s": built,
        "status": result.status,
        "turns_per_s": result.turns / seconds if seconds else 0.0,
    }


# --------------------------------------------------------------------------- driver


def _child(options: OverheadOptions, mode: str) -> ModeResult:
    command = [
        sys.executable,
        "-m",
        "benchmarks.turn_overhead",
        "--child",
        mode,
        "--histories",
        ",".join(str(h) for h in options.histories),
        "--window",
        str(options.window),
        "--reserve",
        str(options.reserve),
        "--seed",
        str(options.seed),
        "--store",
        options.store,
        "--memory-turns",
        ",".join(str(t) for t in options.memory_turns),
    ]
    root = Path(__file__).resolve().parent.parent
    completed = subprocess.run(command, capture_output=True, text=True, cwd=root, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"{mode} run failed:\n{completed.stderr[-4000:]}")
    data = json.loads(completed.stdout.strip().splitlines()[-1])
    data["rss_at"] = {int(k): v for k, v in data["rss_at"].items()}
    return ModeResult(**data)


def run_benchmark(options: OverheadOptions) -> dict[str, Any]:
    with open_store(options.store):
        pass  # a store that cannot be opened is an error here, not in every child
    modes: dict[str, ModeResult] = {}
    trace = (
        None
        if options.subprocess
        else generate_trace(TraceSpec(turns=options.turns, facts=0, seed=options.seed))
    )
    for mode in options.modes:
        modes[mode] = (
            _child(options, mode) if options.subprocess else run_mode(options, mode, trace)
        )
    return {
        "modes": modes,
        "sim": sim_loop_rate(options.sim_turns) if options.sim_turns else {},
        "live": _live_rows(options.live_rounds if options.sim_turns else 0),
    }


def _live_rows(rounds: int) -> dict[str, Any]:
    """The simulator task with the live viewers off and on (needs the sim and viz extras)."""
    if rounds < 1:
        return {}
    from benchmarks import live_viewers

    for module in ("pybullet", "foxglove", "rerun"):
        if importlib.util.find_spec(module) is None:
            return {"skipped": f"{module} is not installed"}
    return {"rows": live_viewers.measure(rounds)}


def render(options: OverheadOptions, results: dict[str, Any]) -> str:
    """The tables (:mod:`benchmarks.lib.overhead_report`), then the live-viewer rows."""
    lines = [render_tables(options, results)]
    live = results.get("live") or {}
    if live.get("rows"):
        from benchmarks.live_viewers import render as render_live

        lines.append("\n" + render_live(live["rows"]))
    elif live.get("skipped"):
        lines.append(f"\nLive viewer rows skipped: {live['skipped']}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = OverheadOptions()
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.turn_overhead",
        description="Harness overhead per turn vs history length, loop rate, peak RSS.",
    )
    parser.add_argument(
        "--histories",
        default=",".join(str(h) for h in defaults.histories),
        help="comma-separated history lengths (the longest sets the run length)",
    )
    parser.add_argument("--window", type=int, default=defaults.window)
    parser.add_argument("--reserve", type=int, default=defaults.reserve)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument(
        "--store",
        choices=STORES,
        default=defaults.store,
        help="memory (image bytes not kept) or the project's SQLite store in a temp folder",
    )
    parser.add_argument(
        "--modes", default=",".join(MODES), help="no_compaction,compaction,bounded_memory"
    )
    parser.add_argument(
        "--memory-turns",
        default=",".join(str(t) for t in defaults.memory_turns),
        help="the two turns bounded_memory samples RSS at (within the longest history)",
    )
    parser.add_argument("--sim-turns", type=int, default=defaults.sim_turns, help="0 skips")
    parser.add_argument(
        "--live-rounds",
        type=int,
        default=defaults.live_rounds,
        help="rounds of the live-viewer rows (off vs --foxglove/--rerun; simulator runs, "
        "skipped with --sim-turns 0 too); 0 skips",
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the modes in this process (faster to start; peak RSS is then shared)",
    )
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        histories = sorted({int(h) for h in args.histories.split(",") if h.strip()})
    except ValueError:
        print(f"error: --histories {args.histories!r}: expected integers", file=sys.stderr)
        return 2
    if not histories or histories[0] < 2:
        print("error: --histories needs lengths of at least 2 turns", file=sys.stderr)
        return 2
    try:
        memory_turns = tuple(int(t) for t in args.memory_turns.split(",") if t.strip())
    except ValueError:
        print(f"error: --memory-turns {args.memory_turns!r}: expected integers", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := [m for m in modes if m not in MODES]:
        print(f"error: unknown modes {unknown}; expected {list(MODES)}", file=sys.stderr)
        return 2
    options = OverheadOptions(
        histories=histories,
        window=args.window,
        reserve=args.reserve,
        seed=args.seed,
        store=args.store,
        modes=modes,
        sim_turns=args.sim_turns,
        subprocess=not args.in_process,
        memory_turns=memory_turns,
        live_rounds=args.live_rounds,
    )
    try:
        if args.child:
            print(json.dumps(asdict(run_mode(options, args.child))))
            return 0
        results = run_benchmark(options)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(options, results))
    data = {
        "options": {**asdict(options), "histories": list(options.histories)},
        "modes": {
            mode: {
                **asdict(r),
                "points": []
                if mode == MEMORY_MODE
                else [asdict(p) for p in summarize_mode(r, histories)],
            }
            for mode, r in results["modes"].items()
        },
        "sim": results["sim"],
        "live": {
            name: asdict(row) for name, row in (results.get("live") or {}).get("rows", {}).items()
        },
    }
    print(f"\nJSON written to {save_json('turn_overhead.json', data, out_dir=args.out)}")
    if not args.no_plot:
        print(plot(options, results, args.out)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
