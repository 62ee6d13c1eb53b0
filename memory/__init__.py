"""Durable memory and the live Task Notes."""

from memory.report import ConsolidationReport, TaskRecord, ToolOutcome
from memory.task_notes import TaskNotes

__all__ = ["ConsolidationReport", "TaskNotes", "TaskRecord", "ToolOutcome"]
