"""How fast the console's Stop button stops a running simulator task, clicked in a browser.

    python benchmarks/console_stop.py [--clicks 20] [--seed 0] [--max-delay 4.0]

The promise (README, docs/hardening.md): click to ``driver.stop()`` within 0.15 s at p99 in
every phase. The console's Stop sets the task's cancel and stops the driver from the web
server's thread at once (``Session.halt_robot``), so it does not wait for the loop's next
check (an evaluation's settle, an observation); the task still ends through its cancel.

A real run: the PyBullet tabletop in real time (``driver.real_time_factor=1.0``, so a pick
takes seconds), the offline planner as the model, ``harness.console.attach`` serving the
page, a task loop taking tasks from it (what ``harness console`` does), and headless
Chromium driven by Playwright. Each trial resets the world, starts "put the red cube in the
tray" from the page, waits a random time (uniform, 0.2 s to ``--max-delay``), and clicks
Stop. Measured from the click as the page saw it (``performance.timeOrigin +
performance.now()`` in the click handler):

- **to ``driver.stop()``**: the first call of the simulator's ``stop()`` after the click
  (the driver is wrapped to note the time);
- **to ``done``**: when the session emitted the ``done`` event (a listener notes the time);
- **done on the page**: when the page rendered the ``done`` event.

The phase is what was in flight at the click, from the last event before it (see
:data:`PHASES`): a motion (a physical tool call), another tool, a model call (a prompt was
sent, no answer yet), the admission and safety check before a tool, the evaluation after a
physical tool (the simulator settles in real time), the refresh between turns (observe,
scene graph, notes). A click whose task had already ended is retried with another delay
(counted as ``missed``). The offline planner answers in milliseconds, so few clicks land
in a model call; ``benchmarks/cancel_latency.py`` measures blocking model calls.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.console import attach  # noqa: E402
from harness.events import EventBase  # noqa: E402
from harness.runtime.harness import Harness  # noqa: E402

ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
INSTRUCTION = "put the red cube in the tray"
OUT = ROOT / "benchmarks" / "out"


PHASES = {
    "prompt_snapshot": "model call",
    "model_delta": "model call",
    "context_pressure": "model call",
    "model_response": "admission and safety check",
    "safety_check": "admission and safety check",
    "hook_decision": "admission and safety check",
    "tool_result": "evaluation after the tool",
    "evaluation": "evaluation after the tool",
    "observation": "refresh (observe, scene, notes)",
    "scene_update": "refresh (observe, scene, notes)",
    "episode": "refresh (observe, scene, notes)",
    "compaction": "summarizer",
    "task_started": "task start",
    "tools_listed": "task start",
    "skill_loaded": "task start",
    "memory_consolidation": "task end",
}
"""The phase in flight at the click, by the last event emitted before it."""


def phase_at_click(events: list[tuple[float, EventBase]], clicked: float) -> tuple[str, str]:
    before = [event for stamp, event in events if stamp <= clicked]
    if not before:
        return "task start", ""
    last = before[-1]
    kind = getattr(last, "type", "")
    if kind == "tool_call":
        return ("motion" if getattr(last, "physical", False) else "tool"), kind
    return PHASES.get(kind, kind), kind


def _percentile(ordered: list[float], share: float) -> float:
    """The nearest-rank percentile (of 20 clicks, p99 is the slowest: no interpolation
    pretends to know more than was measured)."""
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def summary_stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": _percentile(ordered, 0.90),
        "p99": _percentile(ordered, 0.99),
        "max": ordered[-1],
        "min": ordered[0],
    }


def run(clicks: int, seed: int, max_delay: float) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="console-stop-"))
    harness = Harness.from_config(
        ROOT / "configs" / "default.yaml",
        overrides=[f"run.store={folder / 'store'}", "driver.real_time_factor=1.0"],
    )
    driver = harness.driver
    assert driver is not None
    stops: list[float] = []
    real_stop = driver.stop

    def noted_stop() -> None:
        stops.append(time.time())
        real_stop()

    driver.stop = noted_stop  # type: ignore[method-assign]
    events: list[tuple[float, EventBase]] = []
    harness.session.add_listener(lambda event: events.append((time.time(), event)))
    done_events: list[Any] = []
    quit_loop = threading.Event()
    trials: list[dict[str, Any]] = []
    missed = 0
    try:
        with attach(harness) as ui:

            def task_loop() -> None:
                while not quit_loop.is_set():
                    request = ui.next_task(0.2)
                    if request is None:
                        continue
                    for event in harness.run_stream(
                        request.instruction,
                        should_cancel=ui.stop_requested,
                        poll_replan=ui.next_revision,
                    ):
                        if event.type == "done":
                            done_events.append(event)

            loop = threading.Thread(target=task_loop, daemon=True)
            loop.start()
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(ui.url)  # a one-time link: the page gets a session and the seat
                page.wait_for_selector("#role.operator", timeout=15_000)
                while len(trials) < clicks:
                    driver.reset(seed=0)
                    harness.reset_session()
                    events.clear()
                    page.evaluate("() => { window.lastStopClick = 0; window.lastDoneShown = 0; }")
                    ended_before = len(done_events)
                    page.wait_for_selector("#start:not([disabled])", timeout=15_000)
                    page.fill("#instruction", INSTRUCTION)
                    page.click("#start")
                    while ui.hub.task_id is None and len(done_events) == ended_before:
                        time.sleep(0.005)
                    time.sleep(rng.uniform(0.2, max_delay))
                    if len(done_events) > ended_before or ui.hub.task_id is None:
                        missed += 1
                        continue
                    stops_before = len(stops)
                    page.click("#stop")
                    page.wait_for_function("() => window.lastDoneShown > 0", timeout=30_000)
                    clicked = page.evaluate("() => window.lastStopClick") / 1000
                    shown = page.evaluate("() => window.lastDoneShown") / 1000
                    while len(done_events) == ended_before:
                        time.sleep(0.005)
                    done = done_events[-1]
                    if done.status != "cancelled":  # it ended on its own before the click
                        missed += 1
                        continue
                    emitted = next(stamp for stamp, e in events if e is done or e.seq == done.seq)
                    after = [s for s in stops[stops_before:] if s >= clicked]
                    phase, last_event = phase_at_click(events, clicked)
                    trials.append(
                        {
                            "phase": phase,
                            "last_event": last_event,
                            "status": done.status,
                            "to_stop_ms": 1000 * (after[0] - clicked) if after else None,
                            "to_done_ms": 1000 * (emitted - clicked),
                            "shown_ms": 1000 * (shown - clicked),
                        }
                    )
                browser.close()
            quit_loop.set()
            loop.join(30)
    finally:
        quit_loop.set()
        harness.close()
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "clicks": clicks,
        "seed": seed,
        "max_delay": max_delay,
        "missed": missed,
        "trials": trials,
    }


def table(result: dict[str, Any]) -> str:
    trials = result["trials"]
    lines = [
        "| phase at the click | clicks | click → driver.stop() ms (p50 / p90 / p99 / max) "
        "| click → done event ms (p50 / p90 / max) | click → done on the page ms (median) |",
        "|---|---|---|---|---|",
    ]
    phases = sorted({t["phase"] for t in trials})
    for phase in [*phases, "all"]:
        rows = trials if phase == "all" else [t for t in trials if t["phase"] == phase]
        to_stop = [t["to_stop_ms"] for t in rows if t["to_stop_ms"] is not None]
        stop = summary_stats(to_stop) if to_stop else None
        done = summary_stats([t["to_done_ms"] for t in rows])
        shown = statistics.median(t["shown_ms"] for t in rows)
        stop_text = (
            f"{stop['median']:.0f} / {stop['p90']:.0f} / {stop['p99']:.0f} / {stop['max']:.0f}"
            if stop
            else "-"
        )
        label = f"**{phase}**" if phase == "all" else phase
        lines.append(
            f"| {label} | {len(rows)} | {stop_text} | "
            f"{done['median']:.0f} / {done['p90']:.0f} / {done['max']:.0f} | {shown:.0f} |"
        )
    statuses = sorted({t["status"] for t in trials})
    lines.append("")
    lines.append(
        f"{len(trials)} clicks (seed {result['seed']}, delays 0.2-{result['max_delay']} s; "
        f"{result['missed']} landed after the task had ended and were retried); "
        f"done status: {', '.join(statuses)}; driver.stop() seen after "
        f"{sum(t['to_stop_ms'] is not None for t in trials)} of {len(trials)} clicks."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-delay", type=float, default=4.0)
    args = parser.parse_args(argv)
    result = run(args.clicks, args.seed, args.max_delay)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "console_stop.json").write_text(json.dumps(result, indent=2))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
