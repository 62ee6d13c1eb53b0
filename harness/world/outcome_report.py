"""The report a user reads states only the outcome the harness confirmed.

The acting model writes its report, and the prompt asks it to end with an ``Outcome:`` line;
:func:`~harness.world.task_check.judge_task` then decides the task's ``outcome`` (a claim
of success counts for nothing until a check confirms it). Without this module the report
would still carry the model's line, so a page could read "Outcome: achieved" above a
verdict of ``not_achieved``: an engineer reading the report would believe the robot did
what it did not.

:func:`reconcile_report` is applied to every task's report before it is emitted, stored,
consolidated or written to an eval record, for any model:

- every line of the report that states an outcome (a line starting with "Outcome", in any
  spelling, markdown or value) and does not say exactly what the harness decided is kept,
  word for word, behind a label that says it is the model's claim and whether the check
  denied it or nothing confirmed it;
- the harness's verdict is then appended as the report's last two lines: what decided it
  (``Checked by simulator: 2 of 3 goal conditions hold; ...``, or ``Not confirmed: ...``)
  and ``Outcome: achieved`` / ``Outcome: not achieved`` / ``Outcome: unverified``;
- a report without an outcome line gets the verdict appended too when a check ran and did
  not confirm the goal (its prose may still say "done").

A report whose outcome lines all say what the harness decided is returned unchanged. The
model's own claim stays in the ``done`` event's ``evidence.claim`` (and an eval record's
``claim``), so the model's claims can still be counted against the check.
"""

from __future__ import annotations

import re

from harness.events import OutcomeEvidence, TaskOutcome

__all__ = [
    "CLAIM_LABELS",
    "OUTCOME_WORDS",
    "clip_report",
    "outcome_statements",
    "reconcile_report",
]

OUTCOME_WORDS: dict[str, str] = {
    "achieved": "achieved",
    "not_achieved": "not achieved",
    "unverified": "unverified",
}
"""How each verdict is written on the report's ``Outcome:`` line."""

CLAIM_LABELS = (
    "The model's claim, which the check denies: ",
    "The model's claim, not confirmed: ",
    "The model's words, not the verdict: ",
)
"""The labels a relabelled outcome line starts with (they never start with "Outcome"):
a check decided the opposite; nothing confirmed it; the line says something else (or the
model's own later line decided)."""

_MARKUP = re.compile(r"[*_`>#~|]")
_BULLET = re.compile(r"^(?:[-+•·]\s*|\d+[.)]\s*)")
_LEADING = re.compile(r"^(?:(?:the|final|task|overall)\s+)*outcome\b\s*(?:[:=\-–—]|is\b)?\s*", re.I)
_INLINE = re.compile(r"\boutcome\s*[:=]\s*", re.I)


def _plain(line: str) -> str:
    return re.sub(r"\s+", " ", _MARKUP.sub(" ", line)).strip()


def _stated(line: str) -> str | None:
    """What ``line`` (plain text) states as an outcome, or None when it states none: a
    line starting with "Outcome" (after a bullet and "the"/"final"/"task"/"overall"), or
    one with "outcome:" / "outcome=" anywhere in it."""
    bare = _BULLET.sub("", line)
    leading = _LEADING.match(bare)
    if leading is not None:
        return bare[leading.end() :]
    inline = _INLINE.search(line)
    return line[inline.end() :] if inline is not None else None


def outcome_statements(report: str) -> list[tuple[tuple[int, ...], str]]:
    """Each outcome statement of ``report``: (its line indices, the words it states after
    the word "outcome", lower-cased, without punctuation or markdown). A line with
    nothing after "Outcome:" takes its value from the next non-blank line."""
    lines = [_plain(raw) for raw in report.splitlines()]
    found = []
    for index, line in enumerate(lines):
        if line.startswith(CLAIM_LABELS):
            continue
        value = _stated(line)
        if value is None:
            continue
        indices: tuple[int, ...] = (index,)
        if not value.strip():
            after = next((i for i in range(index + 1, len(lines)) if lines[i]), None)
            if after is not None and _stated(lines[after]) is None:
                indices, value = (index, after), lines[after]
        found.append((indices, " ".join(re.findall(r"[a-z0-9]+", value.lower()))))
    return found


def _label(value: str, outcome: TaskOutcome, evidence: OutcomeEvidence) -> str:
    if outcome == "unverified":
        return CLAIM_LABELS[1]
    words = set(value.split())
    negative = bool(words & {"not", "no", "failed", "fail", "unsuccessful", "partially"})
    positive = not negative and bool(words & {"achieved", "success", "succeeded", "done"})
    decided = evidence.checked_by and evidence.checked_by != "the model's report"
    if decided and (positive if outcome == "not_achieved" else negative):
        return CLAIM_LABELS[0]
    return CLAIM_LABELS[2]


def _verdict(outcome: TaskOutcome, evidence: OutcomeEvidence) -> list[str]:
    why = re.sub(r"\s+", " ", evidence.summary).strip() or "no evidence was recorded"
    if outcome != "unverified" and evidence.checked_by:
        first = f"Checked by {evidence.checked_by}: {why}"
    else:
        first = f"Not confirmed: {why}"
    first = _INLINE.sub("verdict: ", first)  # a judge's words never read as an outcome line
    return [first, f"Outcome: {OUTCOME_WORDS[outcome]}"]


def reconcile_report(
    report: str, outcome: TaskOutcome, evidence: OutcomeEvidence, *, status: str
) -> str:
    """``report`` with no outcome line the harness's verdict did not confirm (see the
    module docstring). ``status`` is how the task ended (a check runs only on completed
    tasks)."""
    word = OUTCOME_WORDS[outcome]
    statements = outcome_statements(report)
    wrong = {i: value for indices, value in statements if value != word for i in indices}
    checked = status == "completed" and evidence.check != "none"
    if not wrong and (statements or not checked or outcome == "achieved"):
        return report
    lines = report.splitlines()
    for index, value in wrong.items():
        lines[index] = _label(value, outcome, evidence) + lines[index].strip()
    while lines and not lines[-1].strip():
        lines.pop()
    if lines:
        lines.append("")
    return "\n".join([*lines, *_verdict(outcome, evidence)])


def clip_report(report: str, limit: int) -> str:
    """``report`` in at most about ``limit`` characters, whole lines from its start and its
    end (where the verdict is) with "…" between; a line too long is cut at its end, so a
    label at a line's start is never cut off."""
    if len(report) <= limit:
        return report
    lines = report.splitlines()
    tail: list[str] = []
    budget = limit // 2
    for line in reversed(lines):
        if tail and len(line) + 1 > budget:
            break
        tail.insert(0, line if len(line) <= budget else line[: max(budget - 1, 0)] + "…")
        budget -= len(tail[0]) + 1
    head: list[str] = []
    budget = limit - sum(len(t) + 1 for t in tail) - 2
    for line in lines[: len(lines) - len(tail)]:
        if budget <= 1:
            break
        head.append(line if len(line) <= budget else line[: budget - 1] + "…")
        budget -= len(head[-1]) + 1
    return "\n".join([*head, "…", *tail])
