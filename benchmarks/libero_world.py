"""What the LIBERO world's skills reach and what an episode costs.

For each task of the chosen suites and the first N published initial states, a scripted
skill sequence is run on the ``sim.libero`` driver and LIBERO's own success check decides.
The sequence is derived from the task's BDDL goal predicates (open the drawer a goal puts
something in, pick and place each "In"/"On", push when the instruction says push, turn on,
close): this measures the **skills**, with privileged knowledge of the goal, not a planner
(the planner never reads the BDDL; ``harness eval libero_*`` measures it). Every physics step
is checked against the profile's workspace and keep-out boxes with plain comparisons.

One env is built per task and reset to each initial state, as ``harness eval`` workers do;
the table reports build, reset, controller-step and episode times.

    python benchmarks/libero_world.py                       # 4 suites x 10 tasks x 1 state
    python benchmarks/libero_world.py --suites libero_object --states 3
    python benchmarks/libero_world.py --suites libero_goal --tasks 0,9 --json out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from embodiment.profile import load_profile
from worlds.libero import MAIN_SUITES
from worlds.libero.config import PROFILE as LIBERO_PROFILE

PROFILE = load_profile(LIBERO_PROFILE)


def skill_calls(goal: list[list[str]], language: str, catalog: Any) -> list[tuple[str, dict]]:
    """The skill sequence a goal needs (see the module docstring)."""
    opens: list[tuple[str, dict]] = []
    moves: list[tuple[str, dict]] = []
    switches: list[tuple[str, dict]] = []
    closes: list[tuple[str, dict]] = []
    for predicate, *refs in goal:
        if predicate in ("in", "on"):
            subject, target = refs
            item = catalog.get(target)
            if item is not None and item.drawer:
                opens.append(("open", {"ref": target}))
            if "push" in language.lower():
                moves.append(("push", {"ref": subject, "target": target}))
            else:
                moves.append(("pick", {"ref": subject}))
                moves.append(("place", {"ref": subject, "target": target, "relation": predicate}))
        elif predicate == "open":
            opens.append(("open", {"ref": refs[0]}))
        elif predicate == "close":
            closes.append(("close", {"ref": refs[0]}))
        elif predicate == "turnon":
            switches.append(("turn_on", {"ref": refs[0]}))
        elif predicate == "turnoff":
            switches.append(("turn_off", {"ref": refs[0]}))
    return [*opens, *switches, *moves, *closes]


def inside(point: Any, low: Any, high: Any) -> bool:
    return all(lo <= v <= hi for v, lo, hi in zip(point, low, high, strict=True))


def run(suites: list[str], tasks: list[int] | None, states: int) -> list[dict[str, Any]]:
    from worlds.libero.driver import LiberoSim

    rows: list[dict[str, Any]] = []
    ws, zones = PROFILE.workspace, PROFILE.keep_out
    sim = LiberoSim(suite=suites[0], task=0)
    trace: list[tuple[float, float, float]] = []
    sim.add_step_observer(trace.append)
    for suite in suites:
        for task in tasks if tasks is not None else range(10):
            started = time.perf_counter()
            sim.select(suite=suite, task=task, init_state=0)
            build = sim.timings.get("build_s", 0.0)
            select_s = time.perf_counter() - started
            for state in range(states):
                t0 = time.perf_counter()
                sim.reset(init_state=state)
                reset_s = time.perf_counter() - t0
                goal = sim.env.env.parsed_problem["goal_state"]
                calls = skill_calls(goal, sim.language, sim.catalog)
                trace.clear()
                t1 = time.perf_counter()
                steps, log = 0, []
                for name, arguments in calls:
                    result = sim.execute(name, arguments)
                    verdict = sim.post_conditions().check(name, arguments, result.applied)
                    steps += int(result.applied.get("controller_steps", 0))
                    log.append(
                        f"{name}({arguments.get('ref')}"
                        f"{', ' + arguments['target'] if 'target' in arguments else ''})"
                        f"={'ok' if verdict and verdict.status == 'success' else 'FAIL'}"
                        + ("" if result.ok else f" [{result.message[:60]}]")
                    )
                episode_s = time.perf_counter() - t1
                violations = sum(
                    1
                    for p in trace
                    if not inside(p, ws.min, ws.max) or any(inside(p, z.min, z.max) for z in zones)
                )
                achieved = sim.goal_achieved()
                rows.append(
                    {
                        "suite": suite,
                        "task": task,
                        "state": state,
                        "language": sim.language,
                        "skills": sorted({n for n, _ in calls}),
                        "achieved": achieved,
                        "predicates": [(p.text, p.held) for p in sim.goal_predicates()],
                        "log": log,
                        "build_s": round(build if state == 0 else 0.0, 2),
                        "select_s": round(select_s if state == 0 else 0.0, 2),
                        "reset_s": round(reset_s, 2),
                        "episode_s": round(episode_s, 2),
                        "controller_steps": steps,
                        "physics_steps": len(trace),
                        "violations": violations,
                    }
                )
                mark = "ok " if achieved else "NO "
                print(
                    f"{mark}{suite} t{task} s{state} {episode_s:5.1f}s {steps:4d} steps "
                    f"viol={violations} {' '.join(log)}",
                    flush=True,
                )
    sim.disconnect()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| suite | episodes | achieved | skills used | episode s (median) | controller steps "
        "(median) | physics steps checked | violations |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for suite in dict.fromkeys(r["suite"] for r in rows):
        mine = [r for r in rows if r["suite"] == suite]
        skills = sorted({s for r in mine for s in r["skills"]})
        lines.append(
            f"| {suite} | {len(mine)} | {sum(r['achieved'] for r in mine)} | {', '.join(skills)} "
            f"| {statistics.median(r['episode_s'] for r in mine):.1f} "
            f"| {statistics.median(r['controller_steps'] for r in mine):.0f} "
            f"| {sum(r['physics_steps'] for r in mine)} | {sum(r['violations'] for r in mine)} |"
        )
    builds = [r["build_s"] for r in rows if r["state"] == 0]
    resets = [r["reset_s"] for r in rows]
    steps = sum(r["controller_steps"] for r in rows)
    seconds = sum(r["episode_s"] for r in rows)
    lines += [
        "",
        "| cost | median | max |",
        "|---|---|---|",
        f"| env build (per task) | {statistics.median(builds):.1f} s | {max(builds):.1f} s |",
        f"| reset to a published initial state | {statistics.median(resets):.2f} s "
        f"| {max(resets):.2f} s |",
        f"| controller step (25 physics steps, no render) "
        f"| {1000 * seconds / max(steps, 1):.0f} ms (mean) | |",
        f"| episode (skills only) | {statistics.median(r['episode_s'] for r in rows):.1f} s "
        f"| {max(r['episode_s'] for r in rows):.1f} s |",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default=",".join(MAIN_SUITES))
    parser.add_argument("--tasks", default=None, help="comma-separated task indices")
    parser.add_argument("--states", type=int, default=1, help="initial states per task")
    parser.add_argument("--json", default=None, help="write every episode's row here")
    parser.add_argument("--verbose", action="store_true", help="log every skill segment")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if args.verbose:
        logging.getLogger("worlds.libero").setLevel(logging.DEBUG)
    tasks = [int(t) for t in args.tasks.split(",")] if args.tasks else None
    rows = run(args.suites.split(","), tasks, args.states)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print()
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
