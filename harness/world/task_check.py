"""The task-level check: whether the whole task's goal holds when the model ends it.

The per-action evaluator (:mod:`harness.world.evaluation`) judges each pick and place; this
judges the task, once, when the model answers without a tool call:

- :class:`GroundTruthTaskCheck` (simulators): the goal is read from the instruction and its
  revisions with the planner's grammar (:mod:`harness.planner.grammar`), every object it
  names is looked up in the driver's ground truth, and each "X in/on Y" is checked with the
  driver's own ``place`` post-condition. An instruction it cannot parse is ``unverified``,
  never ``achieved``; a goal naming something the scene does not have is ``not_achieved``.
- :class:`~harness.world.model_task_check.ModelTaskCheck` (real robots, in
  :mod:`harness.world.model_task_check`): in a context of its own, a vision model sees the
  camera images taken after the robot stopped, the instruction and its revisions, and
  answers a JSON verdict that is validated (one repair round; a second malformed answer is
  ``unverified``).

:func:`judge_task` combines the check with the acting model's own claim (the ``Outcome:``
line of its report): a claim of failure is believed, a claim of success counts for nothing
until a check confirms it. That is the ``outcome`` of the ``done`` event.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from embodiment.types import PostConditionChecker
from harness.cancel import Cancelled
from harness.events import GoalCondition, OutcomeEvidence, TaskOutcome
from harness.planner.grammar import Clause, Phrase, parse_instruction

__all__ = [
    "GroundTruthTaskCheck",
    "TaskCheck",
    "TaskCheckResult",
    "judge_task",
    "report_claim",
    "resolve_goal",
]

logger = logging.getLogger(__name__)

Claim = Literal["achieved", "not_achieved"]
_CLAIM_LINE = re.compile(r"^outcome\s*[:=-]\s*(?P<claim>not[\s_-]*achieved|achieved)\.?$", re.I)


@dataclass(frozen=True)
class TaskCheckResult:
    """One check's verdict on the whole task."""

    outcome: TaskOutcome
    checked_by: str
    summary: str
    conditions: list[GoalCondition] = field(default_factory=list)


class TaskCheck(Protocol):
    """Judges the whole task once, when the model ends it."""

    kind: Literal["programmatic", "model"]

    def check(
        self,
        instruction: str,
        revisions: Sequence[str],
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> TaskCheckResult: ...


# ====================================================================== combining


def report_claim(report: str) -> Claim | None:
    """The acting model's claim: its last ``Outcome: achieved`` / ``Outcome: not achieved``
    line (markdown emphasis tolerated), or None."""
    claim: Claim | None = None
    for raw in report.splitlines():
        line = re.sub(r"[*_`>#]", " ", raw).strip()
        line = re.sub(r"\s+", " ", line)
        match = _CLAIM_LINE.match(line)
        if match is not None:
            claim = "achieved" if match.group("claim").lower() == "achieved" else "not_achieved"
    return claim


def judge_task(
    check: TaskCheck | None,
    *,
    status: str,
    report: str,
    instruction: str,
    revisions: Sequence[str],
    cancelled: Callable[[], bool] | None = None,
) -> tuple[TaskOutcome, OutcomeEvidence]:
    """The task's outcome and its evidence (see the module docstring)."""
    claim = report_claim(report)
    kind = check.kind if check is not None else "none"
    if status != "completed":
        return "unverified", OutcomeEvidence(
            check=kind, summary=f"not checked: the task ended {status}", claim=claim
        )
    if check is None:
        if claim == "not_achieved":
            return "not_achieved", OutcomeEvidence(
                check="none",
                checked_by="the model's report",
                summary="it says the task was not achieved",
                claim=claim,
            )
        return "unverified", OutcomeEvidence(
            check="none",
            summary="no task check is configured (evaluation.task_check); nothing confirmed "
            "the model's report",
            claim=claim,
        )
    try:
        result = check.check(instruction, revisions, cancelled=cancelled)
    except Cancelled as exc:
        result = TaskCheckResult("unverified", "", f"the task check was abandoned: {exc}")
    except Exception as exc:  # a broken check costs the verdict, never the task's ending
        logger.exception("the task check failed")
        result = TaskCheckResult(
            "unverified", "", f"the task check failed: {type(exc).__name__}: {exc}"
        )
    outcome, checked_by, summary = result.outcome, result.checked_by, result.summary
    if outcome == "unverified" and claim == "not_achieved":
        outcome, checked_by = "not_achieved", "the model's report"
        summary = f"it says the task was not achieved; the check could not decide: {summary}"
    elif outcome == "achieved" and claim == "not_achieved":
        summary += " (the model's report says it was not achieved; the check decides)"
    return outcome, OutcomeEvidence(
        check=kind,
        checked_by=checked_by,
        summary=summary,
        conditions=list(result.conditions),
        claim=claim,
    )


# ====================================================================== the goal


def resolve_goal(instruction: str, revisions: Sequence[str]) -> tuple[tuple[Clause, ...], str]:
    """The goal's clauses after every revision, or ((), why it cannot be known).

    A revision replaces the goal unless it starts with "also"; "stop" withdraws it. A
    revision the grammar cannot parse makes the goal unknown (it may have changed it).
    """
    goal = parse_instruction(instruction)
    clauses: tuple[Clause, ...] | None = goal.clauses if goal.ok and not goal.stop else None
    problem = "" if clauses is not None else f"cannot parse the instruction {instruction!r}"
    for revision in revisions:
        parsed = parse_instruction(revision)
        if parsed.stop:
            return (), f"the operator withdrew the goal with the revision {revision!r}"
        if not parsed.ok:
            return (), f"cannot parse the revision {revision!r}"
        if parsed.also:
            if clauses is not None:
                clauses = clauses + parsed.clauses
        else:
            clauses, problem = parsed.clauses, ""
    if clauses is None:
        return (), problem
    return clauses, ""


# ====================================================================== ground truth


@dataclass(frozen=True)
class _Thing:
    ref: str
    label: str
    category: str
    color: str | None
    support: tuple[str, str] | None
    held: bool

    @property
    def kind(self) -> str:
        return self.label.split()[-1] if self.label else ""

    @property
    def movable(self) -> bool:
        return self.category == "object"


class GroundTruthTaskCheck:
    """The whole-task check from a simulator's ground truth.

    Args:
        detections: The driver's ground truth now (``scene.perception.Detection``-like:
            ``ref``, ``label``, ``category``, ``color``, ``relations``, ``attributes``);
            detections not marked ``provenance="ground_truth"`` make the check unverified.
        post_conditions: The driver's checker; its ``place`` post-condition decides each
            "X in/on Y" (None: the ground truth's support relation decides).
    """

    kind: Literal["programmatic", "model"] = "programmatic"

    def __init__(
        self,
        detections: Callable[[], Iterable[Any]],
        post_conditions: PostConditionChecker | None = None,
        *,
        name: str = "simulator",
    ) -> None:
        self.detections = detections
        self.post_conditions = post_conditions
        self.name = name

    def check(
        self,
        instruction: str,
        revisions: Sequence[str],
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> TaskCheckResult:
        clauses, problem = resolve_goal(instruction, revisions)
        if not clauses:
            return TaskCheckResult("unverified", self.name, f"{problem}; the goal is unknown")
        things, problem = self._things()
        if problem:
            return TaskCheckResult("unverified", self.name, problem)
        conditions: list[GoalCondition] = []
        for clause in clauses:
            conditions.extend(self._clause(clause, things))
        failed = [c for c in conditions if not c.held]
        if not conditions:
            return TaskCheckResult("unverified", self.name, "the goal names nothing to check")
        summary = f"{len(conditions) - len(failed)} of {len(conditions)} goal conditions hold"
        if failed:
            summary += "; not: " + "; ".join(f"{c.condition} ({c.evidence})" for c in failed[:4])
        return TaskCheckResult(
            "not_achieved" if failed else "achieved", self.name, summary, conditions
        )

    # ------------------------------------------------------------------ pieces

    def _things(self) -> tuple[dict[str, _Thing], str]:
        found = list(self.detections())
        held = {
            str(d.attributes.get("holding"))
            for d in found
            if getattr(d, "category", "") == "robot_part" and d.attributes.get("holding")
        }
        things: dict[str, _Thing] = {}
        for d in found:
            if d.category in {"robot", "robot_part"} or not d.ref:
                continue
            if getattr(d, "provenance", "") != "ground_truth":
                return {}, f"{d.ref} is not ground truth ({d.provenance}); cannot check the task"
            support = next((tuple(r) for r in d.relations if r[0] in {"inside", "on"}), None)
            things[d.ref] = _Thing(
                ref=d.ref,
                label=d.label,
                category=d.category,
                color=d.color,
                support=support,  # type: ignore[arg-type]
                held=d.ref in held,
            )
        return things, ""

    def _clause(self, clause: Clause, things: Mapping[str, _Thing]) -> list[GoalCondition]:
        if clause.relation == "held":
            return self._held(clause, things)
        targets = [t for t in things.values() if _names(clause.target, t)]
        relation = clause.relation or "in/on"
        if clause.clear_table:
            return self._clear_table(things, targets)
        wanted = f"{clause.subject.text()} {relation} {clause.target.text()}"
        if not targets:
            return [_failed(wanted, f"there is no {clause.target.text()} in the scene")]
        subjects = [
            t
            for t in things.values()
            if t.movable and _names(clause.subject, t) and t not in targets
        ]
        if not subjects:
            what = clause.subject.text()
            return [_failed(wanted, f"there is no {what.removeprefix('the ')} in the scene")]
        if not clause.subject.every:
            results = [self._where(s, targets, relation) for s in subjects]
            for result in results:
                if result.held:
                    return [result.model_copy(update={"condition": wanted})]
            return [_failed(wanted, "; ".join(r.evidence for r in results[:3]))]
        return [self._where(s, targets, relation) for s in subjects]

    def _held(self, clause: Clause, things: Mapping[str, _Thing]) -> list[GoalCondition]:
        """ "pick up X": X is in the gripper, lifted (the driver's ``pick`` check)."""
        wanted = f"{clause.subject.text()} picked up"
        subjects = [t for t in things.values() if t.movable and _names(clause.subject, t)]
        if not subjects:
            what = clause.subject.text().removeprefix("the ")
            return [_failed(wanted, f"there is no {what} in the scene")]
        results = []
        for thing in subjects:
            verdict = (
                self.post_conditions.check("pick", {"ref": thing.ref}, None)
                if self.post_conditions is not None
                else None
            )
            if verdict is not None:
                held, evidence = verdict.status == "success", verdict.evidence
            else:
                held = thing.held
                evidence = f"{thing.ref} is {'' if held else 'not '}in the gripper"
            results.append(
                GoalCondition(condition=f"{thing.ref} picked up", held=held, evidence=evidence)
            )
        if clause.subject.every:
            return results
        chosen = next((r for r in results if r.held), None)
        if chosen is not None:
            return [chosen.model_copy(update={"condition": wanted})]
        return [_failed(wanted, "; ".join(r.evidence for r in results[:3]))]

    def _clear_table(
        self, things: Mapping[str, _Thing], trays: Sequence[_Thing]
    ) -> list[GoalCondition]:
        left = [
            t
            for t in things.values()
            if t.movable
            and (
                t.held
                or (
                    t.support is not None
                    and things.get(t.support[1]) is not None
                    and things[t.support[1]].category == "surface"
                )
            )
        ]
        if not left:
            return [
                GoalCondition(
                    condition="nothing loose on the table",
                    held=True,
                    evidence="no object rests on the table or is held",
                )
            ]
        if not trays:
            return [
                _failed(f"{t.ref} off the table", "there is no tray in the scene") for t in left
            ]
        return [self._where(t, trays, "in") for t in left]

    def _where(self, thing: _Thing, targets: Sequence[_Thing], relation: str) -> GoalCondition:
        """Whether ``thing`` rests in/on one of ``targets`` (the driver's ``place`` check)."""
        evidence: list[str] = []
        for target in targets:
            condition = f"{thing.ref} {relation} {target.ref}"
            verdict = self._place(thing, target)
            if verdict[0]:
                return GoalCondition(condition=condition, held=True, evidence=verdict[1])
            evidence.append(verdict[1])
        names = "/".join(t.ref for t in targets)
        return _failed(f"{thing.ref} {relation} {names}", "; ".join(dict.fromkeys(evidence)))

    def _place(self, thing: _Thing, target: _Thing) -> tuple[bool, str]:
        if self.post_conditions is not None:
            result = self.post_conditions.check(
                "place", {"ref": thing.ref, "target": target.ref}, None
            )
            if result is not None:
                return result.status == "success", result.evidence
        if thing.held:
            return False, f"{thing.ref} is still in the gripper"
        if thing.support is not None and thing.support[1] == target.ref:
            return True, f"{thing.ref} rests {thing.support[0]} {target.ref}"
        where = f"{thing.support[0]} {thing.support[1]}" if thing.support else "unsupported"
        return False, f"{thing.ref} is {where}, not on/in {target.ref}"


def _names(phrase: Phrase, thing: _Thing) -> bool:
    """Whether ``phrase`` (a ref, or colour and kind) describes ``thing``."""
    if phrase.ref:
        return thing.ref == phrase.ref
    if phrase.kind == "table":
        return thing.category == "surface" and thing.kind == "table"
    if phrase.kind is not None and thing.kind != phrase.kind:
        return False
    if phrase.kind is None and not thing.movable:
        return False
    return phrase.color is None or thing.color == phrase.color


def _failed(condition: str, evidence: str) -> GoalCondition:
    return GoalCondition(condition=condition, held=False, evidence=evidence)
