"""``harness eval-report DIR``: one HTML page for an eval.

The page (``DIR/report.html``) has the summary table, a bar chart of the success rate per
family with its 95 % Wilson interval (matplotlib, the ``report`` extra; without it the
page says so and the table still has the numbers), and one row per episode linking to
that episode's own run report, written beside it into ``DIR/reports/``. Everything is
inline (the chart is SVG), so the folder can be copied or attached as it is.
"""

from __future__ import annotations

import html
import io
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from harness.fleet.episode import EpisodeRecord
from harness.fleet.journal import EvalFolder
from harness.fleet.stats import FamilySummary, summarize
from harness.store.task_page import PAGE_CSS

__all__ = ["rate_chart_svg", "write_eval_report"]

logger = logging.getLogger("harness.fleet")

_CSS = (
    PAGE_CSS
    + """
main{max-width:1200px}
table{border-collapse:collapse;background:#fff;border:1px solid #dde1e6;font-size:14px}
th,td{padding:4px 10px;border-bottom:1px solid #eef0f3;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
td.text{text-align:left;white-space:normal;max-width:420px}
tr.overall td{font-weight:600;border-top:2px solid #c9ced6}
.ok{color:#1a7f37;font-weight:600}.fail{color:#c62828;font-weight:600}
.plot{background:#fff;border:1px solid #dde1e6;padding:8px}.plot svg{width:100%;height:auto}
"""
)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def rate_chart_svg(rows: Sequence[FamilySummary]) -> str | None:
    """Success rate per family with its interval as an inline SVG, or None without
    matplotlib."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return None
    names = [row.family for row in rows]
    rates = [row.rate * 100 for row in rows]
    below = [(row.rate - row.low) * 100 for row in rows]
    above = [(row.high - row.rate) * 100 for row in rows]
    colors = ["#4c72b0" if row.family != "overall" else "#55a868" for row in rows]
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9}):
        fig = Figure(figsize=(10, 0.45 * len(rows) + 1.2), layout="constrained")
        axes = fig.subplots()
        positions = list(range(len(rows)))[::-1]
        axes.barh(positions, rates, color=colors, alpha=0.9, height=0.6)
        axes.errorbar(
            rates, positions, xerr=[below, above], fmt="none", ecolor="#1d232b", capsize=3
        )
        for position, row in zip(positions, rows, strict=True):
            axes.text(
                101,
                position,
                f"{row.successes}/{row.episodes}",
                va="center",
                fontsize=8,
                color="#5b6673",
            )
        axes.set_yticks(positions, names)
        axes.set_xlim(0, 110)
        axes.set_xticks([0, 20, 40, 60, 80, 100])
        axes.set_xlabel("success rate (%), bars: 95 % Wilson interval")
        axes.grid(axis="x", alpha=0.3)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]


def _summary_table(rows: Sequence[FamilySummary]) -> str:
    head = (
        "<tr><th>family</th><th>episodes</th><th>success</th><th>95 % interval</th>"
        "<th>median turns</th><th>median tokens</th><th>cost</th><th>cost / success</th>"
        "<th>clamps</th><th>blocks</th><th>errors</th></tr>"
    )
    body = "".join(
        f'<tr class="{"overall" if row.family == "overall" else ""}">'
        f"<td>{_e(row.family)}</td><td>{row.episodes}</td>"
        f"<td>{row.successes} ({row.rate:.0%})</td>"
        f"<td>{row.low:.0%} – {row.high:.0%}</td>"
        f"<td>{_number(row.median_turns, 1)}</td><td>{_number(row.median_tokens)}</td>"
        f"<td>{_cost(row.cost_usd)}</td><td>{_cost(row.cost_per_success)}</td>"
        f"<td>{row.safety_clamps}</td><td>{row.safety_blocks}</td><td>{row.errors}</td></tr>"
        for row in rows
    )
    return f"<table>{head}{body}</table>"


def _episode_rows(records: Sequence[EpisodeRecord], links: dict[str, str]) -> str:
    head = (
        "<tr><th>episode</th><th>result</th><th>status</th><th>outcome</th><th>turns</th>"
        "<th>tokens</th><th>clamps</th><th>blocks</th><th>wall s</th><th>report</th>"
        "<th>instruction</th></tr>"
    )
    body = []
    for r in records:
        mark = '<span class="ok">success</span>' if r.success else '<span class="fail">no</span>'
        link = links.get(r.key)
        cell = f'<a href="{_e(link)}">{_e(r.run_id)}</a>' if link else _e(r.error[:80] or "-")
        body.append(
            f"<tr><td>{_e(r.key)}</td><td>{mark}</td><td>{_e(r.status)}</td>"
            f"<td>{_e(r.outcome)}</td><td>{r.turns}</td><td>{r.tokens:,}</td>"
            f"<td>{r.safety_clamps}</td><td>{r.safety_blocks}</td><td>{r.wall_s:.1f}</td>"
            f'<td>{cell}</td><td class="text">{_e(r.instruction)}</td></tr>'
        )
    return f"<table>{head}{''.join(body)}</table>"


def _episode_reports(folder: EvalFolder, records: Sequence[EpisodeRecord]) -> dict[str, str]:
    """Write each episode's run report into ``reports/``; key -> relative link."""
    from harness.store.task_page import write_report

    links: dict[str, str] = {}
    for record in records:
        store = folder.folder / record.store
        if not record.run_id or not store.is_dir():
            continue
        name = f"reports/{record.key.replace('/', '.')}.html"
        try:
            write_report(store, record.run_id, folder.folder / name)
        except Exception as exc:  # one unreadable store must not cost the whole page
            logger.warning("no report for %s: %s", record.key, exc)
            continue
        links[record.key] = name
    return links


def write_eval_report(
    directory: str | Path, output: str | Path | None = None, *, episode_reports: bool = True
) -> Path:
    """Write the eval's page (default ``DIR/report.html``); returns its path."""
    folder = EvalFolder(directory)
    manifest = folder.manifest()
    keys = set(manifest.episodes)
    records = sorted(
        (r for r in folder.records() if r.key in keys),
        key=lambda r: manifest.episodes.index(r.key),
    )
    families = list(dict.fromkeys(r.family for r in records))
    rows = summarize(records, families)
    chart = rate_chart_svg(rows)
    chart_html = (
        chart
        if chart is not None
        else "<p>The chart needs matplotlib: <code>pip install 'embodied-harness[report]'"
        "</code>; the table above has the numbers.</p>"
    )
    links = _episode_reports(folder, records) if episode_reports else {}
    pending = len(manifest.episodes) - len(records)
    state = f"{len(records)} of {len(manifest.episodes)} episodes finished"
    if pending:
        state += f" ({pending} not run yet: <code>harness eval --resume {_e(directory)}</code>)"
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>eval {_e(manifest.suite)}</title><style>{_CSS}</style></head><body><main>"
        f"<h1>Eval of suite {_e(manifest.suite)}</h1>"
        f'<div class="sub">model {_e(manifest.model_label)}; {state}; started '
        f"{_e(time.strftime('%Y-%m-%d %H:%M', time.localtime(manifest.created)))}</div>"
        f"<h2>Summary</h2>{_summary_table(rows)}"
        f'<h2>Success rate per family</h2><div class="plot">{chart_html}</div>'
        f"<h2>Episodes</h2>{_episode_rows(records, links)}"
        f'<p class="sub">generated {_e(time.strftime("%Y-%m-%d %H:%M:%S"))} by embodied-harness'
        "</p></main></body></html>\n"
    )
    path = Path(output) if output else folder.folder / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
