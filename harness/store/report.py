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

import base64
import html
import io
import json
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.events import (
    CompactionEvent,
    DoneEvent,
    Event,
    HandoffEvent,
    ModelResponseEvent,
    ObservationEvent,
    OutcomeEvidence,
    PromptSnapshotEvent,
    TaskResumedEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.messages import ImagePart, InstructionItem
from harness.store.reader import RunLog, StoredTask
from harness.store.report_episodes import episode_event_html, episodes_html

__all__ = ["PAGE_CSS", "PLOT_SECTIONS", "context_plot_svg", "render_report", "write_report"]

PLOT_SECTIONS: tuple[str, ...] = ("resident", "tools", "accumulated", "refreshed", "images")
"""Stacking order of the request sections in the plot (most stable at the bottom)."""
SECTION_COLORS = ("#4c72b0", "#8172b3", "#dd8452", "#55a868", "#c44e52")
RESULT_PREVIEW_CHARS = 4000

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


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _badge(status: str) -> str:
    return f'<span class="badge b-{_e(status)}">{_e(status)}</span>'


def _outcome_html(outcome: str, evidence: OutcomeEvidence) -> str:
    """The goal's outcome, who judged it, and each condition that held or did not."""
    who = f"{_e(evidence.checked_by)}: " if evidence.checked_by else ""
    rows = "".join(
        f'<li><span class="badge b-{"held" if c.held else "unheld"}">'
        f"{'held' if c.held else 'not held'}</span> {_e(c.condition)}: {_e(c.evidence)}</li>"
        for c in evidence.conditions
    )
    return f'<p class="outcome">outcome {_badge(outcome)} {who}{_e(evidence.summary)}</p>' + (
        f"<ul>{rows}</ul>" if rows else ""
    )


def _data_uri(image: ImagePart) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def _when(stamp: float | None) -> str:
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


# ====================================================================== the plot


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


def _token_table(snapshots: list[PromptSnapshotEvent]) -> str:
    head = "".join(f"<th>{_e(name)}</th>" for name in ("turn", *PLOT_SECTIONS, "total"))
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{_e(v)}</td>"
            for v in (s.turn, *(s.sections.get(n, 0) for n in PLOT_SECTIONS), s.total_tokens)
        )
        + "</tr>"
        for s in snapshots
    )
    return f'<table class="tokens"><tr>{head}</tr>{rows}</table>'


# ====================================================================== the page


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
    compactions = [
        e
        for e in events
        if isinstance(e, CompactionEvent) and e.status in ("completed", "fallback")
    ]
    resumed_at = [e.from_turn for e in events if isinstance(e, TaskResumedEvent)]
    plot = context_plot_svg(
        snapshots, reported=reported, compactions=compactions, resumed_at=resumed_at
    )
    if plot is None and snapshots:
        plot_html = (
            "<p>The plot needs matplotlib: <code>pip install 'embodied-harness[report]'</code>. "
            "The numbers:</p>" + _token_table(snapshots)
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
    turns_html = _turns_html(log, events, given, lanes)
    done = next((e for e in reversed(events) if isinstance(e, DoneEvent)), None)
    final = (
        f'<div class="report"><p>{_badge(done.status)} {_e(done.termination_reason)}</p>'
        f"{_outcome_html(done.outcome, done.evidence)}"
        f"<pre>{_e(done.report)}</pre></div>"
        if done is not None
        else f'<div class="report"><p>{_badge(task.status)} the task has no done event '
        "(it is running, or its process died: <code>harness resume "
        f"{_e(task.session_id)}</code>)</p></div>"
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(task.id)}: {_e(task.instruction[:80])}</title>"
        f"<style>{_CSS}</style></head><body><main>"
        f"<h1>{_e(task.instruction)}</h1>"
        f'<div class="sub">task {_e(task.id)} in session {_e(task.session_id)}</div>'
        f"{_summary(task, config)}"
        f"<h2>Result</h2>{final}{episodes_html(log, task_id)}"
        f'<h2>Context tokens per turn</h2><div class="plot">{plot_html}</div>'
        f"<h2>Timeline</h2>{turns_html}"
        f'<p class="sub">generated {_e(_when(time.time()))} by embodied-harness</p>'
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
        ("status", _badge(task.status) + (f" {_e(task.reason)}" if task.reason else "")),
        (
            "outcome",
            _badge(task.outcome)
            + (f" {_e(task.evidence.checked_by)}: " if task.evidence.checked_by else " ")
            + _e(task.evidence.summary),
        ),
        ("turns", _e(task.turns)),
        ("model", _e(f"{model.get('provider', '?')}:{model.get('name', '?')}")),
        (
            "tokens",
            _e(
                f"{u.prompt_tokens} in ({u.cache_read_tokens} cached) / {u.output_tokens} out, "
                f"{u.requests} model calls"
                + (
                    f"; usage not reported for {u.unreported_requests} of them"
                    if u.unreported_requests
                    else ""
                )
            ),
        ),
        ("cost", _e(f"${u.cost_usd:.4f}" if u.cost_usd is not None else "not priced")),
        ("started", _e(_when(task.started_at))),
        (
            "duration",
            _e(f"{task.duration_s:.1f} s" if task.duration_s is not None else "-")
            + (_e(f" (resumed {task.resumes}x after a crash)") if task.resumes else ""),
        ),
    ]
    body = "".join(f"<tr><td>{name}</td><td>{value}</td></tr>" for name, value in rows)
    return f'<table class="summary">{body}</table>'


def _turns_html(
    log: RunLog, events: list[Event], given: list[str], lanes: dict[str, StoredTask]
) -> str:
    by_turn: dict[int, list[Event]] = defaultdict(list)
    for event in events:
        by_turn[event.turn].append(event)
    return "".join(
        _turn_html(log, turn, by_turn[turn], given if turn == 0 else [], lanes)
        for turn in sorted(by_turn)
    )


def _lane_html(log: RunLog, lane: StoredTask) -> str:
    """A sub-agent lane, nested under the ``delegate`` call it ran for."""
    events = log.events(task_id=lane.id)
    handoff = next((e for e in reversed(events) if isinstance(e, HandoffEvent)), None)
    status = handoff.status if handoff is not None else lane.status
    u = lane.usage
    head = (
        f"sub-agent lane {_e(lane.id)} {_badge(status)} {lane.turns} turns, "
        f"{u.prompt_tokens} in / {u.output_tokens} out tokens: {_e(lane.instruction[:160])}"
    )
    return (
        f'<details class="lane" open><summary>{head}</summary>'
        f"{_turns_html(log, events, [], {})}</details>"
    )


def _turn_html(
    log: RunLog,
    turn: int,
    events: list[Event],
    given: list[str],
    lanes: dict[str, StoredTask] | None = None,
) -> str:
    """One turn's section; ``given`` are images that came with the instruction, ``lanes``
    the sub-agent lanes by the ``delegate`` call they ran for (nested after that call)."""
    snapshot = next((e for e in reversed(events) if isinstance(e, PromptSnapshotEvent)), None)
    title = "Start" if turn == 0 else f"Turn {turn}"
    tokens = (
        f'<span class="tokens">{snapshot.total_tokens} / {snapshot.budget_tokens} tokens '
        f"(threshold {snapshot.threshold_tokens})</span>"
        if snapshot is not None
        else ""
    )
    frames = _frames_html(log, given, None) + "".join(
        _frames_html(log, e.images, e.cameras) for e in events if isinstance(e, ObservationEvent)
    )
    lanes = lanes or {}
    body = "".join(
        _event_html(log, e)
        + (
            _lane_html(log, lanes[e.call_id])
            if isinstance(e, ToolCallEvent) and e.call_id in lanes
            else ""
        )
        for e in events
    )
    frames_div = f'<div class="frames">{frames}</div>' if frames else ""
    return f'<section class="turn"><h3>{title}{tokens}</h3>{frames_div}{body}</section>'


def _frames_html(log: RunLog, hashes: list[str], cameras: dict[str, list[int]] | None) -> str:
    names = list((cameras or {}).keys())
    parts = []
    for index, sha in enumerate(hashes):
        image = log.image(sha)
        label = names[index] if index < len(names) else ""
        if image is None:
            parts.append(
                f'<div class="missing">{_e(label)} frame not kept<br>'
                "(run.image_retention_every)</div>"
            )
            continue
        caption = f"{image.label or label} {image.width}x{image.height}"
        parts.append(
            f'<figure><img alt="{_e(caption)}" title="click to enlarge" '
            f'onclick="this.classList.toggle(\'big\')" src="{_data_uri(image)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )
    return "".join(parts)


def _block(css: str, tag: str, content: str) -> str:
    return f'<div class="ev {css}"><span class="tag">{_e(tag)}</span>{content}</div>'


def _args(arguments: Any) -> str:
    return _e(json.dumps(arguments, ensure_ascii=False, sort_keys=True))


def _event_html(log: RunLog, e: Event) -> str:
    kind = e.type
    marked = episode_event_html(e)
    if marked is not None:
        return _block(*marked)
    if kind == "task_started":
        return _block("note", "task", _e(e.instruction) + _e(f" (max {e.max_turns} turns)"))
    if kind == "task_resumed":
        calls = e.describe_interrupted()
        text = f"after a crash (pid {e.previous_pid}), from turn {e.from_turn}"
        text += f"; interrupted: {calls}" if calls else ""
        text += f"; {e.describe_world()}" if e.describe_world() else ""
        return _block("unknown", "resumed", _e(text))
    if kind == "tools_listed":
        return _block("note", "tools", _e(f"{', '.join(e.tools)} ({e.tokens} tokens)"))
    if kind == "skill_loaded":
        return _block("note", "skill", _e(f"loaded {e.name} ({e.tokens} tokens)"))
    if kind == "scene_update":
        return _block(
            "note",
            "scene",
            _e(
                f"{e.objects} objects; +{len(e.added)} ~{len(e.changed)} -{len(e.removed)}; "
                f"brief {e.brief_tokens} tokens"
            ),
        )
    if kind == "model_response":
        parts = []
        if e.text:
            parts.append(f"<pre>{_e(e.text)}</pre>")
        for call in e.tool_calls:
            name, arguments = _e(call["name"]), _args(call.get("arguments"))
            parts.append(f"<div>decides <b>{name}</b>({arguments})</div>")
        u = e.usage
        tokens = (
            f"{u.prompt_tokens} in / {u.output_tokens} out"
            if u.complete
            else "usage not reported by the provider"
        )
        parts.append(f'<div class="sub">{_e(e.model)}: {tokens}, {e.duration_s:.2f} s</div>')
        return _block("model", "model", "".join(parts))
    if kind == "safety_check":
        detail = _e(e.reason or ", ".join(e.violations))
        if e.outcome == "clamp":
            detail += f"<div>requested {_args(e.requested)} &rarr; applied {_args(e.applied)}</div>"
        return _block("safety", "safety", f"{_badge(e.outcome)} {_e(e.tool)} {detail}")
    if kind == "hook_decision":
        return _block("safety", "hook", _e(f"{e.hook} {e.action} {e.tool}: {e.reason}"))
    if kind == "safety":
        return _block("error", "robot", f"<b>{_e(e.problem)}</b> {_e(e.reason)}")
    if kind == "tool_call":
        physical = " (physical)" if e.physical else ""
        return _block("call", "call", f"<b>{_e(e.name)}</b>({_args(e.arguments)}){_e(physical)}")
    if kind == "tool_result":
        return _result_html(log, e)
    if kind == "evaluation":
        verdict = e.verdict
        return _block(
            f"eval-{verdict.status}",
            "evaluate",
            f"{_badge(verdict.status)} {_e(e.tool)} segment {e.segment}: {_e(verdict.evidence)}",
        )
    if kind == "compaction":
        if e.status == "started":
            return ""
        text = (
            f"{e.mode} {e.status}: {e.tokens_before} &rarr; {e.tokens_after} tokens, "
            f"{e.items_folded} items folded, {e.items_retained} kept, {e.rounds} rounds"
        )
        reason = f"<div>{_e(e.reason)}</div>" if e.reason else ""
        return _block("compaction", "compaction", text + reason)
    if kind == "replan":
        return _block("note", "replan", _e(e.revision))
    if kind == "user_query":
        text = e.question if e.status == "asked" else f"{e.status}: {e.answer or ''}"
        return _block("note", "ask user", _e(text))
    if kind == "notification":
        return _block("note", f"notify {e.level}", _e(e.message))
    if kind == "progress" and e.source != "model":
        return _block("note", "progress", _e(e.text))
    if kind == "model_error":
        return _block("error", "model error", _e(f"{e.kind}: {e.message}"))
    if kind == "model_retry":
        return _block("error", "retry", _e(f"{e.error_kind}: {e.message} (wait {e.wait_s:.1f} s)"))
    if kind == "lane_started":
        withheld = f"; withheld: {', '.join(e.withheld)}" if e.withheld else ""
        text = f"{e.goal} (tools: {', '.join(e.tools) or 'none'}{withheld}; model {e.model})"
        return _block("note", "sub-agent", _e(text))
    if kind == "handoff":
        content = json.dumps(e.handoff, ensure_ascii=False, indent=1)
        return _block(
            "result" if e.status == "completed" else "error",
            "handoff",
            f"{_badge(e.status)}<pre>{_e(content)}</pre>",
        )
    if kind == "recovery":
        text = f"{e.resumed} resumed, {e.repaired} repaired, {e.abandoned} abandoned"
        details = "".join(f"<div>{_e(d)}</div>" for d in e.details)
        return _block("note", "recovery", _e(text) + details)
    if kind == "memory_consolidation":
        return _block(
            "note", "memory", _e(f"{e.status}: kept {len(e.kept)}, rejected {len(e.rejected)}")
        )
    if kind == "model_discarded":
        what = "complete answer" if e.complete else "answer in flight"
        return _block("note", "discarded", _e(f"model {what}: {e.reason}"))
    if kind == "done":
        robot = " <b>The robot may still be moving.</b>" if e.robot_stopped is False else ""
        good = (
            e.status == "completed" and e.outcome != "not_achieved" and e.robot_stopped is not False
        )
        return _block(
            "result" if good else "error",
            "done",
            f"{_badge(e.status)} after {e.turns} turns: {_e(e.termination_reason)} "
            f"&middot; outcome {_badge(e.outcome)}{robot}",
        )
    return ""  # model deltas, prompt snapshots (in the header), observations (as frames)


def _result_html(log: RunLog, e: ToolResultEvent) -> str:
    # An interrupted or timed-out motion's outcome is unknown: not shown as a failure.
    unknown = e.error_kind == "outcome_unknown"
    failed = e.is_error or (e.evaluation is not None and e.evaluation.status == "failure")
    css = "unknown" if unknown else ("error" if failed else "result")
    kind = f" [{e.error_kind}]" if e.error_kind else ""
    text = e.text
    full = log.archive(e.archive) if e.archive else None
    body = f"<pre>{_e(text[:RESULT_PREVIEW_CHARS])}</pre>"
    if full is not None and len(full) > len(text):
        body += (
            f"<details><summary>exact output ({len(full)} characters, {_e(e.archive)})"
            f"</summary><pre>{_e(full)}</pre></details>"
        )
    images = _frames_html(log, e.images, None) if e.images else ""
    if images:
        body += f'<div class="frames">{images}</div>'
    verdict = f" {_badge(e.evaluation.status)}" if e.evaluation is not None else ""
    head = f"<b>{_e(e.name)}</b>{_e(kind)}{verdict} <span>{e.duration_s:.2f} s</span>"
    return _block(css, "result", head + body)
