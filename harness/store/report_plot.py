"""The report's context chart: estimated context tokens per turn, stacked by request section,
against the window and the compaction threshold, compactions marked, the provider-reported
prompt tokens beside them (matplotlib, the ``report`` extra; without it, a table of the
numbers and a line saying what to install).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from harness.events import (
    CompactionEvent,
    PromptSnapshotEvent,
)
from harness.store.report_timeline import esc

__all__ = ["PLOT_SECTIONS", "SECTION_COLORS", "context_plot_svg", "token_table"]

PLOT_SECTIONS: tuple[str, ...] = ("resident", "tools", "accumulated", "refreshed", "images")
"""Stacking order of the request sections in the plot (most stable at the bottom)."""
SECTION_COLORS = ("#4c72b0", "#8172b3", "#dd8452", "#55a868", "#c44e52")


def context_plot_svg(
    snapshots: list[PromptSnapshotEvent],
    *,
    reported: dict[int, int],
    compactions: list[CompactionEvent],
    resumed_at: Sequence[int] = (),
) -> str | None:
    """Inline SVG of context tokens per turn, or None when matplotlib is not installed.

    Top: the whole window, so the distance to the threshold is honest. Bottom: the same
    stack zoomed to the data, so growth and each compaction's drop are visible even when
    the task used a small part of a large window.
    """
    try:
        import matplotlib
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return None
    by_turn: dict[int, PromptSnapshotEvent] = {}
    for snap in snapshots:
        by_turn[snap.turn] = snap  # the last model call of a turn (after any retry)
    turns = sorted(by_turn)
    if not turns:
        return None
    stacks = [[by_turn[t].sections.get(name, 0) for t in turns] for name in PLOT_SECTIONS]
    window = max(s.budget_tokens for s in by_turn.values())
    threshold = max(s.threshold_tokens for s in by_turn.values())
    totals = [by_turn[t].total_tokens for t in turns]
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9}):
        fig = Figure(figsize=(10, 5.6), layout="constrained")
        full, zoom = fig.subplots(2, 1, sharex=True, height_ratios=(1, 1.3))
        for axes, title in ((full, "whole window"), (zoom, "zoomed to the task")):
            axes.stackplot(
                turns, *stacks, labels=PLOT_SECTIONS, colors=SECTION_COLORS, alpha=0.85, step=None
            )
            axes.set_ylabel("tokens")
            axes.set_title(title, loc="left", fontsize=9, color="#5b6673")
            axes.grid(axis="y", alpha=0.3)
            for event in compactions:
                axes.axvline(event.turn, color="#d4a017", linestyle="--", linewidth=1)
            for turn in resumed_at:
                axes.axvline(turn, color="#8172b3", linestyle="-.", linewidth=1)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            if reported:
                points = sorted(reported.items())
                axes.plot(
                    [p[0] for p in points],
                    [p[1] for p in points],
                    color="black",
                    marker=".",
                    linewidth=1,
                    label="reported by the provider",
                )
        full.axhline(window, color="#c44e52", linewidth=1.5, label=f"window {window}")
        full.axhline(
            threshold, color="#c44e52", linestyle=":", linewidth=1.5, label=f"threshold {threshold}"
        )
        full.set_ylim(0, window * 1.05)
        top = max([*totals, *reported.values(), 1]) * 1.15
        if top >= threshold:
            zoom.axhline(threshold, color="#c44e52", linestyle=":", linewidth=1.5)
            top = max(top, threshold * 1.05)
        zoom.set_ylim(0, top)
        zoom.set_xlabel("turn")
        if compactions:
            full.plot([], [], color="#d4a017", linestyle="--", label="compaction")
        if resumed_at:
            full.plot([], [], color="#8172b3", linestyle="-.", label="resumed after a crash")
        # Outside the axes: inside, it covered the window line it explains.
        handles, labels = full.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=5, fontsize=8, frameon=False)
        full.set_title(
            "context tokens per turn (estimated request, by section)", loc="right", fontsize=9
        )
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]


def token_table(snapshots: list[PromptSnapshotEvent]) -> str:
    head = "".join(f"<th>{esc(name)}</th>" for name in ("turn", *PLOT_SECTIONS, "total"))
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{esc(v)}</td>"
            for v in (s.turn, *(s.sections.get(n, 0) for n in PLOT_SECTIONS), s.total_tokens)
        )
        + "</tr>"
        for s in snapshots
    )
    return f'<table class="tokens"><tr>{head}</tr>{rows}</table>'
