"""What you can run here: ``python -m benchmarks`` lists every benchmark, one line each.

    python -m benchmarks                      # the list
    python -m benchmarks NAME [OPTIONS...]    # run one (same as python -m benchmarks.NAME)

Each benchmark is a module of this folder with its own ``--help``; what they share lives
in :mod:`benchmarks.lib` and is not listed. ``benchmarks/README.md`` says what each
measures and what it found.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

__all__ = ["BENCHMARKS", "listing", "main"]

BENCHMARKS: dict[str, str] = {
    "headline": "context efficiency and turn overhead with their defaults (--update-readme)",
    "context_efficiency": "context policies side by side: tokens, cache, cost, facts kept",
    "turn_overhead": "harness overhead per turn vs history length, loop rate, memory",
    "providers": "provider adapters over the official SDKs: payload build, streaming",
    "embodiment_costs": "simulator start, camera render, pick/place, envelope, planner, demo",
    "scene_brief": "Brief rendering and scene-graph update time vs number of objects",
    "mcp_calls": "what the harness adds to an MCP tool call vs the bare SDK",
    "skills_memory": "skills and memory per task and per turn",
    "run_store": "what recording costs per turn: memory vs SQLite",
    "subagents": "the same search inline and delegated to a sub-agent",
    "eval_throughput": "harness eval episodes per minute: local workers and Ray actors",
    "cancel_latency": "time from the operator's cancel to done, in every phase that can block",
    "console_stop": "the console's Stop clicked in Chromium during a real-time task",
    "live_viewers": "the demo with --foxglove/--rerun off and on: cost per turn, drops",
    "safety_fuzz": "the safety envelope attacked through the real loop, every tool source",
    "safety_fuzz_body": "the envelope attacked with defaults, joint paths, base sweeps, profiles",
    "admission_attacks": "what reaches a robot: left-out arguments, re-runs, two Harnesses",
    "libero_world": "what the LIBERO world's skills reach and what an episode costs",
    "libero_suites": "the offline planner's success on LIBERO suites from harness eval folders",
}
"""Every benchmark a user runs, by module name, with what it measures in one line."""


def listing() -> str:
    width = max(len(name) for name in BENCHMARKS)
    lines = [f"  {name:<{width}}  {what}" for name, what in BENCHMARKS.items()]
    return (
        "Benchmarks (python -m benchmarks NAME [--help], or python -m benchmarks.NAME):\n"
        + "\n".join(lines)
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "list"):
        print(listing())
        return 0
    name, rest = args[0], args[1:]
    if name not in BENCHMARKS:
        print(f"python -m benchmarks: no benchmark {name!r}\n{listing()}", file=sys.stderr)
        return 2
    sys.argv = [f"benchmarks.{name}", *rest]
    runpy.run_module(f"benchmarks.{name}", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
