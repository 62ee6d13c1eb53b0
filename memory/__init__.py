"""Durable memory and the live Task Notes.

:class:`MemoryStore` keeps ``MEMORY.md`` (preferences and conventions written by people,
plus general lessons), a mirror of the live Task Notes and one experience ledger per tool,
all written atomically. Lessons are consolidated from completed tasks only when the task's
own tool outcomes support them.
"""

from memory.atomic import atomic_write_text, remove_stale_temp_files
from memory.consolidation import LessonProposer, RuleBasedProposer, check_evidence
from memory.ledger import ToolLedger
from memory.lessons import Lesson
from memory.memory_file import MemoryDocument, MemoryFormatError
from memory.store import LedgerSummarizer, MemoryStore, SummaryStats
from memory.task_notes import TaskNotes
from memory.task_record import ConsolidationReport, TaskRecord, ToolOutcome

__all__ = [
    "ConsolidationReport",
    "LedgerSummarizer",
    "Lesson",
    "LessonProposer",
    "MemoryDocument",
    "MemoryFormatError",
    "MemoryStore",
    "RuleBasedProposer",
    "SummaryStats",
    "TaskNotes",
    "TaskRecord",
    "ToolLedger",
    "ToolOutcome",
    "atomic_write_text",
    "check_evidence",
    "remove_stale_temp_files",
]
