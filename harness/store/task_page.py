"""One self-contained HTML file per task: what the robot saw, decided, did and was told.

The page has no external references (images are data URIs, the plot is inline SVG, the
style is inline), so it can be mailed, attached to a ticket or opened on a machine with no
network. Sections:

- a summary (instruction, status, turns, tokens, cost, model, duration);
- a plot of the estimated context tokens per turn, stacked by section, against the window
  and the compaction threshold, with compactions marked and the provider-reported prompt
  tokens for comparison (matplotlib, the ``report`` extra; without it the report says so
  and lists the numbers in a table);
- the timeline, turn by turn: camera frames, the model's text and decision, safety checks,
  tool calls and results (with their images), evaluator verdicts, compactions, replans,
  and each sub-agent lane nested (turn by turn, to its handoff) under the ``delegate``
  call it ran for;
- the final report.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from harness.events import (
    CompactionEvent,
    DoneEvent,
    ModelResponseEvent,
    PromptSnapshotEvent,
    TaskResumedEvent,
)
from harness.messages import InstructionItem
from harness.store.reader import RunLog, StoredTask
from harness.store.report_episodes import episodes_html
from harness.store.report_plot import (
    PLOT_SECTIONS,
    SECTION_COLORS,
    context_plot_svg,
    token_table,
)
from harness.store.report_timeline import (
    badge_html,
    esc,
    outcome_html,
    timeline_html,
    when_text,
)

__all__ = [
    "PAGE_CSS",
    "PLOT_SECTIONS",
    "SECTION_COLORS",
    "charted_compactions",
    "context_plot_svg",
    "render_report",
    "save_report",
    "write_report",
]

PAGE_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f6f7f9;
color:#1d232b}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px}
.sub{color:#5b6673;margin-bottom:16px}
"""
"""The look every HTML page of the harness shares (this report, the eval page)."""

_CSS = (
    PAGE_CSS
    + """
table.summary{border-collapse:collapse;background:#fff;border:1px solid #dde1e6}
table.summary td{padding:4px 12px;border-bottom:1px solid #eef0f3;vertical-align:top}
table.summary td:first-child{color:#5b6673;white-space:nowrap}
.plot{background:#fff;border:1px solid #dde1e6;padding:8px;margin-top:8px}
.plot svg{width:100%;height:auto}
.turn{background:#fff;border:1px solid #dde1e6;border-radius:6px;margin:14px 0;padding:12px 16px}
.turn h3{margin:0 0 8px;font-size:15px;display:flex;gap:12px;align-items:baseline}
.turn h3 .tokens{font-weight:normal;color:#5b6673;font-size:13px}
.frames{display:flex;gap:10px;flex-wrap:wrap;margin:6px 0 10px}
figure{margin:0}figure img{max-width:320px;border:1px solid #ccd2d9;border-radius:3px;
display:block;cursor:zoom-in}figure img.big{max-width:100%;cursor:zoom-out}
.frames:has(img.big){display:block}
figcaption{font-size:12px;color:#5b6673}
.missing{width:160px;height:90px;border:1px dashed #b9c0c8;color:#7a8591;font-size:12px;
display:flex;align-items:center;justify-content:center;text-align:center;padding:4px}
.ev{margin:6px 0;padding:6px 10px;border-left:4px solid #ccd2d9;background:#fafbfc}
.ev .tag{font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.04em;
margin-right:8px;color:#3a4450}
.ev.model{border-color:#4c72b0}.ev.call{border-color:#8172b3}.ev.result{border-color:#55a868}
.ev.error{border-color:#c44e52;background:#fdf3f3}.ev.safety{border-color:#dd8452}
.ev.eval-success{border-color:#2e8b57;background:#f1faf4}
.ev.eval-failure{border-color:#c44e52;background:#fdf3f3}
.ev.eval-process{border-color:#d4a017}
.ev.compaction{border-color:#d4a017;background:#fffbea}.ev.note{border-color:#9aa5b1}
.ev.unknown{border-color:#d4a017;background:#fffbea}
ul.args{margin:2px 0 0;padding-left:18px}ul.args ul{margin:0;padding-left:18px}
pre{white-space:pre-wrap;word-break:break-word;font-size:12.5px;margin:4px 0 0;
font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;color:#fff}
.b-completed,.b-success,.b-allow{background:#2e8b57}.b-failed,.b-failure,.b-block{background:#c44e52}
.b-cancelled,.b-clamp,.b-process,.b-max_turns,.b-failure_budget,.b-interrupted,.b-running,
.b-max_tokens,.b-budget_exhausted,.b-provider_error{background:#d4a017}
.b-achieved,.b-held{background:#2e8b57}.b-not_achieved,.b-unheld{background:#c44e52}
.b-unverified,.b-unknown{background:#d4a017}
details.lane{margin:8px 0 8px 18px;padding:4px 0 4px 12px;border-left:3px solid #8172b3}
details.lane>summary{font-size:13px;color:#3a4450}
details.lane .turn{margin:8px 0}
.report{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:12px 16px}
details summary{cursor:pointer;color:#4c72b0;font-size:12px}
table.tokens{border-collapse:collapse;font-size:12px}table.tokens td,table.tokens th{
padding:2px 8px;border-bottom:1px solid #eef0f3;text-align:right}
"""
)


def render_report(log: RunLog, task_id: str) -> str:
    """The HTML report of one recorded task."""
    task = log.task(task_id)
    events = log.events(task_id=task_id)
    config = log.session(task.session_id).config
    snapshots = [e for e in events if isinstance(e, PromptSnapshotEvent)]
    reported = {
        e.turn: e.usage.prompt_tokens
        for e in events
        if isinstance(e, ModelResponseEvent) and e.usage.prompt_tokens
    }
    compactions = charted_compactions(events)
    resumed_at = [e.from_turn for e in events if isinstance(e, TaskResumedEvent)]
    plot = context_plot_svg(
        snapshots, reported=reported, compactions=compactions, resumed_at=resumed_at
    )
    if plot is None and snapshots:
        plot_html = (
            "<p>The plot needs matplotlib: <code>pip install 'embodied-harness[report]'</code>. "
            "The numbers:</p>" + token_table(snapshots)
        )
    elif plot is None:
        plot_html = "<p>No model call was recorded, so there is no context to plot.</p>"
    else:
        plot_html = plot

    given = [
        ref.sha256
        for stored in log.items(task.session_id, task_id=task_id)
        if isinstance(stored.item, InstructionItem)
        for ref in stored.item.images
    ]
    lanes = {lane.parent_call_id or "": lane for lane in log.lanes(task_id)}
    turns_html = timeline_html(log, events, given, lanes)
    done = next((e for e in reversed(events) if isinstance(e, DoneEvent)), None)
    damage = (
        '<div class="report"><p><strong>The run store is damaged</strong>; this page shows '
        "what was intact:</p><ul>"
        + "".join(f"<li>{esc(d.line())}</li>" for d in log.damage)
        + "</ul></div>"
        if log.damage
        else ""
    )
    final = (
        f'<div class="report"><p>{badge_html(done.status)} {esc(done.termination_reason)}</p>'
        f"{outcome_html(done.outcome, done.evidence)}"
        f"<pre>{esc(done.report)}</pre></div>"
        if done is not None
        else f'<div class="report"><p>{badge_html(task.status)} the task has no done event '
        "(it is running, or its process died: <code>harness resume "
        f"{esc(task.session_id)}</code>)</p></div>"
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{esc(task.id)}: {esc(task.instruction[:80])}</title>"
        f"<style>{_CSS}</style></head><body><main>"
        f"<h1>{esc(task.instruction)}</h1>"
        f'<div class="sub">task {esc(task.id)} in session {esc(task.session_id)}</div>'
        f"{damage}{_summary(task, config)}"
        f"<h2>Result</h2>{final}{episodes_html(log, task_id)}"
        f'<h2>Context tokens per turn</h2><div class="plot">{plot_html}</div>'
        f"<h2>Timeline</h2>{turns_html}"
        f'<p class="sub">generated {esc(when_text(time.time()))} by embodied-harness</p>'
        "</main></body></html>\n"
    )


def write_report(
    store: str | os.PathLike[str],
    task_id: str = "last",
    output: str | os.PathLike[str] | None = None,
) -> Path:
    """Write the report of a task (id, session id or ``last``) in the run store folder
    ``store``; returns the file (default ``<store>/reports/<task>.html``). This is what
    ``harness report`` does, for scripts and the demo to call at the end of a run."""
    with RunLog(store, redact=True) as log:
        return save_report(log, task_id, output)


def save_report(
    log: RunLog, task_id: str = "last", output: str | os.PathLike[str] | None = None
) -> Path:
    """:func:`write_report` from an open store (the damage it meets stays in ``log``)."""
    task = log.resolve(task_id)
    page = render_report(log, task.id)
    path = Path(output) if output else log.folder / "reports" / f"{task.id}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def _summary(task: StoredTask, config: dict[str, Any]) -> str:
    model = config.get("model") or {}
    u = task.usage
    rows = [
        ("status", badge_html(task.status) + (f" {esc(task.reason)}" if task.reason else "")),
        (
            "outcome",
            badge_html(task.outcome)
            + (f" {esc(task.evidence.checked_by)}: " if task.evidence.checked_by else " ")
            + esc(task.evidence.summary),
        ),
        ("turns", esc(task.turns)),
        ("model", esc(f"{model.get('provider', '?')}:{model.get('name', '?')}")),
        (
            "tokens",
            esc(
                f"{u.prompt_tokens} in ({u.cache_read_tokens} cached) / {u.output_tokens} out, "
                f"{u.requests} model calls"
                + (
                    f"; usage not reported for {u.unreported_requests} of them"
                    if u.unreported_requests
                    else ""
                )
            ),
        ),
        ("cost", esc(f"${u.cost_usd:.4f}" if u.cost_usd is not None else "not priced")),
        ("started", esc(when_text(task.started_at))),
        (
            "duration",
            esc(
                f"{task.duration_s:.1f} s (the task, from its start to its end)"
                if task.duration_s is not None
                else "-"
            )
            + (esc(f" (resumed {task.resumes}x after a crash)") if task.resumes else ""),
        ),
    ]
    body = "".join(f"<tr><td>{name}</td><td>{value}</td></tr>" for name, value in rows)
    return f'<table class="summary">{body}</table>'


def charted_compactions(events: list[Any]) -> list[CompactionEvent]:
    """The passes the context chart marks: those that rewrote the context. A ``supersede``
    (the previous Task Notes snapshot leaving as the next arrives, most turns, nothing
    cached after it) is not one: marked, it drew a compaction line on nearly every turn."""
    return [
        e
        for e in events
        if isinstance(e, CompactionEvent)
        and e.status in ("completed", "fallback")
        and e.mode != "supersede"
    ]
