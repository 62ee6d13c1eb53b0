"""One mode of :mod:`benchmarks.turn_overhead`: its options, its run over a replayed trace
with every turn timed, and the per-history summary of those timings.

A mode is what runs in its own process (so its peak RSS is its own): the same trace
replayed on a real Harness without compaction, with compaction, or with compaction on the
SQLite store for memory only (``bounded_memory``). The command
(:mod:`benchmarks.turn_overhead`) starts one process per mode and prints the tables of
:mod:`benchmarks.lib.overhead_report`.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.lib.ours import ours_config
from benchmarks.lib.overhead_instruments import (
    NullDriver,
    Stopwatch,
    TimedModel,
    open_store,
    peak_rss_bytes,
    rss_bytes,
)
from benchmarks.lib.replay import DecisionStats, TraceCursor, decision_replay, replay_harness
from benchmarks.lib.session_trace import Trace, TraceSpec
from benchmarks.lib.summarizer import DeterministicSummarizer
from benchmarks.lib.trace_generator import generate_trace
from harness.context.compaction.compactor import NoCompaction
from harness.events import CompactionEvent, DoneEvent, PromptSnapshotEvent
from harness.messages import ImagePart
from harness.protocols import RunStore
from harness.tokens import TokenEstimator

__all__ = [
    "MEMORY_MODE",
    "MODES",
    "HistoryPoint",
    "ModeResult",
    "OverheadOptions",
    "run_mode",
    "summarize_mode",
]


MODES = ("no_compaction", "compaction", "bounded_memory")
MEMORY_MODE = "bounded_memory"
"""The compaction run on the SQLite store, for RSS only (no overhead rows)."""
NO_COMPACTION_WINDOW = 1_000_000_000


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
