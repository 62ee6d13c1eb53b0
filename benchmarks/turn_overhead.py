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
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import importlib.util
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmarks.lib.ours import ours_config
from benchmarks.lib.replay import (
    CAMERA,
    DecisionStats,
    TraceCursor,
    decision_replay,
    replay_harness,
)
from benchmarks.lib.session_trace import Trace, TraceSpec
from benchmarks.lib.summarizer import DeterministicSummarizer
from benchmarks.lib.tables import OUT_DIR, compact_number, markdown_table, save_json, save_plot
from benchmarks.lib.trace_generator import generate_trace
from embodiment.types import ActionResult, Observation
from harness.context.compaction.compactor import NoCompaction
from harness.events import CompactionEvent, DoneEvent, PromptSnapshotEvent
from harness.messages import ImagePart, ModelRequest
from harness.protocols import RunStore
from harness.providers.base import Chunk
from harness.providers.scripted import ScriptedModel
from harness.runtime.harness import Harness
from harness.store import MemoryRunStore
from harness.tokens import TokenEstimator

__all__ = [
    "MODES",
    "ModeResult",
    "NullDriver",
    "OverheadOptions",
    "TimedModel",
    "main",
    "run_mode",
    "summarize_mode",
]

MODES = ("no_compaction", "compaction", "bounded_memory")
MEMORY_MODE = "bounded_memory"
"""The compaction run on the SQLite store, for RSS only (no overhead rows)."""
MODE_COLOURS = {"no_compaction": "#e8590c", "compaction": "#1971c2"}
NO_COMPACTION_WINDOW = 1_000_000_000
FRAME_POOL = 16
"""Distinct frames the null driver cycles through (every turn still encodes one)."""


@dataclass
class OverheadOptions:
    histories: Sequence[int] = (50, 200, 800, 3200)
    window: int = 32_000
    reserve: int = 4_000
    seed: int = 0
    modes: Sequence[str] = MODES
    sim_turns: int = 40
    """Turn limit of the simulator loop-rate run (the planner usually finishes sooner)."""
    store: str = "memory"
    """``memory``: in memory, image bytes not kept (stands in for a disk store);
    ``sqlite``: the project's SQLite run store in a temporary folder."""
    subprocess: bool = True
    """Run each mode in its own process (clean peak RSS); tests run in-process."""
    memory_turns: Sequence[int] = (500, 3000)
    """Where ``bounded_memory`` samples RSS (points past the longest history are dropped)."""
    live_rounds: int = 2
    """Rounds of the live-viewer rows (:mod:`benchmarks.live_viewers`; 0 skips them)."""

    @property
    def turns(self) -> int:
        return max(self.histories)

    def memory_points(self) -> tuple[int, int]:
        """The two turns ``bounded_memory`` compares (within the longest history)."""
        points = sorted(t for t in self.memory_turns if 1 < t <= self.turns)
        if len(points) < 2:
            return min(self.histories), self.turns
        return points[0], points[-1]


# --------------------------------------------------------------------------- instruments


class Stopwatch:
    """Accumulated wall and CPU seconds spent inside something (the model, the driver).

    CPU time (``time.process_time``, all threads of this process) is what the harness
    itself burns; unlike wall time it does not grow when other work on a shared machine
    takes the cores, so the growth ratios are read from it.
    """

    def __init__(self) -> None:
        self.total = 0.0
        self.cpu = 0.0

    def time(self, fn: Callable[[], Any]) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return fn()
        finally:
            self.total += time.perf_counter() - started
            self.cpu += time.process_time() - cpu


class TimedModel:
    """A model wrapper that adds the time spent inside ``stream()`` to a stopwatch.

    It also empties the scripted model's request log after each call: the log holds every
    request (and so every item list) for tests, which over thousands of turns would be
    memory of the test double, not of the harness.
    """

    def __init__(self, inner: ScriptedModel, stopwatch: Stopwatch) -> None:
        self.inner = inner
        self.stopwatch = stopwatch
        self.name = inner.name
        self.context_window = inner.context_window
        self.image_cost = inner.image_cost
        self.max_images = 0
        """The most images any one request carried (a frame per turn must not pile up)."""

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]:
        if request.refreshed is not None:
            self.max_images = max(self.max_images, len(request.refreshed.images))
        iterator = self.inner.stream(request, cancelled=cancelled)
        try:
            while True:
                try:
                    chunk = self.stopwatch.time(lambda: next(iterator))
                except StopIteration:
                    return
                yield chunk
        finally:
            self.inner.requests.clear()


class NullDriver:
    """A driver that does nothing, instantly; ``observe`` returns a frame every turn.

    It follows the trace cursor (so the replayed tools stay in step) and times itself, so
    the driver's share is subtracted from the harness's overhead.
    """

    def __init__(self, cursor: TraceCursor, stopwatch: Stopwatch) -> None:
        self.cursor = cursor
        self.stopwatch = stopwatch
        trace = cursor.trace
        self.frames = [trace.frame(turn) for turn in range(1, FRAME_POOL + 1)]
        self.stops = 0

    def connect(self) -> None:
        return None

    def observe(self) -> Observation:
        def observe() -> Observation:
            turn = self.cursor.advance()
            return Observation(
                timestamp=turn.timestamp,
                images={CAMERA: self.frames[turn.turn % FRAME_POOL]},
                state=turn.state,
            )

        return self.stopwatch.time(observe)

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        return self.stopwatch.time(lambda: ActionResult(ok=True, applied=dict(arguments)))

    def stop(self) -> None:
        self.stops += 1

    def disconnect(self) -> None:
        return None


class ImageCountingStore(MemoryRunStore):
    """An in-memory run store that records each image's hash and size but not its bytes.

    It stands in for the on-disk store when measuring memory: a store that keeps every
    frame in RAM grows by design, and that is not what this benchmark is asking.
    """

    def __init__(self) -> None:
        super().__init__()
        self.images_put = 0
        self.image_bytes = 0

    def put_image(self, image: ImagePart) -> None:
        self.images_put += 1
        self.image_bytes += len(image.data)


def rss_bytes() -> int:
    """Current resident set size of this process (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    """This process's own peak RSS: ``VmHWM`` (Linux), which starts afresh at exec, unlike
    ``ru_maxrss``, which a child started by a large parent (``python -m benchmarks``)
    inherits from it."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# --------------------------------------------------------------------------- one mode


@dataclass
class ModeResult:
    mode: str
    compactor: str
    turns_run: int
    status: str
    reason: str
    overhead_s: list[float] = field(default_factory=list)
    """Per turn k (1-based index k-1): harness overhead between decisions k and k+1."""
    overhead_cpu_s: list[float] = field(default_factory=list)
    """The same in CPU seconds of this process."""
    request_tokens: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    model_s: float = 0.0
    driver_s: float = 0.0
    compactions: int = 0
    rss_at: dict[int, int] = field(default_factory=dict)
    peak_rss: int = 0
    images_in_context: int = 0
    """The most images one request carried."""
    image_parts_alive: int = 0
    image_bytes_seen: int = 0
    """Bytes of every encoded frame handed to the store (what would pile up if kept)."""
    skipped: str = ""


def _config(trace: Trace, options: OverheadOptions, mode: str) -> Any:
    if mode == MEMORY_MODE:
        mode = "compaction"
    if mode == "no_compaction":
        return ours_config(
            trace,
            window=NO_COMPACTION_WINDOW,
            reserve=options.reserve,
            overrides=["context.compaction.enabled=false", "context.pruning.enabled=false"],
        )
    return ours_config(trace, window=options.window, reserve=options.reserve)


STORES = ("memory", "sqlite")


@contextlib.contextmanager
def open_store(kind: str, *, synchronous: Literal["FULL", "NORMAL"] = "FULL") -> Iterator[RunStore]:
    """The run store a measurement writes to (see :attr:`OverheadOptions.store`)."""
    if kind == "memory":
        yield ImageCountingStore()
        return
    if kind != "sqlite":
        raise ValueError(f"unknown store {kind!r}; expected one of {list(STORES)}")
    try:
        from harness.store import SQLiteRunStore
    except ImportError as exc:
        raise ValueError(
            "--store sqlite: harness.store.SQLiteRunStore is not on this branch (issue #8)"
        ) from exc
    with tempfile.TemporaryDirectory(prefix="turn-overhead-store-") as folder:
        store = SQLiteRunStore(folder, synchronous=synchronous)
        try:
            yield store
        finally:
            store.close()


def run_mode(options: OverheadOptions, mode: str, trace: Trace | None = None) -> ModeResult:
    """Replay ``options.turns`` turns in one mode and time every turn."""
    if mode == MEMORY_MODE:
        # The durable store (without an fsync per write, which only costs time here).
        first, last = options.memory_points()
        memory = dataclasses.replace(options, histories=(first, last))
        with open_store("sqlite", synchronous="NORMAL") as store:
            return _run_mode(memory, mode, store, None)
    with open_store(options.store) as store:
        return _run_mode(options, mode, store, trace)


def _run_mode(
    options: OverheadOptions, mode: str, store: RunStore, trace: Trace | None
) -> ModeResult:
    trace = trace or generate_trace(TraceSpec(turns=options.turns, facts=0, seed=options.seed))
    cursor = TraceCursor(trace)
    model_clock, driver_clock = Stopwatch(), Stopwatch()
    driver = NullDriver(cursor, driver_clock)
    estimator = TokenEstimator()
    summarizer = DeterministicSummarizer(estimator=estimator, seed=options.seed)
    decision = TimedModel(decision_replay(cursor, stats=DecisionStats()), model_clock)
    harness = replay_harness(
        trace,
        _config(trace, options, mode),
        cursor,
        model=decision,
        compaction_model=TimedModel(summarizer.as_model(count=lambda _: 0), model_clock),
        store=store,
        driver=driver,
    )
    result = ModeResult(
        mode=mode,
        compactor=type(harness.compactor).__name__,
        turns_run=0,
        status="",
        reason="",
    )
    if mode != "no_compaction" and isinstance(harness.compactor, NoCompaction):
        harness.close()
        result.skipped = (
            "no compactor on this branch (NoCompaction: issue #4 not merged); "
            "re-run once it is on main"
        )
        return result
    checkpoints = {h for h in options.histories}
    marks: list[tuple[float, ...]] = []
    started = time.perf_counter()
    with harness:
        for event in harness.run_stream(trace.instruction):
            if isinstance(event, PromptSnapshotEvent):
                marks.append(
                    (
                        time.perf_counter(),
                        model_clock.total + driver_clock.total,
                        time.process_time(),
                        model_clock.cpu + driver_clock.cpu,
                    )
                )
                result.request_tokens.append(event.total_tokens)
                if event.turn in checkpoints:
                    if mode == MEMORY_MODE:
                        gc.collect()  # what is still referenced, not what awaits collection
                    result.rss_at[event.turn] = rss_bytes()
            elif isinstance(event, CompactionEvent) and event.status in ("completed", "fallback"):
                result.compactions += 1
            elif isinstance(event, DoneEvent):
                result.status, result.reason = event.status, event.termination_reason
                result.turns_run = event.turns
    result.wall_s = time.perf_counter() - started
    result.model_s, result.driver_s = model_clock.total, driver_clock.total
    result.images_in_context = decision.max_images
    pairs = list(itertools.pairwise(marks))
    result.overhead_s = [(b[0] - a[0]) - (b[1] - a[1]) for a, b in pairs]
    result.overhead_cpu_s = [max(0.0, (b[2] - a[2]) - (b[3] - a[3])) for a, b in pairs]
    result.peak_rss = peak_rss_bytes()  # before the census below, which costs memory itself
    gc.collect()
    result.image_parts_alive = sum(1 for obj in gc.get_objects() if isinstance(obj, ImagePart))
    result.image_bytes_seen = getattr(store, "image_bytes", 0)
    return result


# --------------------------------------------------------------------------- summaries


@dataclass
class HistoryPoint:
    history: int
    turns: tuple[int, int]
    median_ms: float
    p95_ms: float
    cpu_median_ms: float
    cpu_p95_ms: float
    growth: float
    """CPU median against the shortest history's."""
    request_tokens: int


def summarize_mode(result: ModeResult, histories: Sequence[int]) -> list[HistoryPoint]:
    """Median and p95 over the last 20% of turns (at least 10) up to each history."""
    points: list[HistoryPoint] = []
    base: float | None = None
    for history in sorted(histories):
        if history > len(result.overhead_s):
            continue
        width = max(10, history // 5)
        first = max(1, history - width + 1)
        wall = result.overhead_s[first - 1 : history]
        cpu = result.overhead_cpu_s[first - 1 : history]
        cpu_median = statistics.median(cpu) * 1000
        base = base if base is not None else cpu_median
        points.append(
            HistoryPoint(
                history=history,
                turns=(first, history),
                median_ms=statistics.median(wall) * 1000,
                p95_ms=float(np.percentile(wall, 95)) * 1000,
                cpu_median_ms=cpu_median,
                cpu_p95_ms=float(np.percentile(cpu, 95)) * 1000,
                growth=cpu_median / base if base else 0.0,
                request_tokens=result.request_tokens[history - 1],
            )
        )
    return points


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
    modes: dict[str, ModeResult] = results["modes"]
    lines = [
        f"Harness overhead per turn (ScriptedModel + null driver, a 320x240 frame every turn), "
        f"{options.turns} turns, compaction window {options.window}, reserve {options.reserve}, "
        f"{options.store} run store",
        "",
    ]
    rows = []
    baseline_points = (
        {p.history: p for p in summarize_mode(modes["no_compaction"], options.histories)}
        if "no_compaction" in modes and not modes["no_compaction"].skipped
        else {}
    )
    for mode, result in modes.items():
        if mode == MEMORY_MODE:
            continue  # RSS only: its row is in the memory table
        if result.skipped:
            rows.append([mode, *["-"] * 8, f"skipped: {result.skipped}"])
            continue
        for point in summarize_mode(result, options.histories):
            other = baseline_points.get(point.history)
            versus = (
                f"{point.cpu_median_ms / other.cpu_median_ms:.2f}"
                if mode != "no_compaction" and other and other.cpu_median_ms
                else "-"
            )
            rows.append(
                [
                    mode,
                    str(point.history),
                    f"{point.cpu_median_ms:.2f}",
                    f"{point.cpu_p95_ms:.2f}",
                    f"{point.median_ms:.2f}",
                    f"{point.p95_ms:.2f}",
                    f"{point.growth:.2f}",
                    versus,
                    compact_number(point.request_tokens),
                    f"turns {point.turns[0]}-{point.turns[1]}",
                ]
            )
    lines.append(
        markdown_table(
            (
                "mode",
                "history",
                "CPU median ms/turn",
                "CPU p95",
                "wall median",
                "wall p95",
                "CPU x shortest",
                "CPU x no compaction",
                "request tokens",
                "note",
            ),
            rows,
            left=(0, -1),
        )
    )
    lines += ["", "Loop rate and memory", ""]
    rate_rows = []
    for mode, result in modes.items():
        if result.skipped:
            continue
        rate = result.turns_run / result.wall_s if result.wall_s else 0.0
        overhead = sum(result.overhead_s)
        label = f"{mode}: ScriptedModel + null driver"
        if mode == MEMORY_MODE:
            first, last = sorted(result.rss_at) if len(result.rss_at) == 2 else (0, 0)
            label = f"{mode}: compaction, SQLite store, RSS at turns {first} / {last}"
        rate_rows.append(
            [
                label,
                str(result.turns_run),
                f"{rate:.0f}",
                f"{overhead / result.wall_s:.0%}" if result.wall_s else "-",
                _mb(result.rss_at.get(sorted(result.rss_at)[0])) if result.rss_at else "-",
                _mb(result.rss_at.get(max(result.rss_at))) if result.rss_at else "-",
                _mb(result.peak_rss),
                _mb(result.image_bytes_seen),
                f"{result.images_in_context} / {result.image_parts_alive}",
            ]
        )
    sim = results.get("sim") or {}
    if sim.get("skipped"):
        rate_rows.append(
            [
                "built-in simulator + planner",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                f"skipped: {sim['skipped']}",
            ]
        )
    elif sim:
        rate_rows.append(
            [
                "built-in simulator + planner",
                str(sim["turns"]),
                f"{sim['turns_per_s']:.1f}",
                "-",
                "-",
                "-",
                "-",
                "-",
                f"{sim['status']}",
            ]
        )
    lines.append(
        markdown_table(
            (
                "loop",
                "turns",
                "turns/s",
                "overhead share",
                "RSS first",
                "RSS last",
                "peak RSS",
                "frame bytes stored",
                "max images per request / ImageParts alive",
            ),
            rate_rows,
            left=(0, -1),
        )
    )
    memory = modes.get(MEMORY_MODE)
    if memory is not None and not memory.skipped and len(memory.rss_at) == 2:
        (first, low), (last, high) = sorted(memory.rss_at.items())
        lines.append(
            f"\nRSS with the SQLite run store from turn {first} to turn {last}: "
            f"{(high - low) / 2**20:+.1f} MB ({_mb(low)} -> {_mb(high)}); the in-memory store "
            "rows above grow by design (it keeps every event, item and output)."
        )
    for result in modes.values():
        if result.status and result.status != "completed":
            lines.append(f"\nNOTE: {result.mode} ended {result.status}: {result.reason}")
    live = results.get("live") or {}
    if live.get("rows"):
        from benchmarks.live_viewers import render as render_live

        lines.append("\n" + render_live(live["rows"]))
    elif live.get("skipped"):
        lines.append(f"\nLive viewer rows skipped: {live['skipped']}")
    return "\n".join(lines)


def _mb(value: int | None) -> str:
    if not value:
        return "-"
    return f"{value / 2**20:.0f} MB"


def plot(options: OverheadOptions, results: dict[str, Any], out_dir: Path) -> tuple[Any, str]:
    modes: dict[str, ModeResult] = results["modes"]

    def draw(plt: Any) -> None:
        figure, axis = plt.subplots(figsize=(8, 4.5))
        for mode, result in modes.items():
            if result.skipped or not result.overhead_s or mode == MEMORY_MODE:
                continue
            colour = MODE_COLOURS.get(mode, "black")
            values = np.array(result.overhead_cpu_s) * 1000
            axis.plot(range(1, len(values) + 1), values, linewidth=0.4, alpha=0.3, color=colour)
            points = summarize_mode(result, options.histories)
            axis.plot(
                [p.history for p in points],
                [p.cpu_median_ms for p in points],
                marker="o",
                color=colour,
                label=f"{mode}: CPU median (line: every turn)",
            )
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("history (turns)")
        axis.set_ylabel("harness overhead per turn (CPU ms)")
        axis.set_title("Per-turn overhead vs history length (flat is the goal)")
        axis.legend()
        figure.tight_layout()

    return save_plot("turn_overhead.png", draw, out_dir=out_dir)


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
