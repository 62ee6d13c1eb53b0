"""Events in words: one log line per event for a viewer's log panel (Foxglove's ``Log``,
Rerun's ``TextLog``), with a level a viewer can filter on.

Streamed fragments (``model_delta``) are left out: the whole response follows as one line.
Events without a describer of their own get a line naming their type, so nothing that
happened is missing from the log.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.events import EventBase
from harness.export.records import LogLevel

__all__ = ["SILENT", "describe"]

SILENT = frozenset({"model_delta"})
"""Event types with no log line of their own."""

_LIMIT = 400


def _short(text: str, limit: int = _LIMIT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call(name: str, arguments: Any) -> str:
    return f"{name}({json.dumps(arguments, ensure_ascii=False, sort_keys=True)})"


def _model_response(e: Any) -> tuple[LogLevel, str]:
    calls = ", ".join(_call(c.get("name", "?"), c.get("arguments", {})) for c in e.tool_calls)
    text = _short(e.text) if e.text else ""
    return "info", "model: " + " -> ".join(part for part in (text, calls) if part)


def _tool_result(e: Any) -> tuple[LogLevel, str]:
    level: LogLevel = "error" if e.is_error else "info"
    return level, f"{e.name} -> {_short(e.text)}"


def _safety_check(e: Any) -> tuple[LogLevel, str]:
    level: LogLevel = {"allow": "info", "clamp": "warning", "block": "error"}[e.outcome]
    reason = f": {_short(e.reason)}" if e.reason else ""
    return level, f"safety {e.outcome} {_call(e.tool, e.applied or e.requested)}{reason}"


def _evaluation(e: Any) -> tuple[LogLevel, str]:
    level: LogLevel = "info" if e.verdict.status == "success" else "warning"
    return level, f"evaluation {e.tool}: {e.verdict.status}: {_short(e.verdict.evidence)}"


def _done(e: Any) -> tuple[LogLevel, str]:
    level: LogLevel = "info" if e.succeeded else "error"
    return level, f"done: {e.status}, outcome {e.outcome} after {e.turns} turns"


def _notification(e: Any) -> tuple[LogLevel, str]:
    return e.level, f"notification: {_short(e.message)}"


_DESCRIBERS: dict[str, Callable[[Any], tuple[LogLevel, str]]] = {
    "task_started": lambda e: ("info", f"task: {_short(e.instruction)}"),
    "task_resumed": lambda e: ("warning", f"task resumed from turn {e.from_turn}"),
    "tools_listed": lambda e: ("debug", f"{len(e.tools)} tools: {', '.join(e.tools)}"),
    "skill_loaded": lambda e: ("info", f"skill loaded: {e.name} ({e.tokens} tokens)"),
    "observation": lambda e: ("debug", f"observation: {len(e.images)} image(s)"),
    "scene_update": lambda e: (
        "debug",
        f"scene: {e.objects} objects; changed {', '.join(e.changed) or 'nothing'}",
    ),
    "prompt_snapshot": lambda e: (
        "debug",
        f"context: {e.total_tokens} of {e.budget_tokens} tokens",
    ),
    "model_response": _model_response,
    "model_retry": lambda e: ("warning", f"model retry {e.attempt}: {_short(e.message)}"),
    "model_error": lambda e: ("error", f"model error {e.kind}: {_short(e.message)}"),
    "model_discarded": lambda e: ("warning", f"model answer discarded: {_short(e.reason)}"),
    "progress": lambda e: ("info", f"{e.source}: {_short(e.text)}"),
    "tool_call": lambda e: ("info", "call " + _call(e.name, e.arguments)),
    "tool_result": _tool_result,
    "safety_check": _safety_check,
    "hook_decision": lambda e: ("warning", f"hook {e.hook} {e.action} {e.tool}: {e.reason}"),
    "evaluation": _evaluation,
    "compaction": lambda e: (
        "info",
        f"compaction {e.mode} {e.status}: {e.tokens_before} -> {e.tokens_after} tokens",
    ),
    "episode": lambda e: ("info", f"episode {e.status}: {e.name} ({e.kind})"),
    "context_pressure": lambda e: ("warning", f"context pressure: {e.tokens} tokens"),
    "replan": lambda e: ("info", f"replan: {_short(e.revision)}"),
    "user_query": lambda e: ("info", f"question ({e.status}): {_short(e.question)}"),
    "notification": _notification,
    "safety": lambda e: ("error", f"SAFETY {e.problem}: {_short(e.reason)}"),
    "done": _done,
}


def describe(event: EventBase) -> tuple[LogLevel, str] | None:
    """(level, text) for ``event``, or None for an event with no line of its own."""
    kind = str(getattr(event, "type", ""))
    if kind in SILENT:
        return None
    describer = _DESCRIBERS.get(kind)
    if describer is None:
        return "info", kind.replace("_", " ")
    return describer(event)
