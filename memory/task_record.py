"""What a finished task hands to memory consolidation, and what comes back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["ConsolidationReport", "TaskRecord", "ToolOutcome"]


@dataclass(frozen=True)
class ToolOutcome:
    """One executed (or refused) tool call of the task, with its verdict if evaluated."""

    turn: int
    tool: str
    ok: bool
    verdict: Literal["success", "failure", "process"] | None
    detail: str
    executed: bool = True


@dataclass
class TaskRecord:
    """A finished task as consolidation sees it."""

    task_id: str
    instruction: str
    status: str
    report: str
    notes: str
    outcomes: list[ToolOutcome] = field(default_factory=list)
    min_confidence: float | None = None
    """The configured acceptance threshold (``memory.consolidation_min_confidence``);
    None lets the memory store use its own."""


@dataclass
class ConsolidationReport:
    """What consolidation kept (one line each) and rejected (``lesson`` and ``reason``)."""

    status: Literal["completed", "skipped", "failed"]
    kept: list[str] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)
    reason: str = ""
