"""``MemoryStore``: durable memory over one folder.

Layout::

    <folder>/MEMORY.md                   preferences, conventions (by hand) + general lessons
    <folder>/TASK_NOTES.md               mirror of the live Task Notes of the running task
    <folder>/tool_experience/<tool>.md   per-tool ledger: totals, failure reasons, lessons
    <folder>/tool_experience/.summaries.json   summary cache, keyed by ledger content hash

Every write is atomic (:func:`memory.atomic.atomic_write_text`) and read-modify-write
updates hold a folder lock, so a crash never leaves a half-written file and two sessions
sharing the folder never lose each other's updates.

Everything the store writes passes the ``redact`` callable it is given (the harness passes
its secret redactor): the files are read back into later sessions' context, so a key a
tool once printed must not be kept here. The files it writes whole (Task Notes, ledgers,
the summary cache) are redacted whole; in MEMORY.md, which people edit too, only the
lessons the store adds are redacted, and people's own text is never rewritten.

The store implements the harness's ``MemoryProvider`` protocol without importing the
harness: the model-backed parts (a lesson proposer, a ledger summarizer) are passed in as
small objects; without them it uses :class:`RuleBasedProposer` and deterministic digests.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memory.atomic import atomic_write_text, folder_lock, remove_stale_temp_files
from memory.consolidation import LessonProposer, RuleBasedProposer, check_evidence
from memory.ledger import LEDGER_FOLDER, ToolLedger, ledger_file_name
from memory.lessons import Lesson, validate_candidate
from memory.memory_file import MEMORY_TEMPLATE, MemoryDocument, MemoryFormatError, resident_view
from memory.task_record import ConsolidationReport, TaskRecord, ToolOutcome

__all__ = ["LedgerSummarizer", "MemoryStore", "SummaryStats"]

MEMORY_FILE = "MEMORY.md"
TASK_NOTES_FILE = "TASK_NOTES.md"
SUMMARY_CACHE_FILE = ".summaries.json"
MAX_PROPOSALS = 12
_TITLE = "# Tool experience: "
_NOTES_HEADER = (
    "<!-- Live Task Notes of the running task, mirrored by the harness at every change. -->\n"
)


@runtime_checkable
class LedgerSummarizer(Protocol):
    """Turns one tool's ledger into a short summary for Resident context."""

    name: str

    def summarize(self, tool: str, ledger: str, *, max_chars: int) -> str: ...


@dataclass
class SummaryStats:
    """What the last ``tool_summaries()`` call did (for tests and introspection)."""

    reused: int = 0
    recomputed: int = 0
    summarizer_failures: int = 0


class MemoryStore:
    """Durable memory in ``folder`` (created if missing).

    Args:
        folder: The memory folder.
        proposer: Proposes lessons at consolidation (e.g. a model through the harness);
            the rule-based consolidator when None or when it fails.
        summarizer: Summarizes changed ledgers; deterministic digests when None or when
            it fails.
        min_confidence: Lessons below this confidence are rejected (a task record may
            carry its own threshold, which wins).
        summary_max_chars: Bound of one tool's summary.
        lock_timeout_s: How long to wait for another session holding the folder lock.
        clock: Current UTC time (injectable for deterministic tests).
        redact: Applied to all text before it is written (secret redaction); when None,
            text is written unchanged until a harness offers its redaction through
            :meth:`adopt_redaction`.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        proposer: LessonProposer | None = None,
        summarizer: LedgerSummarizer | None = None,
        min_confidence: float = 0.75,
        summary_max_chars: int = 600,
        lock_timeout_s: float = 30.0,
        clock: Callable[[], datetime] | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        if not 0.0 <= min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be within [0, 1], got {min_confidence}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ledger_folder.mkdir(exist_ok=True)
        self.proposer = proposer
        self.summarizer = summarizer
        self.rules = RuleBasedProposer()
        self.min_confidence = min_confidence
        self.summary_max_chars = summary_max_chars
        self._clock = clock or (lambda: datetime.now(UTC))
        self.redact: Callable[[str], str] = redact or _unchanged
        self._redact_fixed = redact is not None
        self._lock = folder_lock(self.folder, timeout_s=lock_timeout_s)
        self._summary_cache: dict[str, dict[str, str]] | None = None
        self._failed_summaries: set[tuple[str, str]] = set()
        self.last_summary_stats = SummaryStats()
        for folder_path in (self.folder, self.ledger_folder):
            remove_stale_temp_files(folder_path)

    # ------------------------------------------------------------------ paths

    @property
    def memory_file(self) -> Path:
        return self.folder / MEMORY_FILE

    @property
    def task_notes_file(self) -> Path:
        return self.folder / TASK_NOTES_FILE

    @property
    def ledger_folder(self) -> Path:
        return self.folder / LEDGER_FOLDER

    def ledger_path(self, tool: str) -> Path:
        return self.ledger_folder / ledger_file_name(tool)

    # ------------------------------------------------------------------ reading

    def ledger(self, tool: str) -> ToolLedger:
        path = self.ledger_path(tool)
        if not path.is_file():
            return ToolLedger(tool=tool)
        return ToolLedger.parse(tool, _read(path))

    def general_lessons(self) -> list[Lesson]:
        if not self.memory_file.is_file():
            return []
        return MemoryDocument.parse(_read(self.memory_file)).lessons

    def _ledger_files(self) -> list[tuple[str, Path, str]]:
        """(tool, path, text) of every ledger, most recently changed first."""
        found: list[tuple[float, str, Path, str]] = []
        for path in self.ledger_folder.glob("*.md"):
            if path.name.startswith("."):
                continue
            text = _read(path)
            first = text.split("\n", 1)[0]
            tool = first[len(_TITLE) :].strip() if first.startswith(_TITLE) else path.stem
            found.append((path.stat().st_mtime, tool, path, text))
        found.sort(key=lambda item: (-item[0], item[1]))
        return [(tool, path, text) for _, tool, path, text in found]

    # ------------------------------------------------------------------ summaries

    def _load_summary_cache(self) -> dict[str, dict[str, str]]:
        if self._summary_cache is None:
            path = self.ledger_folder / SUMMARY_CACHE_FILE
            cache: dict[str, dict[str, str]] = {}
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                entries = data.get("entries", {}) if isinstance(data, dict) else {}
                for tool, entry in entries.items():
                    if isinstance(entry, dict) and {"hash", "source", "summary"} <= set(entry):
                        cache[tool] = {k: str(entry[k]) for k in ("hash", "source", "summary")}
            except (OSError, ValueError):
                cache = {}  # a missing or damaged cache only costs a recomputation
            self._summary_cache = cache
        return self._summary_cache

    def _summarizer_source(self) -> str:
        return f"model:{self.summarizer.name}" if self.summarizer is not None else "digest"

    def tool_summaries(self) -> dict[str, str]:
        """One summary per tool ledger, most recently used tool first.

        A summary is recomputed only when its ledger's content hash changed (or a
        summarizer model became available); otherwise the cached one is reused.
        """
        cache = self._load_summary_cache()
        stats = SummaryStats()
        wanted = self._summarizer_source()
        summaries: dict[str, str] = {}
        changed = False
        for tool, _path, text in self._ledger_files():
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            entry = cache.get(tool)
            fresh = entry is not None and entry["hash"] == digest
            if (
                fresh
                and entry is not None
                and (entry["source"] == wanted or (tool, digest) in self._failed_summaries)
            ):
                summaries[tool] = entry["summary"]
                stats.reused += 1
                continue
            summary, source = self._summarize(tool, text, digest, stats)
            summary = self.redact(summary)
            summaries[tool] = summary
            cache[tool] = {"hash": digest, "source": source, "summary": summary}
            stats.recomputed += 1
            changed = True
        if changed:
            payload = {"version": 1, "entries": cache}
            self._save(
                self.ledger_folder / SUMMARY_CACHE_FILE,
                json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
            )
        self.last_summary_stats = stats
        return summaries

    def _summarize(self, tool: str, text: str, digest: str, stats: SummaryStats) -> tuple[str, str]:
        ledger = ToolLedger.parse(tool, text)
        if self.summarizer is not None and (tool, digest) not in self._failed_summaries:
            try:
                summary = self.summarizer.summarize(tool, text, max_chars=self.summary_max_chars)
                summary = _bounded_summary(tool, summary, self.summary_max_chars)
                return summary, self._summarizer_source()
            except Exception:
                # A failed summarizer costs quality, never memory: fall back to the digest
                # and do not ask again for this ledger version in this session.
                self._failed_summaries.add((tool, digest))
                stats.summarizer_failures += 1
        return ledger.digest(max_chars=self.summary_max_chars), "digest"

    # ------------------------------------------------------------------ Resident

    def resident_text(self, *, budget_tokens: int, estimate: Callable[[str], int]) -> str:
        """MEMORY.md (as the model should read it) and the tool-experience summaries,
        within ``budget_tokens``. When they do not fit, MEMORY.md keeps at least two
        thirds of the budget, whole lines are dropped from the end, and a marker says how
        much was left out and where to find it."""
        if budget_tokens <= 0:
            return ""
        memory_text = ""
        if self.memory_file.is_file():
            memory_text = resident_view(_read(self.memory_file))
        summaries = list(self.tool_summaries().values())
        memory_lines = memory_text.splitlines()
        header_memory = "Memory (kept between tasks; written by people and by earlier tasks):"
        header_tools = "Tool experience (from earlier tasks):"
        tools_cost = estimate("\n".join([header_tools, *summaries])) if summaries else 0
        memory_budget = budget_tokens
        if summaries:
            memory_budget = max(budget_tokens - tools_cost, (2 * budget_tokens) // 3)
        blocks: list[str] = []
        if memory_lines:
            kept = _fit(
                [header_memory, *memory_lines],
                memory_budget,
                estimate,
                lambda n: f"[... {n} more line(s) of {MEMORY_FILE} not shown]",
            )
            if kept:
                blocks.append(kept)
        used = estimate("\n\n".join(blocks)) + (2 if blocks else 0)
        if summaries:
            kept = _fit(
                [header_tools, *summaries],
                budget_tokens - used,
                estimate,
                lambda n: f"[... {n} more tool summary(ies) in {LEDGER_FOLDER}/]",
            )
            if kept:
                blocks.append(kept)
        text = "\n\n".join(blocks)
        while text and estimate(text) > budget_tokens:  # estimates are not additive
            text = text.rsplit("\n", 1)[0] if "\n" in text else ""
        return text

    # ------------------------------------------------------------------ live updates

    def mirror_task_notes(self, text: str) -> None:
        self._save(self.task_notes_file, _NOTES_HEADER + text.rstrip() + "\n")

    def record_tool_outcome(self, outcome: ToolOutcome) -> None:
        """Append one outcome to the tool's ledger (atomic, under the folder lock)."""
        with self._lock:
            ledger = self.ledger(outcome.tool)
            ledger.record(outcome, when=self._clock())
            self._save(self.ledger_path(outcome.tool), ledger.render())

    # ------------------------------------------------------------------ consolidation

    def consolidate(self, record: TaskRecord) -> ConsolidationReport:
        """Turn the proposals for a completed task into lessons that passed every gate.

        Each proposal is judged alone: an invalid or unsupported one is rejected with its
        reason and the others still land. Cancelled, failed or limit-ended tasks are
        skipped: their evidence is incomplete by definition.
        """
        if record.status != "completed":
            return ConsolidationReport(
                status="skipped",
                reason=f"task ended with status {record.status!r}; only completed tasks "
                "are consolidated",
            )
        threshold = self.min_confidence if record.min_confidence is None else record.min_confidence
        proposals, source_note = self._proposals(record)
        report = ConsolidationReport(status="completed")
        accepted: list[Lesson] = []
        for raw in proposals[:MAX_PROPOSALS]:
            try:
                lesson = validate_candidate(raw)
            except ValueError as exc:
                report.rejected.append({"lesson": _describe_raw(raw), "reason": str(exc)})
                continue
            problem = check_evidence(lesson, record.outcomes, min_confidence=threshold)
            if problem is not None:
                report.rejected.append({"lesson": lesson.text, "reason": problem})
                continue
            accepted.append(lesson)
        for raw in proposals[MAX_PROPOSALS:]:
            report.rejected.append(
                {"lesson": _describe_raw(raw), "reason": f"more than {MAX_PROPOSALS} proposals"}
            )
        evicted = self._store_lessons(accepted, report) if accepted else 0
        report.reason = (
            f"{source_note}: {len(proposals)} proposed, {len(report.kept)} kept, "
            f"{len(report.rejected)} rejected"
        )
        if evicted:
            report.reason += f"; {evicted} weaker lesson(s) evicted to stay within bounds"
        return report

    def _proposals(self, record: TaskRecord) -> tuple[list[Any], str]:
        if self.proposer is not None:
            try:
                proposals = self.proposer.propose(record)
                if not isinstance(proposals, list):
                    raise TypeError(f"expected a list of lessons, got {type(proposals).__name__}")
                return proposals, f"lessons from {self.proposer.name}"
            except Exception as exc:
                note = (
                    f"{self.proposer.name} failed ({type(exc).__name__}: {exc}); lessons from "
                    f"the {self.rules.name} instead"
                )
                return self.rules.propose(record), note
        return self.rules.propose(record), f"lessons from the {self.rules.name}"

    def _store_lessons(self, lessons: list[Lesson], report: ConsolidationReport) -> int:
        """Write accepted lessons (general ones to MEMORY.md, tool ones to ledgers)."""
        evicted = 0
        with self._lock:
            general = [lesson for lesson in lessons if lesson.tool is None]
            if general:
                evicted += self._store_general(general, report)
            by_tool: dict[str, list[Lesson]] = {}
            for lesson in lessons:
                if lesson.tool is not None:
                    by_tool.setdefault(lesson.tool, []).append(lesson)
            for tool, tool_lessons in by_tool.items():
                ledger = self.ledger(tool)
                for lesson in tool_lessons:
                    action, stored, dropped = ledger.add_lesson(lesson)
                    evicted += len(dropped)
                    report.kept.append(_kept_line(stored, action, self.ledger_path(tool).name))
                self._save(self.ledger_path(tool), ledger.render())
        return evicted

    def _store_general(self, lessons: list[Lesson], report: ConsolidationReport) -> int:
        exists = self.memory_file.is_file()
        try:
            # strict decoding: rewriting people's text must never replace a byte of it
            text = self.memory_file.read_text(encoding="utf-8") if exists else MEMORY_TEMPLATE
            document = MemoryDocument.parse(text)
        except UnicodeDecodeError as exc:
            for lesson in lessons:
                reason = f"{MEMORY_FILE} is not valid UTF-8 ({exc.reason}); fix it by hand"
                report.rejected.append({"lesson": lesson.text, "reason": reason})
            return 0
        except MemoryFormatError as exc:
            for lesson in lessons:
                report.rejected.append({"lesson": lesson.text, "reason": str(exc)})
            return 0
        evicted = 0
        for lesson in lessons:
            # Only the store's own lines are redacted: people's text is kept byte for byte.
            lesson = lesson.model_copy(update={"text": self.redact(lesson.text)})
            action, stored, dropped = document.add(lesson)
            evicted += len(dropped)
            report.kept.append(_kept_line(stored, action, MEMORY_FILE))
        atomic_write_text(self.memory_file, document.render())
        return evicted

    def adopt_redaction(self, redact: Callable[[str], str]) -> None:
        """Redact with ``redact`` from now on, unless the store was built with its own."""
        if not self._redact_fixed:
            self.redact = redact
            self._redact_fixed = True

    def _save(self, path: Path, text: str) -> None:
        """Write a file the store renders whole, redacted."""
        atomic_write_text(path, self.redact(text))


def _unchanged(text: str) -> str:
    return text


def _read(path: Path) -> str:
    """Read a memory file for the model; a stray invalid byte must not stop a task."""
    return path.read_text(encoding="utf-8", errors="replace")


def _kept_line(lesson: Lesson, action: str, where: str) -> str:
    detail = "new" if action == "added" else f"merged with an existing lesson, seen {lesson.seen}x"
    return f"{lesson.scope}: {lesson.text} [{detail}; {where}]"


def _describe_raw(raw: Any) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("text"), str):
        text = raw["text"]
    else:
        try:
            text = json.dumps(raw, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(raw)
    return text if len(text) <= 200 else text[:197] + "..."


def _bounded_summary(tool: str, summary: str, max_chars: int) -> str:
    """A summarizer's answer, checked and shaped like a digest: a ``- tool: ...`` bullet
    (continuation lines indented), non-empty, cut at a line within ``max_chars``."""
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError(f"the summarizer returned no text for {tool!r}")
    lines = [line.strip() for line in summary.strip().splitlines() if line.strip()]
    first = lines[0].removeprefix("- ")
    if not first.lower().startswith(tool.lower()):
        first = f"{tool}: {first}"
    text = "\n".join([f"- {first}", *(f"  {line}" for line in lines[1:])])
    if len(text) > max_chars:
        cut = text[:max_chars].rsplit("\n", 1)[0]
        text = cut if len(cut) >= max_chars // 2 else text[: max_chars - 3].rstrip() + "..."
    return text


def _fit(
    lines: list[str],
    budget: int,
    estimate: Callable[[str], int],
    marker: Callable[[int], str],
) -> str:
    """``lines`` joined, cut at whole lines to ``budget`` tokens with a marker when cut.

    The first line is a header: it is shown only if at least one line after it fits.
    """
    if budget <= 0 or len(lines) < 2:
        return ""
    full = "\n".join(lines)
    if estimate(full) <= budget:
        return full
    reserve = estimate(marker(len(lines))) + 2
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = estimate(line) + 1
        if used + cost > budget - reserve:
            break
        kept.append(line)
        used += cost
    if len(kept) < 2:
        return ""
    return "\n".join([*kept, marker(len(lines) - len(kept))])
