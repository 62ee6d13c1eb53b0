"""The tables and the plot of :mod:`benchmarks.turn_overhead`, from its modes' results.

Per history length: the CPU and wall median and p95 of the overhead, its growth against the
shortest history and against the run without compaction, the request size; per loop: the
turn rate, the overhead's share of it, RSS and what the images cost. Only the live-viewer
rows, measured by another benchmark, are added by the command itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lib.overhead_modes import MEMORY_MODE, ModeResult, OverheadOptions, summarize_mode
from benchmarks.lib.tables import compact_number, markdown_table, save_plot

__all__ = ["plot", "render_tables"]


MODE_COLOURS = {"no_compaction": "#e8590c", "compaction": "#1971c2"}


def render_tables(options: OverheadOptions, results: dict[str, Any]) -> str:
    """The overhead table, the loop-rate and memory table and the notes after them."""
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
