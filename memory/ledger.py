"""``tool_experience/<tool>.md``: one ledger per tool of what happened when it was used.

A ledger keeps running totals (so trimming old entries never loses the statistics), the
most common failure reasons, the most recent outcomes and the lessons consolidation
accepted for the tool. It is markdown so people can read it; sections under any other
heading are theirs and are written back unchanged.

:meth:`ToolLedger.digest` is the deterministic summary used in Resident when no
summarizer model is available.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from memory.lessons import Lesson, add_or_merge, format_lesson, parse_lesson_line
from memory.task_record import ToolOutcome

__all__ = [
    "LEDGER_FOLDER",
    "OutcomeStatus",
    "ToolLedger",
    "classify_outcome",
    "ledger_file_name",
    "reason_key",
]

LEDGER_FOLDER = "tool_experience"
MAX_RECENT = 40
MAX_REASONS = 12
MAX_TOOL_LESSONS = 20
MAX_DETAIL_CHARS = 160

OutcomeStatus = Literal["success", "ok", "failure", "error", "blocked", "process"]
STATUSES: tuple[OutcomeStatus, ...] = ("success", "ok", "failure", "error", "blocked", "process")
FAILED: frozenset[str] = frozenset({"failure", "error", "blocked"})

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")
_SECTION = re.compile(r"^## (?P<title>.+?)\s*$")
_REASON = re.compile(r"^- (?P<count>\d+)x (?P<text>.+)$")
_TOTAL = re.compile(r"(?P<key>[a-z]+) (?P<value>\d+)")
_MANAGED = ("Totals", "Failure reasons", "Recent outcomes", "Lessons")
_PREAMBLE = (
    "<!-- Written by the harness: totals, failure reasons, recent outcomes and lessons. "
    "Sections under other headings are yours and are kept. -->"
)


def ledger_file_name(tool: str) -> str:
    """A file name for a tool's ledger that cannot leave the ledger folder.

    Tool names are already restricted to letters, digits, ``_ . -``; names that would
    still be unsafe as a file name (``..``, a leading dot) are hex-encoded.
    """
    if _SAFE_NAME.match(tool) and ".." not in tool:
        return f"{tool}.md"
    return "tool-" + tool.encode("utf-8").hex()[:120] + ".md"


def classify_outcome(outcome: ToolOutcome) -> OutcomeStatus:
    """One word for a tool outcome, evaluator verdicts first."""
    if not outcome.executed:
        return "blocked"
    if outcome.verdict == "success":
        return "success"
    if outcome.verdict == "failure":
        return "failure"
    if outcome.verdict == "process":
        return "process"
    return "ok" if outcome.ok else "error"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def reason_key(text: str) -> str:
    """Failure reasons that differ only in numbers or case are the same reason."""
    text = re.sub(r"\d+(?:\.\d+)?", "#", text.lower())
    return " ".join(text.split())


@dataclass
class ToolLedger:
    """The parsed ledger of one tool."""

    tool: str
    counts: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, tuple[str, int]] = field(default_factory=dict)
    """reason key -> (text as first seen, count)."""
    recent: list[str] = field(default_factory=list)
    lessons: list[Lesson] = field(default_factory=list)
    other_sections: list[str] = field(default_factory=list)
    """Hand-written sections (heading and body), written back unchanged."""

    @property
    def runs(self) -> int:
        return self.counts.get("runs", 0)

    # ------------------------------------------------------------------ updates

    def record(self, outcome: ToolOutcome, *, when: datetime) -> OutcomeStatus:
        status = classify_outcome(outcome)
        self.counts["runs"] = self.runs + 1
        self.counts[status] = self.counts.get(status, 0) + 1
        detail = _one_line(outcome.detail, MAX_DETAIL_CHARS) or "(no detail)"
        if status in FAILED:
            key = reason_key(detail)
            text, count = self.reasons.get(key, (detail, 0))
            self.reasons[key] = (text, count + 1)
            if len(self.reasons) > MAX_REASONS:
                rarest = min(self.reasons, key=lambda k: self.reasons[k][1])
                del self.reasons[rarest]
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.recent.append(f"- {stamp} t{outcome.turn} {status}: {detail}")
        del self.recent[: max(0, len(self.recent) - MAX_RECENT)]
        return status

    def add_lesson(self, lesson: Lesson) -> tuple[str, Lesson, list[Lesson]]:
        return add_or_merge(self.lessons, lesson, bound=MAX_TOOL_LESSONS)

    # ------------------------------------------------------------------ text

    @classmethod
    def parse(cls, tool: str, text: str) -> ToolLedger:
        ledger = cls(tool=tool)
        section: str | None = None
        own: list[str] = []
        for line in text.splitlines():
            heading = _SECTION.match(line)
            if heading is not None:
                if section is not None and section not in _MANAGED:
                    ledger.other_sections.append("\n".join(own).rstrip())
                section = heading["title"]
                own = [line]
                continue
            if section is None:
                continue  # title and preamble are regenerated
            if section not in _MANAGED:
                own.append(line)
                continue
            stripped = line.strip()
            if not stripped or stripped.startswith("<!--"):
                continue
            if section == "Totals":
                for match in _TOTAL.finditer(stripped):
                    ledger.counts[match["key"]] = int(match["value"])
            elif section == "Failure reasons":
                reason = _REASON.match(stripped)
                if reason is not None:
                    key = reason_key(reason["text"])
                    _, count = ledger.reasons.get(key, (reason["text"], 0))
                    ledger.reasons[key] = (reason["text"], count + int(reason["count"]))
            elif section == "Recent outcomes":
                if stripped.startswith("- "):
                    ledger.recent.append(stripped)
            elif section == "Lessons":
                lesson = parse_lesson_line(stripped, tool=tool)
                if lesson is not None:
                    ledger.lessons.append(lesson)
        if section is not None and section not in _MANAGED:
            ledger.other_sections.append("\n".join(own).rstrip())
        return ledger

    def render(self) -> str:
        totals = " | ".join(f"{key} {self.counts.get(key, 0)}" for key in ("runs", *STATUSES))
        lines = [f"# Tool experience: {self.tool}", "", _PREAMBLE, "", "## Totals", totals, ""]
        lines.append("## Failure reasons")
        for text, count in self._top_reasons():
            lines.append(f"- {count}x {text}")
        lines += ["", "## Recent outcomes", *self.recent, "", "## Lessons"]
        lines.extend(format_lesson(lesson, with_kind=True) for lesson in self.lessons)
        for section in self.other_sections:
            lines += ["", section]
        return "\n".join(lines).rstrip() + "\n"

    def _top_reasons(self) -> list[tuple[str, int]]:
        return sorted(self.reasons.values(), key=lambda item: (-item[1], item[0]))

    def digest(self, *, max_chars: int = 600) -> str:
        """A deterministic summary: totals, the strongest lessons, the top failure reasons."""
        parts = [f"- {self.tool}: {self.runs} run(s)"]
        counted = [
            f"{self.counts[key]} {label}"
            for key, label in (
                ("success", "confirmed success"),
                ("ok", "ok"),
                ("failure", "failed verdict"),
                ("error", "error"),
                ("blocked", "blocked/refused"),
                ("process", "unfinished"),
            )
            if self.counts.get(key)
        ]
        if counted:
            parts[0] += " - " + ", ".join(counted)
        strongest = sorted(self.lessons, key=lambda item: (-item.seen, -item.confidence))
        parts.extend(f"  lesson: {lesson.text}" for lesson in strongest[:3])
        reasons = self._top_reasons()[:3]
        if reasons:
            parts.append("  failure reasons: " + "; ".join(f"{text} ({n}x)" for text, n in reasons))
        text = ""
        for part in parts:
            candidate = f"{text}\n{part}" if text else part
            if len(candidate) > max_chars:
                break
            text = candidate
        return text or _one_line(parts[0], max_chars)
