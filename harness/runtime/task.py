"""What belongs to one task: its counters, its Task Notes, and how it ended.

A :class:`TaskState` is created when a task starts (or rebuilt from the run store by
resume) and is the only place the loop keeps per-task data; the :class:`Session` holds
what outlives it. Every phase of the loop reads and writes the state through the methods
here, so the rules in :mod:`harness.runtime.rules` are applied in one place.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.events import TaskStatus
from harness.messages import ImagePart, Usage, new_id
from harness.protocols import LaneLink
from harness.runtime.refusals import RefusalMemory
from harness.runtime.rules import (
    RecordedResult,
    counts_toward_failure_budget,
    enters_task_notes,
    revision_note,
)
from memory.task_notes import TaskNotes
from memory.task_record import ToolOutcome

if TYPE_CHECKING:
    from embodiment.types import Observation

__all__ = ["OUTCOMES_KEPT", "TaskEnding", "TaskState"]

OUTCOMES_KEPT = 256
"""Tool outcomes a task keeps in memory, for a run store that cannot read them back."""


@dataclass(frozen=True)
class TaskEnding:
    """How a task ended: the ``done`` event's status, reason and report.

    Phases return one (or None to go on) instead of setting a flag; the first one
    returned is the task's ending.
    """

    status: TaskStatus
    reason: str
    report: str = ""


@dataclass
class TaskState:
    """One task's mutable state, from its instruction to its ``done`` event."""

    instruction: str
    max_turns: int
    notes: TaskNotes
    task_id: str = field(default_factory=lambda: new_id("task"))
    images: list[ImagePart] = field(default_factory=list)
    """Images given with the instruction."""
    lane: str = ""
    """A sub-agent lane's id (its task id); "" for a main-lane task."""
    parent: LaneLink | None = None
    """The parent turn a sub-agent lane works for."""
    max_tokens: int | None = None
    """The most prompt plus output tokens the task may spend (None: no limit)."""
    turn: int = 0
    usage: Usage = field(default_factory=Usage)
    consecutive_failures: int = 0
    last_text: str = ""
    """The model's latest non-empty text (part of the report when the harness ends a task)."""
    revisions: list[str] = field(default_factory=list)
    outcomes: deque[ToolOutcome] = field(default_factory=lambda: deque(maxlen=OUTCOMES_KEPT))
    """The latest tool outcomes (at most :data:`OUTCOMES_KEPT`). Consolidation reads every
    outcome back from the run store when it can, so a long task holds no per-call memory."""
    observation: Observation | None = None
    """The latest observation (the safety envelope and the scene graph read it)."""
    observed_in: int = -1
    """The robot's command generation (:attr:`RobotLine.generation
    <harness.runtime.robot.RobotLine.generation>`) when :attr:`observation` was taken: once
    a command has started or ended since (this task's, a re-run's, another session's on the
    same robot), it is no longer fresh and a physical call is admitted on a new one."""
    notes_version_sent: int = -1
    """The Task Notes version last appended to Accumulated."""
    notes_text_sent: str = ""
    """The Task Notes text last appended (a new version with the same text is not sent)."""
    episode_tools: bool = True
    """The episode tools are offered in this task (decided at its start from what they
    spent and saved so far: :class:`~harness.context.episodes.ledger.EpisodeLedger`)."""
    nudged: bool = False
    """The pressure nudge was sent in this task (lane): it is sent once and never repeated."""
    last_prompt_estimate: int = 0
    ending: TaskEnding | None = None
    refused: RefusalMemory = field(default_factory=RefusalMemory)
    """Calls refused since the world last changed (:mod:`harness.runtime.refusals`)."""

    def add_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.usage = self.usage + usage

    @property
    def tokens_spent(self) -> int:
        """Prompt and output tokens of every model call so far (what ``max_tokens`` caps)."""
        return self.usage.prompt_tokens + self.usage.output_tokens

    def account(self, result: RecordedResult, *, notes: bool = True) -> ToolOutcome | None:
        """Apply one recorded result to the failure budget, Task Notes and outcomes.

        Returns the tool outcome when the result enters the tool-experience record (the
        session passes it on to memory), else None. Resume passes ``notes=False`` for
        results its restored Task Notes snapshot already contains.
        """
        if counts_toward_failure_budget(error_kind=result.error_kind, executed=result.executed):
            self.consecutive_failures = self.consecutive_failures + 1 if result.failed else 0
        if not enters_task_notes(error_kind=result.error_kind, executed=result.executed):
            return None
        if notes:
            self.notes.record_outcome(result.turn, result.tool, result.summary())
        outcome = result.outcome()
        self.outcomes.append(outcome)
        return outcome

    def revise(self, revision: str, *, notes: bool = True) -> None:
        """An instruction revision: kept for the scene focus and noted in Task Notes
        (unless resume's restored snapshot already has the note)."""
        self.revisions.append(revision)
        if notes:
            self.notes.update(add_notes=[revision_note(revision)])

    def focus_text(self) -> str:
        """What the scene Brief should be relevant to: instruction, revisions, notes."""
        return "\n".join([self.instruction, *self.revisions, self.notes.render()])
