"""What a finished task may teach durable memory, and the gates a lesson must pass.

Lessons are *proposed* (by a model through the harness, or by :class:`RuleBasedProposer`
offline) and then *checked* against what actually happened in the task
(:func:`check_evidence`). The gates exist because memory outlives the task: a wrong lesson
would mislead every later task on the robot, so a claim needs evidence from the task's own
tool outcomes, not just the proposer's confidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from memory.ledger import reason_key
from memory.lessons import Lesson
from memory.task_record import TaskRecord, ToolOutcome

__all__ = [
    "DEFAULT_IGNORED_TOOLS",
    "LessonProposer",
    "RuleBasedProposer",
    "check_evidence",
    "failed",
    "recovered",
]

DEFAULT_IGNORED_TOOLS = frozenset(
    {"update_task_notes", "recall", "notify_user", "query_user", "load_skill_resource"}
)
"""Bookkeeping tools: neither the subject of a rule-based lesson nor a recovery step."""


@runtime_checkable
class LessonProposer(Protocol):
    """Proposes lessons from a finished task as a list of mappings with ``text``,
    ``kind`` (success, failure, general), ``tool`` and ``confidence`` (0 to 1).

    Raising (or returning something that is not a list) means "no proposals from me":
    the store then falls back to the rule-based consolidator and says so.
    """

    name: str

    def propose(self, record: TaskRecord) -> list[Any]: ...


def failed(outcome: ToolOutcome) -> bool:
    return not outcome.ok or outcome.verdict == "failure"


def recovered(outcome: ToolOutcome) -> bool:
    """Executed, no error, and not contradicted by the evaluator."""
    return outcome.executed and outcome.ok and outcome.verdict in (None, "success")


def check_evidence(
    lesson: Lesson, outcomes: Sequence[ToolOutcome], *, min_confidence: float
) -> str | None:
    """Why ``lesson`` may not be kept, or None when it passes every gate."""
    if lesson.confidence < min_confidence:
        return f"confidence {lesson.confidence:.2f} is below the threshold {min_confidence:.2f}"
    if lesson.tool is None:
        return None
    uses = [outcome for outcome in outcomes if outcome.tool == lesson.tool]
    if not uses:
        return f"tool {lesson.tool!r} was not used in this task"
    if lesson.kind == "success" and not any(o.verdict == "success" for o in uses):
        return f"no evaluator-confirmed success of {lesson.tool!r} in this task"
    if lesson.kind == "failure" and not _failure_then_recovery(uses):
        return f"no failure of {lesson.tool!r} followed by a recovery in this task"
    return None


def _failure_then_recovery(uses: Sequence[ToolOutcome]) -> bool:
    seen_failure = False
    for outcome in uses:
        if failed(outcome):
            seen_failure = True
        elif seen_failure and recovered(outcome):
            return True
    return False


def _short_reason(detail: str) -> str:
    text = " ".join(detail.split())
    for separator in ("; ", ". ", " - "):
        head, found, _ = text.partition(separator)
        if found and len(head) >= 8:
            text = head
            break
    text = text.rstrip(".")
    return text if len(text) <= 80 else text[:77].rstrip() + "..."


def _dedup_consecutive(names: Iterable[str]) -> list[str]:
    result: list[str] = []
    for name in names:
        if not result or result[-1] != name:
            result.append(name)
    return result


class RuleBasedProposer:
    """Offline lessons from the task's own outcomes: every failure of a tool that was later
    recovered becomes a recipe, "when X fails (reason), doing A then B before retrying X
    worked".

    It proposes no success lessons: that a tool worked says nothing about *why*, and the
    ledger already counts successes. A model that read the whole task can propose them.
    """

    name = "rule-based consolidator"

    def __init__(
        self,
        *,
        ignored_tools: Iterable[str] = DEFAULT_IGNORED_TOOLS,
        confidence_with_steps: float = 0.8,
        confidence_plain_retry: float = 0.75,
    ) -> None:
        self.ignored_tools = frozenset(ignored_tools)
        self.confidence_with_steps = confidence_with_steps
        self.confidence_plain_retry = confidence_plain_retry

    def propose(self, record: TaskRecord) -> list[Any]:
        outcomes = record.outcomes
        proposals: list[dict[str, Any]] = []
        covered: set[tuple[str, str]] = set()
        for index, outcome in enumerate(outcomes):
            if outcome.tool in self.ignored_tools or not failed(outcome):
                continue
            reason = _short_reason(outcome.detail) or "no detail"
            key = (outcome.tool, reason_key(reason))
            if key in covered:
                continue
            later = next(
                (
                    position
                    for position in range(index + 1, len(outcomes))
                    if outcomes[position].tool == outcome.tool and recovered(outcomes[position])
                ),
                None,
            )
            if later is None:
                continue
            covered.add(key)
            steps = _dedup_consecutive(
                o.tool
                for o in outcomes[index + 1 : later]
                if o.tool not in self.ignored_tools and o.tool != outcome.tool
            )
            if steps:
                text = (
                    f"When {outcome.tool} fails ({reason}), calling {', then '.join(steps)} "
                    "before retrying it worked."
                )
                confidence = self.confidence_with_steps
            else:
                text = f"When {outcome.tool} fails ({reason}), retrying {outcome.tool} worked."
                confidence = self.confidence_plain_retry
            proposals.append(
                {"text": text, "kind": "failure", "tool": outcome.tool, "confidence": confidence}
            )
        return proposals
