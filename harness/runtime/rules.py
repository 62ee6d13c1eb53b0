"""The rules a task's bookkeeping follows, written once for the loop and for resume.

The loop applies them to each tool result as it is recorded; resume applies the same
functions to the results it reads back from the run store, so a resumed task counts its
failure budget, fills its Task Notes and reports its tool outcomes exactly as the original
process did:

- which results count toward the failure budget, and which of those are failures;
- which results enter Task Notes and the tool-experience ledger, and with what line;
- how the note of an instruction revision reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.events import ToolResultEvent
from harness.messages import Verdict
from harness.tools import ErrorKind, ToolOutput
from memory.task_record import ToolOutcome

__all__ = [
    "RecordedResult",
    "counts_toward_failure_budget",
    "enters_task_notes",
    "is_failure",
    "outcome_summary",
    "revision_note",
]

RECORDED_WITHOUT_EXECUTION: frozenset[ErrorKind] = frozenset(
    {"blocked", "invalid_arguments", "unknown_tool", "driver_busy"}
)
"""Refusals that enter Task Notes although the tool never ran: the model must not forget
that a call was blocked or malformed, or it repeats it."""


@dataclass(frozen=True)
class RecordedResult:
    """The facts of one recorded tool result that the rules read.

    Built by the loop from the :class:`ToolOutput` it just recorded, and by resume from the
    ``tool_result`` event the run store kept.
    """

    turn: int
    tool: str
    text: str
    is_error: bool
    error_kind: str | None
    executed: bool
    verdict: Verdict | None = None

    @classmethod
    def of_output(
        cls,
        output: ToolOutput,
        *,
        turn: int,
        tool: str,
        executed: bool,
        verdict: Verdict | None,
    ) -> RecordedResult:
        return cls(
            turn=turn,
            tool=tool,
            text=output.render(),
            is_error=output.is_error,
            error_kind=output.error_kind,
            executed=executed,
            verdict=verdict,
        )

    @classmethod
    def of_event(cls, event: ToolResultEvent) -> RecordedResult:
        return cls(
            turn=event.turn,
            tool=event.name,
            text=event.text,
            is_error=event.is_error,
            error_kind=event.error_kind,
            executed=event.executed,
            verdict=event.evaluation,
        )

    @property
    def failed(self) -> bool:
        return is_failure(is_error=self.is_error, verdict=self.verdict)

    def outcome(self) -> ToolOutcome:
        """The tool-experience record of this result (memory ledgers, consolidation)."""
        verdict = self.verdict
        return ToolOutcome(
            turn=self.turn,
            tool=self.tool,
            ok=not self.failed,
            verdict=verdict.status if verdict else None,
            detail=(verdict.evidence if verdict else self.text)[:300],
            executed=self.executed,
        )

    def summary(self) -> str:
        return outcome_summary(
            self.text, is_error=self.is_error, kind=self.error_kind, verdict=self.verdict
        )


def is_failure(*, is_error: bool, verdict: Verdict | None) -> bool:
    """An error result, or one the evaluator judged a failure."""
    return is_error or (verdict is not None and verdict.status == "failure")


def counts_toward_failure_budget(*, error_kind: str | None, executed: bool) -> bool:
    """Every result counts (a failure adds one, a success resets the count) except calls
    the harness itself declined to run: extra calls of a turn, and calls cancelled before
    they started. Those say nothing about whether the model's plan works."""
    if error_kind == "not_executed":
        return False
    return not (error_kind == "cancelled" and not executed)


def enters_task_notes(*, error_kind: str | None, executed: bool) -> bool:
    """Executed calls, and refusals the model must remember (see
    :data:`RECORDED_WITHOUT_EXECUTION`), enter Task Notes and the tool ledgers."""
    return executed or error_kind in RECORDED_WITHOUT_EXECUTION


def outcome_summary(text: str, *, is_error: bool, kind: str | None, verdict: Verdict | None) -> str:
    """The one line Task Notes keep for a tool result."""
    if verdict is not None:
        head = verdict.status
        if verdict.evidence:
            head += f" ({verdict.evidence[:80]})"
        return head
    if is_error:
        return f"error {kind}: {text[:80]}"
    return "ok: " + text[:80].replace("\n", " ")


def revision_note(revision: str) -> str:
    """The Task Notes entry an instruction revision adds."""
    return f"instruction revised: {revision}"
