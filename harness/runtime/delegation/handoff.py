"""What a sub-agent hands back: a bounded, schema-checked :class:`Handoff`, never its trace.

The child's final answer is parsed against its contract's schema (:func:`parse_answer`);
the parent's side watches the child's events (:class:`LaneRecord`) for what the harness
itself saw it do, and :func:`handoff_of` joins both with the child's ending into the
handoff the parent's ``delegate`` call returns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from harness.events import (
    EventBase,
    HandoffStatus,
    ModelErrorEvent,
    ModelResponseEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.runtime.delegation.contract import BOOKKEEPING_TOOLS, Contract
from harness.runtime.task import TaskEnding

__all__ = [
    "EVIDENCE_FALLBACK",
    "ITEM_MAX_CHARS",
    "STANDARD_FIELDS",
    "Handoff",
    "LaneRecord",
    "handoff_of",
    "handoff_status",
    "parse_answer",
    "refused_handoff",
]

STANDARD_FIELDS = ("summary", "findings", "decisions", "world_changes", "verification")
ITEM_MAX_CHARS = 400
"""Longest string of a handoff as the parent receives it (the archive keeps it whole)."""
EVIDENCE_FALLBACK = 5
"""Archive addresses cited for a child that cited none: its latest tool results."""


class Handoff(BaseModel):
    """What a sub-agent hands back: a status, its findings and the evidence, never its
    trace. ``output`` is the validated answer itself (the whole answer, for a custom
    ``output_schema``); ``error`` says why a handoff is not ``completed``."""

    model_config = ConfigDict(extra="forbid")

    status: HandoffStatus
    summary: str = ""
    findings: list[Any] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    world_changes: list[str] = Field(default_factory=list)
    verification: list[str] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    """archive:// addresses of the tool results behind the findings (recall reads them)."""
    output: dict[str, Any] | None = None
    error: str = ""
    lane: str = ""
    turns: int = 0
    tokens: int = 0
    withheld_tools: dict[str, str] = Field(default_factory=dict)
    full: str | None = None
    """Where the whole handoff is archived, when the parent's copy had to be shortened."""

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def error_kind(self) -> str | None:
        """The tool-result error kind of a handoff that did not complete."""
        return None if self.ok else f"subagent_{self.status}"

    def bounded(self, max_chars: int, *, archive: str | None) -> str:
        """The handoff as the parent reads it: compact JSON within ``max_chars``.

        Long strings are cut first, then lists are shortened from the end (each cut says
        that the archive copy at ``archive`` has the rest); if that is not enough, only the
        essentials stay (status, lane, summary and error cut to fit, evidence, how many
        findings there were). Always one valid JSON object."""
        data = self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        data["status"] = self.status
        text = _dumps(data)
        if len(text) <= max_chars:
            return text
        data = _shortened(data, ITEM_MAX_CHARS)
        data["full"] = archive
        for keep in (10, 5, 2, 1, 0):
            data = {
                key: _first(value, keep) if isinstance(value, list) and key != "evidence" else value
                for key, value in data.items()
            }
            text = _dumps(data)
            if len(text) <= max_chars:
                return text
        essentials: dict[str, Any] = {
            "status": self.status,
            "lane": self.lane,
            "full": archive,
            "findings": f"{len(self.findings)} findings in the archive copy",
        }
        for limit in (200, 80, 0):
            for key in ("summary", "error"):
                value = getattr(self, key)
                if value:
                    essentials[key] = _shortened(value, limit) if limit else "(in the archive)"
            for evidence in (self.evidence, self.evidence[:3], []):
                essentials["evidence"] = evidence
                text = _dumps(essentials)
                if len(text) <= max_chars:
                    return text
        return _dumps({"status": self.status, "full": archive})


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def _shortened(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... [{len(value) - limit} more characters in the archive]"
    if isinstance(value, list):
        return [_shortened(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _shortened(v, limit) for k, v in value.items()}
    return value


def _first(items: list[Any], keep: int) -> list[Any]:
    if len(items) <= keep:
        return items
    return [*items[:keep], f"... {len(items) - keep} more in the archive"]


def parse_answer(text: str, schema: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The child's final answer as a JSON object valid against ``schema``, or the error
    the repair round quotes. A fenced block or text around the object is tolerated."""
    candidate = text.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", candidate, flags=re.DOTALL)
    if fenced:
        candidate = fenced.group(1)
    elif not candidate.startswith("{") and "{" in candidate:
        candidate = candidate[candidate.find("{") : candidate.rfind("}") + 1]
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as exc:
        return None, f"it is not a JSON object ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return None, f"it is a JSON {type(value).__name__}, not an object"
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        problems = [
            f"{'/'.join(map(str, e.absolute_path)) or '(top level)'}: {e.message}"
            for e in errors[:5]
        ]
        return None, "; ".join(problems)
    return value, ""


def handoff_status(ending: TaskEnding, *, provider_failed: bool) -> HandoffStatus:
    """How the child's ending reads for its parent."""
    if ending.status == "completed":
        return "completed"
    if ending.status == "cancelled":
        return "interrupted"
    if ending.status in ("max_turns", "failure_budget", "max_tokens"):
        return "budget_exhausted"
    return "provider_error" if provider_failed else "failed"


@dataclass
class LaneRecord:
    """What the parent's side watched of a child's events (the handoff is built from it)."""

    provider_failed: bool = False
    physical_calls: dict[str, str] = field(default_factory=dict)
    """call id -> ``name(arguments)`` of each physical call the child made."""
    world_changes: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    """Archive addresses of the child's tool results, oldest first."""

    def watch(self, event: EventBase) -> None:
        if isinstance(event, ModelErrorEvent):
            self.provider_failed = True
        elif isinstance(event, ModelResponseEvent):
            self.provider_failed = False
        elif isinstance(event, ToolCallEvent) and event.physical:
            args = ", ".join(f"{k}={v!r}" for k, v in event.arguments.items())
            self.physical_calls[event.call_id] = f"{event.name}({args})"
        elif isinstance(event, ToolResultEvent):
            if event.archive and event.name not in BOOKKEEPING_TOOLS:
                self.results.append(event.archive)
            call = self.physical_calls.get(event.call_id)
            if call is not None and event.executed:
                outcome = (
                    event.evaluation.status
                    if event.evaluation
                    else (f"error {event.error_kind}" if event.is_error else "ok")
                )
                self.world_changes.append(f"recorded by the harness: {call} -> {outcome}")


def handoff_of(
    ending: TaskEnding,
    answer: dict[str, Any] | None,
    *,
    lane: str,
    turns: int,
    tokens: int,
    contract: Contract,
    record: LaneRecord,
    withheld: Mapping[str, str],
    archived: Callable[[str], bool],
    report: str = "",
) -> Handoff:
    """The handoff of a child that ended with ``ending`` (``answer``: its validated final
    answer, when it gave one; ``report``: its ``done`` event's report)."""
    status = handoff_status(ending, provider_failed=record.provider_failed)
    fields: dict[str, Any] = {}
    if answer is not None:
        fields = {key: answer[key] for key in (*STANDARD_FIELDS, "unresolved") if key in answer}
        if contract.output_schema is None and answer.get("status") == "failed":
            status = "failed"
    given = _as_list((answer or {}).get("evidence"))
    cited = [a for a in given if isinstance(a, str) and archived(a)]
    unresolved = [str(u) for u in _as_list(fields.pop("unresolved", None))]
    if answer is not None:
        dropped = [a for a in given if a not in cited]
        if dropped:
            unresolved.append(f"cited evidence not in the archive: {', '.join(map(str, dropped))}")
    error = "" if status == "completed" else ending.reason
    if status == "failed" and not error:
        error = "the sub-agent reported that it could not reach its goal"
    summary = str(fields.pop("summary", ""))
    if answer is None and report:  # what it said last, when it gave no valid answer
        summary = report if len(report) <= ITEM_MAX_CHARS else report[:ITEM_MAX_CHARS] + "..."
    return Handoff(
        status=status,
        summary=summary,
        findings=_as_list(fields.pop("findings", None)),
        decisions=[str(d) for d in _as_list(fields.pop("decisions", None))],
        world_changes=[
            *map(str, _as_list(fields.pop("world_changes", None))),
            *record.world_changes,
        ],
        verification=[str(v) for v in _as_list(fields.pop("verification", None))],
        unresolved=unresolved,
        evidence=cited or record.results[-EVIDENCE_FALLBACK:],
        output=answer if contract.output_schema is not None else None,
        error=error,
        lane=lane,
        turns=turns,
        tokens=tokens,
        withheld_tools=dict(withheld),
    )


def _as_list(value: Any) -> list[Any]:
    """A standard field as a list, whatever a custom schema let the answer put there."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def refused_handoff(message: str) -> Handoff:
    return Handoff(status="failed", error=f"the sub-agent did not start: {message}")
