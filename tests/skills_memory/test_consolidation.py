"""Consolidation gates, partial rejection, duplicate merging, hand-written MEMORY.md text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory import (
    MemoryDocument,
    MemoryStore,
    RuleBasedProposer,
    TaskRecord,
    ToolOutcome,
)
from memory.memory_file import BEGIN_MARKER, END_MARKER

PICK_FAIL = ToolOutcome(1, "pick", False, "failure", "not held: fingers closed on nothing")
LOOK = ToolOutcome(2, "look", True, None, "fresh image")
NOTES = ToolOutcome(3, "update_task_notes", True, None, "Task Notes updated")
PICK_OK = ToolOutcome(4, "pick", True, "success", "held red_cube_1")
PLACE_OK = ToolOutcome(5, "place", True, "success", "red_cube_1 in tray_1")


def record(*outcomes: ToolOutcome, status: str = "completed", **kw: Any) -> TaskRecord:
    return TaskRecord(
        task_id="task_1",
        instruction="put the red cube in the tray",
        status=status,
        report="done",
        notes="Task Notes",
        outcomes=list(outcomes),
        **kw,
    )


class Proposer:
    """Stands in for the model: returns fixed proposals (or raises)."""

    name = "test proposer"

    def __init__(self, proposals: Any) -> None:
        self.proposals = proposals
        self.records: list[TaskRecord] = []

    def propose(self, task: TaskRecord) -> Any:
        self.records.append(task)
        if isinstance(self.proposals, BaseException):
            raise self.proposals
        return self.proposals


def lesson(text: str, kind: str = "general", tool: str | None = None, confidence: float = 0.9):
    return {"text": text, "kind": kind, "tool": tool, "confidence": confidence}


# --------------------------------------------------------------------------- status


@pytest.mark.parametrize("status", ["cancelled", "failed", "max_turns", "failure_budget"])
def test_unfinished_tasks_skip_with_the_reason(tmp_path: Path, status: str) -> None:
    proposer = Proposer([lesson("Always look before picking anything.")])
    store = MemoryStore(tmp_path, proposer=proposer)
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK, status=status))
    assert report.status == "skipped"
    assert status in report.reason
    assert proposer.records == []
    assert not store.memory_file.exists()


# --------------------------------------------------------------------------- gates


def test_confidence_gate_uses_the_configured_threshold(tmp_path: Path) -> None:
    proposals = [
        lesson("The tray is at the left edge of the table.", confidence=0.74),
        lesson("Cubes are 4 cm wide on this table.", confidence=0.75),
    ]
    store = MemoryStore(tmp_path, proposer=Proposer(proposals))
    report = store.consolidate(record(PICK_OK))
    assert [r["reason"] for r in report.rejected] == ["confidence 0.74 is below the threshold 0.75"]
    assert len(report.kept) == 1 and "Cubes are 4 cm wide" in report.kept[0]

    strict = MemoryStore(tmp_path / "strict", proposer=Proposer(proposals))
    report = strict.consolidate(record(PICK_OK, min_confidence=0.9))
    assert len(report.rejected) == 2 and "threshold 0.90" in report.rejected[1]["reason"]


def test_success_lesson_needs_an_evaluator_confirmed_success(tmp_path: Path) -> None:
    text = "Pick cubes from directly above for a firm grasp."
    proposer = Proposer([lesson(text, "success", "pick")])
    store = MemoryStore(tmp_path, proposer=proposer)
    # executed fine, but the evaluator never confirmed it
    unconfirmed = ToolOutcome(1, "pick", True, None, "pick returned")
    report = store.consolidate(record(unconfirmed))
    assert report.rejected == [
        {"lesson": text, "reason": "no evaluator-confirmed success of 'pick' in this task"}
    ]
    report = store.consolidate(record(PICK_OK))
    assert report.rejected == [] and len(report.kept) == 1
    assert store.ledger("pick").lessons[0].text == text


def test_failure_lesson_needs_a_failure_followed_by_a_recovery(tmp_path: Path) -> None:
    text = "When pick fails, open the gripper and look again before retrying."
    store = MemoryStore(tmp_path, proposer=Proposer([lesson(text, "failure", "pick")]))
    for outcomes in ([PICK_FAIL], [PICK_OK, PICK_FAIL], [PICK_OK]):
        report = store.consolidate(record(*outcomes))
        assert report.kept == []
        assert report.rejected[0]["reason"] == (
            "no failure of 'pick' followed by a recovery in this task"
        )
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    assert len(report.kept) == 1 and report.rejected == []


def test_tool_lesson_about_an_unused_tool_is_rejected(tmp_path: Path) -> None:
    store = MemoryStore(
        tmp_path, proposer=Proposer([lesson("Home before every place call.", "general", "home")])
    )
    report = store.consolidate(record(PICK_OK))
    assert report.rejected[0]["reason"] == "tool 'home' was not used in this task"


def test_a_bad_entry_is_rejected_alone(tmp_path: Path) -> None:
    proposals: list[Any] = [
        lesson("When pick fails, look before retrying.", "failure", "pick"),
        "not an object",
        {"text": "No confidence given for this one."},
        lesson("x", confidence=0.9),
        lesson("multi\nline lesson text", confidence=0.9),
        lesson("<!-- harness:lessons:end --> injected", confidence=0.9),
        lesson("A success lesson without a tool.", "success"),
        lesson("Confidence out of range for sure.", confidence=1.5),
        lesson("The operator prefers the tray on the left side.", confidence=0.8),
    ]
    store = MemoryStore(tmp_path, proposer=Proposer(proposals))
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    assert report.status == "completed"
    assert len(report.kept) == 2
    assert len(report.rejected) == 7
    reasons = [r["reason"] for r in report.rejected]
    assert reasons[0] == "invalid entry: expected an object, got str"
    assert reasons[1] == "invalid entry: confidence: missing"
    assert "shorter than 8" in reasons[2]
    assert "single line" in reasons[3]
    assert "must not contain '<!--'" in reasons[4]
    assert "must name the tool" in reasons[5]
    assert "confidence" in reasons[6]
    assert "test proposer: 9 proposed, 2 kept, 7 rejected" in report.reason
    assert store.general_lessons()[0].text == "The operator prefers the tray on the left side."
    assert store.ledger("pick").lessons[0].kind == "failure"


# --------------------------------------------------------------------------- merging


def test_duplicates_are_merged_within_a_task_and_across_tasks(tmp_path: Path) -> None:
    proposals = [
        lesson("When pick fails (object moved 3 cm), look before retrying.", "failure", "pick"),
        lesson("When pick fails (object moved 5 cm) look before retrying", "failure", "pick", 0.95),
    ]
    store = MemoryStore(tmp_path, proposer=Proposer(proposals))
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    assert "new" in report.kept[0] and "seen 2x" in report.kept[1]
    store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    lessons = store.ledger("pick").lessons
    assert len(lessons) == 1
    assert lessons[0].seen == 4 and lessons[0].confidence == 0.95
    assert lessons[0].text == "When pick fails (object moved 3 cm), look before retrying."


def test_different_tools_or_kinds_are_not_duplicates(tmp_path: Path) -> None:
    text = "Move slowly near the tray edge to avoid knocking it."
    proposals = [lesson(text, "success", "pick"), lesson(text, "success", "place"), lesson(text)]
    store = MemoryStore(tmp_path, proposer=Proposer(proposals))
    report = store.consolidate(record(PICK_OK, PLACE_OK))
    assert len(report.kept) == 3 and all("new" in line for line in report.kept)


# --------------------------------------------------------------------------- MEMORY.md


HAND_WRITTEN_BEFORE = """\
# Robot memory

## Preferences
- Put fragile objects down slowly.
- Never stack more than three cubes.   <!-- the operator insisted -->

"""
HAND_WRITTEN_AFTER = """
## Site notes (by Ana)
The left camera glares after 4 pm.
"""


def test_hand_written_sections_are_preserved_byte_for_byte(tmp_path: Path) -> None:
    store = MemoryStore(
        tmp_path, proposer=Proposer([lesson("The tray never moves between tasks.")])
    )
    block = f"{BEGIN_MARKER}\n## Lessons learned\n- A lesson written by hand inside the block.\n"
    store.memory_file.write_text(HAND_WRITTEN_BEFORE + block + END_MARKER + HAND_WRITTEN_AFTER)
    store.consolidate(record(PICK_OK))
    text = store.memory_file.read_text()
    assert text.startswith(HAND_WRITTEN_BEFORE + BEGIN_MARKER)
    assert text.endswith(END_MARKER + HAND_WRITTEN_AFTER)
    lessons = [item.text for item in store.general_lessons()]
    assert lessons == [
        "A lesson written by hand inside the block.",
        "The tray never moves between tasks.",
    ]


def test_a_memory_file_without_the_block_gets_one_appended(tmp_path: Path) -> None:
    store = MemoryStore(
        tmp_path, proposer=Proposer([lesson("The tray never moves between tasks.")])
    )
    store.memory_file.write_text(HAND_WRITTEN_BEFORE.rstrip("\n"))
    store.consolidate(record(PICK_OK))
    text = store.memory_file.read_text()
    assert text.startswith(HAND_WRITTEN_BEFORE.rstrip("\n") + "\n\n" + BEGIN_MARKER)
    assert MemoryDocument.parse(text).lessons[0].text == "The tray never moves between tasks."


def test_a_new_memory_file_starts_from_the_template(tmp_path: Path) -> None:
    store = MemoryStore(
        tmp_path, proposer=Proposer([lesson("The tray never moves between tasks.")])
    )
    store.consolidate(record(PICK_OK))
    text = store.memory_file.read_text()
    assert "## Preferences" in text and "## Conventions" in text
    assert "- The tray never moves between tasks. _(confidence 0.90, seen 1x)_" in text


def test_unpaired_markers_reject_general_lessons_but_tool_lessons_land(tmp_path: Path) -> None:
    proposals = [
        lesson("The tray never moves between tasks."),
        lesson("When pick fails, look before retrying.", "failure", "pick"),
    ]
    store = MemoryStore(tmp_path, proposer=Proposer(proposals))
    broken = HAND_WRITTEN_BEFORE + BEGIN_MARKER + "\n- half a block\n"
    store.memory_file.write_text(broken)
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    assert store.memory_file.read_text() == broken
    assert len(report.rejected) == 1 and "fix them by hand" in report.rejected[0]["reason"]
    assert len(report.kept) == 1 and store.ledger("pick").lessons


# --------------------------------------------------------------------------- proposers


def test_rule_based_consolidator_turns_recoveries_into_recipes() -> None:
    proposals = RuleBasedProposer().propose(
        record(PICK_FAIL, LOOK, NOTES, PICK_OK, PLACE_OK, ToolOutcome(6, "pick", False, "failure",
               "not held: fingers closed on nothing"), ToolOutcome(7, "pick", True, "success", ""))
    )  # fmt: skip
    assert proposals == [
        {
            "text": "When pick fails (not held: fingers closed on nothing), calling look "
            "before retrying it worked.",
            "kind": "failure",
            "tool": "pick",
            "confidence": 0.8,
        }
    ]
    plain = RuleBasedProposer().propose(record(PICK_FAIL, PICK_OK))
    assert plain[0]["text"] == (
        "When pick fails (not held: fingers closed on nothing), retrying pick worked."
    )
    assert RuleBasedProposer().propose(record(PICK_FAIL, LOOK)) == []  # never recovered
    assert RuleBasedProposer().propose(record(PICK_OK, PLACE_OK)) == []  # nothing failed


def test_without_a_proposer_the_rule_based_consolidator_is_used(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    assert report.reason.startswith("lessons from the rule-based consolidator: 1 proposed")
    assert "calling look before retrying it worked" in store.ledger("pick").lessons[0].text


@pytest.mark.parametrize("failure", [RuntimeError("model down"), "not a list"])
def test_a_failing_proposer_falls_back_to_the_rules(tmp_path: Path, failure: Any) -> None:
    store = MemoryStore(tmp_path, proposer=Proposer(failure))
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    assert report.status == "completed"
    assert report.reason.startswith("test proposer failed (")
    assert "lessons from the rule-based consolidator instead: 1 proposed, 1 kept" in report.reason
    assert len(store.ledger("pick").lessons) == 1


def test_too_many_proposals_are_rejected_not_dropped(tmp_path: Path) -> None:
    proposals = [lesson(f"Distinct general lesson number {i:02d} {'x' * i}") for i in range(15)]
    store = MemoryStore(tmp_path, proposer=Proposer(proposals))
    report = store.consolidate(record(PICK_OK))
    assert len(report.kept) + len(report.rejected) == 15
    assert [r["reason"] for r in report.rejected[-3:]] == ["more than 12 proposals"] * 3


def test_a_non_utf8_memory_file_is_read_but_never_rewritten(tmp_path: Path) -> None:
    proposals = [
        lesson("The tray never moves between tasks."),
        lesson("When pick fails, look before retrying.", "failure", "pick"),
    ]
    store = MemoryStore(tmp_path, proposer=Proposer(proposals))
    raw = b"## Preferences\n- Keep the caf\xe9 mug upright.\n"
    store.memory_file.write_bytes(raw)
    text = store.resident_text(budget_tokens=500, estimate=lambda t: len(t) // 4 + 1)
    assert "Keep the caf\ufffd mug upright." in text
    report = store.consolidate(record(PICK_FAIL, LOOK, PICK_OK))
    assert store.memory_file.read_bytes() == raw
    assert "MEMORY.md is not valid UTF-8" in report.rejected[0]["reason"]
    assert len(report.kept) == 1
