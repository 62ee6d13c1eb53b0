"""The report's timeline, turn by turn: camera frames, the model's text and decision, safety
checks, tool calls and results with their images, evaluator verdicts, compactions, replans,
and each sub-agent lane nested under the ``delegate`` call it ran for; and the small HTML
helpers the page shares (escaping, badges, the outcome, data URIs, times).
"""

from __future__ import annotations

import base64
import html
import json
import time
from collections import defaultdict
from typing import Any

from harness.events import (
    Event,
    HandoffEvent,
    ObservationEvent,
    OutcomeEvidence,
    PromptSnapshotEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.messages import ImagePart
from harness.store.reader import RunLog, StoredTask
from harness.store.report_episodes import episode_event_html

__all__ = ["timeline_html"]

RESULT_PREVIEW_CHARS = 4000


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def badge_html(status: str) -> str:
    return f'<span class="badge b-{esc(status)}">{esc(status)}</span>'


def outcome_html(outcome: str, evidence: OutcomeEvidence) -> str:
    """The goal's outcome, who judged it, and each condition that held or did not."""
    who = f"{esc(evidence.checked_by)}: " if evidence.checked_by else ""
    rows = "".join(
        f'<li><span class="badge b-{"held" if c.held else "unheld"}">'
        f"{'held' if c.held else 'not held'}</span> {esc(c.condition)}: {esc(c.evidence)}</li>"
        for c in evidence.conditions
    )
    return f'<p class="outcome">outcome {badge_html(outcome)} {who}{esc(evidence.summary)}</p>' + (
        f"<ul>{rows}</ul>" if rows else ""
    )


def _data_uri(image: ImagePart) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def when_text(stamp: float | None) -> str:
    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def timeline_html(
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
        f"sub-agent lane {esc(lane.id)} {badge_html(status)} {lane.turns} turns, "
        f"{u.prompt_tokens} in / {u.output_tokens} out tokens: {esc(lane.instruction[:160])}"
    )
    return (
        f'<details class="lane" open><summary>{head}</summary>'
        f"{timeline_html(log, events, [], {})}</details>"
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
                f'<div class="missing">{esc(label)} frame not kept<br>'
                "(run.image_retention_every)</div>"
            )
            continue
        caption = f"{image.label or label} {image.width}x{image.height}"
        parts.append(
            f'<figure><img alt="{esc(caption)}" title="click to enlarge" '
            f'onclick="this.classList.toggle(\'big\')" src="{_data_uri(image)}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>"
        )
    return "".join(parts)


def _block(css: str, tag: str, content: str) -> str:
    return f'<div class="ev {css}"><span class="tag">{esc(tag)}</span>{content}</div>'


def _args(arguments: Any) -> str:
    return esc(json.dumps(arguments, ensure_ascii=False, sort_keys=True))


INLINE_ARGUMENTS_CHARS = 80
"""Arguments shorter than this, all plain values, read best on the call's line."""


def call_html(name: str, arguments: Any) -> str:
    """A tool call as a reader takes it in: ``pick(ref=blue_cube_1)`` on one line when its
    arguments are a few plain values, else the name and one line per argument, a list as a
    bulleted list (a plan of three steps is three lines, not a JSON array)."""
    if not isinstance(arguments, dict):
        return f"<b>{esc(name)}</b>({_args(arguments)})"
    plain = all(_plain(value) for value in arguments.values())
    inline = ", ".join(f"{key}={_value_text(value)}" for key, value in sorted(arguments.items()))
    if plain and len(inline) <= INLINE_ARGUMENTS_CHARS:
        return f"<b>{esc(name)}</b>({esc(inline)})"
    rows = "".join(
        f"<li><i>{esc(str(key))}</i>: {_value_html(value)}</li>"
        for key, value in sorted(arguments.items())
    )
    return f'<b>{esc(name)}</b><ul class="args">{rows}</ul>'


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _value_html(value: Any) -> str:
    if isinstance(value, list) and value and all(_plain(item) for item in value):
        return "<ul>" + "".join(f"<li>{esc(_value_text(item))}</li>" for item in value) + "</ul>"
    if _plain(value):
        return esc(_value_text(value))
    return _args(value)


def _event_html(log: RunLog, e: Event) -> str:
    kind = e.type
    marked = episode_event_html(e)
    if marked is not None:
        return _block(*marked)
    if kind == "task_started":
        return _block("note", "task", esc(e.instruction) + esc(f" (max {e.max_turns} turns)"))
    if kind == "task_resumed":
        calls = e.describe_interrupted()
        text = f"after a crash (pid {e.previous_pid}), from turn {e.from_turn}"
        text += f"; interrupted: {calls}" if calls else ""
        text += f"; {e.describe_world()}" if e.describe_world() else ""
        return _block("unknown", "resumed", esc(text))
    if kind == "tools_listed":
        return _block("note", "tools", esc(f"{', '.join(e.tools)} ({e.tokens} tokens)"))
    if kind == "skill_loaded":
        return _block("note", "skill", esc(f"loaded {e.name} ({e.tokens} tokens)"))
    if kind == "scene_update":
        return _block(
            "note",
            "scene",
            esc(
                f"{e.objects} objects; +{len(e.added)} ~{len(e.changed)} -{len(e.removed)}; "
                f"brief {e.brief_tokens} tokens"
            ),
        )
    if kind == "model_response":
        parts = []
        if e.text:
            parts.append(f"<pre>{esc(e.text)}</pre>")
        for call in e.tool_calls:
            parts.append(f"<div>decides {call_html(call['name'], call.get('arguments'))}</div>")
        u = e.usage
        tokens = (
            f"{u.prompt_tokens} in / {u.output_tokens} out"
            if u.complete
            else "usage not reported by the provider"
        )
        parts.append(f'<div class="sub">{esc(e.model)}: {tokens}, {e.duration_s:.2f} s</div>')
        return _block("model", "model", "".join(parts))
    if kind == "safety_check":
        detail = esc(e.reason or ", ".join(e.violations))
        if e.outcome == "clamp":
            detail += f"<div>requested {_args(e.requested)} &rarr; applied {_args(e.applied)}</div>"
        return _block("safety", "safety", f"{badge_html(e.outcome)} {esc(e.tool)} {detail}")
    if kind == "hook_decision":
        return _block("safety", "hook", esc(f"{e.hook} {e.action} {e.tool}: {e.reason}"))
    if kind == "safety":
        return _block("error", "robot", f"<b>{esc(e.problem)}</b> {esc(e.reason)}")
    if kind == "tool_call":
        physical = " (physical)" if e.physical else ""
        return _block("call", "call", call_html(e.name, e.arguments) + esc(physical))
    if kind == "tool_result":
        return _result_html(log, e)
    if kind == "evaluation":
        verdict = e.verdict
        return _block(
            f"eval-{verdict.status}",
            "evaluate",
            f"{badge_html(verdict.status)} {esc(e.tool)} segment {e.segment}: "
            f"{esc(verdict.evidence)}",
        )
    if kind == "compaction":
        if e.status == "started":
            return ""
        text = (
            f"{e.mode} {e.status}: {e.tokens_before} &rarr; {e.tokens_after} tokens, "
            f"{e.items_folded} items folded, {e.items_retained} kept, {e.rounds} rounds"
        )
        reason = f"<div>{esc(e.reason)}</div>" if e.reason else ""
        return _block("compaction", "compaction", text + reason)
    if kind == "replan":
        return _block("note", "replan", esc(e.revision))
    if kind == "user_query":
        text = e.question if e.status == "asked" else f"{e.status}: {e.answer or ''}"
        return _block("note", "ask user", esc(text))
    if kind == "notification":
        return _block("note", f"notify {e.level}", esc(e.message))
    if kind == "progress" and e.source != "model":
        return _block("note", "progress", esc(e.text))
    if kind == "model_error":
        return _block("error", "model error", esc(f"{e.kind}: {e.message}"))
    if kind == "model_retry":
        return _block("error", "retry", esc(f"{e.error_kind}: {e.message} (wait {e.wait_s:.1f} s)"))
    if kind == "lane_started":
        withheld = f"; withheld: {', '.join(e.withheld)}" if e.withheld else ""
        text = f"{e.goal} (tools: {', '.join(e.tools) or 'none'}{withheld}; model {e.model})"
        return _block("note", "sub-agent", esc(text))
    if kind == "handoff":
        content = json.dumps(e.handoff, ensure_ascii=False, indent=1)
        return _block(
            "result" if e.status == "completed" else "error",
            "handoff",
            f"{badge_html(e.status)}<pre>{esc(content)}</pre>",
        )
    if kind == "recovery":
        text = f"{e.resumed} resumed, {e.repaired} repaired, {e.abandoned} abandoned"
        details = "".join(f"<div>{esc(d)}</div>" for d in e.details)
        return _block("note", "recovery", esc(text) + details)
    if kind == "memory_consolidation":
        return _block(
            "note", "memory", esc(f"{e.status}: kept {len(e.kept)}, rejected {len(e.rejected)}")
        )
    if kind == "model_discarded":
        what = "complete answer" if e.complete else "answer in flight"
        return _block("note", "discarded", esc(f"model {what}: {e.reason}"))
    if kind == "done":
        robot = " <b>The robot may still be moving.</b>" if e.robot_stopped is False else ""
        good = (
            e.status == "completed" and e.outcome != "not_achieved" and e.robot_stopped is not False
        )
        return _block(
            "result" if good else "error",
            "done",
            f"{badge_html(e.status)} after {e.turns} turns: {esc(e.termination_reason)} "
            f"&middot; outcome {badge_html(e.outcome)}{robot}",
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
    body = f"<pre>{esc(text[:RESULT_PREVIEW_CHARS])}</pre>"
    if full is not None and len(full) > len(text):
        body += (
            f"<details><summary>exact output ({len(full)} characters, {esc(e.archive)})"
            f"</summary><pre>{esc(full)}</pre></details>"
        )
    images = _frames_html(log, e.images, None) if e.images else ""
    if images:
        body += f'<div class="frames">{images}</div>'
    verdict = f" {badge_html(e.evaluation.status)}" if e.evaluation is not None else ""
    head = f"<b>{esc(e.name)}</b>{esc(kind)}{verdict} <span>{e.duration_s:.2f} s</span>"
    return _block(css, "result", head + body)
