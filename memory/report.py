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
    task_id: str
    instruction: str
    status: str
    report: str
    notes: str
    outcomes: list[ToolOutcome] = field(default_factory=list)


@dataclass
class ConsolidationReport:
    status: Literal["completed", "skipped", "failed"]
    kept: list[str] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)
    reason: str = ""
