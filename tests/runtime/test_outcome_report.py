"""The report a user reads never states an outcome the harness did not confirm.

The oracle (:func:`stated`) is written here from words, apart from the module's regular
expressions: a line states an outcome when its first word (after a bullet and "the" /
"final" / "task" / "overall") is "outcome", or when "outcome" is followed by ":" or "=";
what it states is the words after it. Every such line of a reconciled report must state
the harness's verdict, or carry a label saying it is the model's claim.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import libero_suites
from harness.cli import main
from harness.events import DoneEvent, OutcomeEvidence
from harness.fleet.journal import EvalFolder
from harness.store.reader import RunLog
from harness.world.outcome_report import (
    CLAIM_LABELS,
    clip_report,
    outcome_statements,
    reconcile_report,
)
from harness.world.task_check import report_claim
from tests.tiers import examples

VERDICT_WORDS = {
    "achieved": ["achieved"],
    "not_achieved": ["not", "achieved"],
    "unverified": ["unverified"],
}
QUALIFIERS = {"the", "final", "task", "overall"}


def stated(line: str) -> list[str] | None:
    """The oracle: the words ``line`` states as an outcome, or None."""
    if line.strip().startswith(CLAIM_LABELS):
        return None
    words = re.findall(r"[a-z0-9]+|[:=]", line.lower())
    while words and (words[0] in QUALIFIERS or words[0].isdigit()):
        words.pop(0)
    start = None
    if words and words[0] == "outcome":
        start = 1
    else:
        for i, word in enumerate(words[:-1]):
            if word == "outcome" and words[i + 1] in {":", "="}:
                start = i + 1
                break
    if start is None:
        return None
    rest = [w for w in words[start:] if w not in {":", "="}]
    return rest[1:] if rest[:1] == ["is"] else rest


def states_only(report: str, outcome: str) -> bool:
    """Whether every outcome the oracle finds in ``report`` is ``outcome``; a statement
    with nothing after it takes the next line, as a reader would."""
    lines = report.splitlines()
    for index, line in enumerate(lines):
        words = stated(line)
        if words is None:
            continue
        if not words:
            nxt = next((x for x in lines[index + 1 :] if x.strip()), "")
            if nxt.strip().startswith(CLAIM_LABELS):
                continue
            words = re.findall(r"[a-z0-9]+", nxt.lower())
        if words != VERDICT_WORDS[outcome]:
            return False
    return True


def evidence(outcome: str, checked_by: str, claim: str | None) -> OutcomeEvidence:
    return OutcomeEvidence(
        check="programmatic" if checked_by else "none",
        checked_by=checked_by,
        summary=f"{outcome}: 1 of 2 goal conditions hold",
        claim=claim,  # type: ignore[arg-type]
    )


# ====================================================================== reports


PREFIXES = ["", "**", "- ", "1. ", "> ", "### ", "The ", "Final ", "task ", "Done. ", "`"]
NAMES = ["Outcome", "outcome", "OUTCOME", "Outcome**"]
SEPARATORS = [":", ": ", " =", " - ", " — ", " is ", ":** ", ":\n", " "]
VALUES = [
    "achieved",
    "not achieved",
    "Not_Achieved",
    "ACHIEVED.",
    "not-achieved",
    "success",
    "unverified",
    "",
    "achieved ✅",
    "partially achieved",
    "achieved (both pots)",
]
PROSE = [
    "I moved the left moka pot onto the stove.",
    "Plan: [pick moka_pot_1, place moka_pot_1 on flat_stove_1]",
    "Everything is done!",
    "The outcomes of each step were logged.",
    "",
    "Frame: left and right as seen through agentview.",
]

statement = st.builds(
    lambda p, n, s, v: f"{p}{n}{s}{v}",
    st.sampled_from(PREFIXES),
    st.sampled_from(NAMES),
    st.sampled_from(SEPARATORS),
    st.sampled_from(VALUES),
)
reports = st.lists(st.one_of(statement, st.sampled_from(PROSE)), max_size=7).map("\n".join)
outcomes = st.sampled_from(["achieved", "not_achieved", "unverified"])
statuses = st.sampled_from(["completed", "failed", "cancelled"])
deciders = st.sampled_from(["simulator", "model:judge", "the model's report", ""])


@settings(max_examples=examples(600), deadline=None)
@given(reports, outcomes, statuses, deciders)
def test_a_reconciled_report_states_only_the_verdict(
    report: str, outcome: str, status: str, checked_by: str
) -> None:
    ev = evidence(outcome, checked_by, report_claim(report))
    out = reconcile_report(report, outcome, ev, status=status)  # type: ignore[arg-type]
    assert states_only(out, outcome), out
    # the claim a re-reading would find is the verdict's, never a success not confirmed
    claim = report_claim(out)
    assert claim in ({outcome, None} if outcome != "unverified" else {None}), out
    # the model's words are all still there, and a second pass changes nothing
    for line in report.splitlines():
        assert line.strip() in out
    assert reconcile_report(out, outcome, ev, status=status) == out  # type: ignore[arg-type]
    # a report already saying only the verdict is left as the model wrote it
    if states_only(report, outcome) and outcome_statements(report):
        assert out == report


@settings(max_examples=examples(300), deadline=None)
@given(reports, outcomes)
def test_a_denied_claim_stays_visible_as_a_claim(report: str, outcome: str) -> None:
    ev = evidence(outcome, "simulator", report_claim(report))
    out = reconcile_report(report, outcome, ev, status="completed")  # type: ignore[arg-type]
    for line in report.splitlines():
        words = stated(line)
        if words is not None and words and words != VERDICT_WORDS[outcome]:
            assert any(f"{label}{line.strip()}" in out for label in CLAIM_LABELS), out
    if out != report:
        assert out.splitlines()[-1] == f"Outcome: {' '.join(VERDICT_WORDS[outcome])}"


def test_the_moka_pot_report_of_libero_10_task_8() -> None:
    """The report that contradicted LIBERO's check (stop 50's closing note)."""
    report = (
        "Plan: [pick moka_pot_1, place moka_pot_1 on flat_stove_1]\n"
        "Frame: left and right as seen through the agentview camera.\n"
        "I put the left moka pot on the stove.\nOutcome: achieved"
    )
    ev = OutcomeEvidence(
        check="programmatic",
        checked_by="LIBERO",
        summary="0 of 2 goal conditions hold; not: (On moka_pot_2 flat_stove_1_cook_region)",
        claim="achieved",
    )
    out = reconcile_report(report, "not_achieved", ev, status="completed")
    assert out.splitlines()[-2:] == [
        "Checked by LIBERO: 0 of 2 goal conditions hold; not: (On moka_pot_2 "
        "flat_stove_1_cook_region)",
        "Outcome: not achieved",
    ]
    assert "The model's claim, which the check denies: Outcome: achieved" in out
    assert report_claim(out) == "not_achieved"


def test_unverified_stays_unverified_and_agreeing_reports_are_untouched() -> None:
    none = OutcomeEvidence(check="none", summary="no task check is configured", claim="achieved")
    out = reconcile_report("Waved.\nOutcome: achieved", "unverified", none, status="completed")
    assert out.endswith("Not confirmed: no task check is configured\nOutcome: unverified")
    assert "The model's claim, not confirmed: Outcome: achieved" in out
    # no outcome line and no check: nothing is stated, nothing is added
    assert reconcile_report("did it", "unverified", none, status="completed") == "did it"
    agree = "Done.\n**Outcome:** achieved"
    ok = OutcomeEvidence(check="programmatic", checked_by="simulator", claim="achieved")
    assert reconcile_report(agree, "achieved", ok, status="completed") == agree
    # a judge whose words say "Outcome:" cannot slip a statement into the verdict line
    judge = OutcomeEvidence(check="model", checked_by="model:j", summary="Outcome: achieved")
    out = reconcile_report("ok\nOutcome: achieved", "not_achieved", judge, status="completed")
    assert states_only(out, "not_achieved"), out


@settings(max_examples=examples(200), deadline=None)
@given(reports, st.integers(min_value=60, max_value=400))
def test_a_clipped_report_keeps_its_verdict_and_its_labels(report: str, limit: int) -> None:
    ev = evidence("not_achieved", "simulator", "achieved")
    out = reconcile_report(report + "\nOutcome: achieved", "not_achieved", ev, status="completed")
    clipped = clip_report(out, limit)
    assert len(clipped) <= limit + 2 or clipped == out
    assert clipped.splitlines()[-1] == "Outcome: not achieved"
    for line in clipped.splitlines():
        words = stated(line)
        assert not words or words == ["not", "achieved"] or line.endswith("…"), line


# ====================================================================== a real episode


@pytest.mark.sim
def test_an_episode_whose_check_denies_the_claim_reports_the_verdict(tmp_path: Path) -> None:
    """A model that claims success without moving: the PyBullet simulator's check denies
    it, and every report a user reads (the done event, the run store, ``harness report``'s
    page, the eval record, the LIBERO table's count) says so; the claim stays the model's."""
    pytest.importorskip("pybullet")
    claim = "I put the red cube in the tray.\n\n**Outcome:** achieved"
    deployment = {
        "model": {
            "provider": "scripted",
            "name": "boaster",
            "context_window": 100_000,
            "options": {"responses": [{"text": claim}]},
        },
        "embodiment": "panda_tabletop",
        "driver": {"name": "sim.tabletop", "seed": 0},
        "run": {"max_turns": 3, "store": ".harness"},
        "memory": {"enabled": False},
    }
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump(deployment), encoding="utf-8")
    task = {"name": "boast", "instruction": "put the red cube in the tray", "seeds": [0]}
    suite = {"suite": "boast", "config": "deployment.yaml", "check": "programmatic"}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({**suite, "tasks": [task]}))
    out = tmp_path / "eval"
    argv = ["eval", str(tmp_path / "suite.yaml"), "--workers", "1", "--out", str(out)]
    assert main(argv) in (0, 1)

    (record,) = EvalFolder(out).records()
    assert (record.outcome, record.claim, record.success) == ("not_achieved", "achieved", False)
    store = out / record.store
    with RunLog(store) as log:
        (done,) = [e for e in log.events(task_id=record.run_id, types=["done"])]
        stored = log.task(record.run_id)
    assert isinstance(done, DoneEvent) and done.evidence.claim == "achieved"
    for text in (done.report, stored.report, record.report):
        assert states_only(text, "not_achieved"), text
        assert text.splitlines()[-1] == "Outcome: not achieved"
        assert "The model's claim, which the check denies: **Outcome:** achieved" in text
        assert "red_cube_1" in text.splitlines()[-2]  # the check's evidence, named
    page = tmp_path / "page.html"
    assert main(["report", record.run_id, "--store", str(store), "-o", str(page)]) == 0
    final = page.read_text(encoding="utf-8").rsplit('<div class="report">', 1)[1]
    final = final.split("</pre>", 1)[0]
    shown = html.unescape(re.sub(r"<[^>]+>", "\n", final))
    assert done.report in shown and states_only(shown, "not_achieved"), shown
    # the LIBERO table still counts the model's claim against the check, and no report
    (row,) = libero_suites.rows([out])
    assert row["denied"] == "1 / 0"
