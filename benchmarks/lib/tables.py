"""Printing benchmark tables and writing their plots and JSON under ``benchmarks/out/``.

Tables are GitHub Markdown so the printed output can be pasted into the README as is.
Plots need matplotlib (the ``report`` extra); without it the table is still printed and
the plot is skipped with a note.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["OUT_DIR", "compact_number", "markdown_table", "save_json", "save_plot"]

OUT_DIR = Path(__file__).resolve().parents[1] / "out"


def compact_number(value: float) -> str:
    """1234 -> 1.2k, 12_345_678 -> 12.3M (tables stay narrow)."""
    magnitude = abs(value)
    if magnitude >= 1e9:
        return f"{value / 1e9:.2f}G"
    if magnitude >= 1e6:
        return f"{value / 1e6:.2f}M"
    if magnitude >= 1e4:
        return f"{value / 1e3:.1f}k"
    if magnitude >= 1e3:
        return f"{value / 1e3:.2f}k"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}"


def markdown_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, left: Sequence[int] = (0,)
) -> str:
    """A padded GitHub Markdown table: columns in ``left`` (by index, negative counts from
    the end; default the first) are left-aligned, the others (numbers) right-aligned."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    left_set = {i % len(headers) for i in left}

    def line(row: Sequence[str]) -> str:
        padded = [
            row[i].ljust(widths[i]) if i in left_set else row[i].rjust(widths[i])
            for i in range(len(row))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = ["-" * w if i in left_set else "-" * (w - 1) + ":" for i, w in enumerate(widths)]
    return "\n".join(
        [line(cells[0]), "| " + " | ".join(rule) + " |", *(line(row) for row in cells[1:])]
    )


def save_json(name: str, data: Any, *, out_dir: Path = OUT_DIR) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def save_plot(
    name: str, draw: Callable[[Any], None], *, out_dir: Path = OUT_DIR
) -> tuple[Path | None, str]:
    """Draw with ``draw(pyplot)`` and save; returns (path or None, a note for the user)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None, "plot skipped: matplotlib is not installed (pip install -e '.[report]')"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    try:
        draw(plt)
        plt.savefig(path, dpi=110, bbox_inches="tight")
    finally:
        plt.close("all")
    return path, f"plot written to {path}"
