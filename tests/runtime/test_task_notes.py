"""Task Notes: reset per task, bounded, versioned only on real change."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.task_notes import MAX_NOTE_CHARS, TaskNotes


def test_reset_starts_a_task_from_a_clean_slate() -> None:
    notes = TaskNotes(timeline_max=3)
    notes.reset("put the red cube in the tray")
    notes.update(phase="picking", add_notes=["red_cube_1 is near the edge"])
    notes.record_outcome(1, "pick", "failure (not held)")
    version = notes.version
    notes.reset("stack the cubes")
    assert notes.version > version
    assert notes.render() == "Task Notes\ngoal: stack the cubes\nphase: started"


def test_timeline_keeps_the_most_recent_outcomes() -> None:
    notes = TaskNotes(timeline_max=2)
    notes.reset("g")
    for turn in range(1, 5):
        notes.record_outcome(turn, "look", "ok")
    assert list(notes.timeline) == ["t3 look: ok", "t4 look: ok"]


def test_update_reports_change_and_bounds_text() -> None:
    notes = TaskNotes()
    notes.reset("g")
    assert notes.update(phase="searching") is True
    version = notes.version
    assert notes.update(phase="searching", add_notes=[]) is False
    assert notes.version == version
    assert notes.update(add_notes=["x" * 1000]) is True
    assert len(notes.notes[0]) == MAX_NOTE_CHARS and notes.notes[0].endswith("...")
    assert notes.update(remove_notes=["x" * 1000]) is True  # removal matches the bounded form
    assert notes.notes == []


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("phase"), st.text(max_size=50)),
            st.tuples(st.just("add"), st.lists(st.text(max_size=400), max_size=5)),
            st.tuples(st.just("remove"), st.lists(st.text(max_size=30), max_size=3)),
            st.tuples(st.just("outcome"), st.text(max_size=500)),
        ),
        max_size=40,
    )
)
def test_notes_stay_bounded_and_versions_only_move_on_change(ops: list[tuple]) -> None:
    notes = TaskNotes(timeline_max=5, max_notes=4)
    notes.reset("goal")
    for kind, value in ops:
        before_text, before_version = notes.render(), notes.version
        if kind == "outcome":
            notes.record_outcome(1, "pick", value)
            assert notes.version == before_version + 1
            continue
        changed = notes.update(
            phase=value if kind == "phase" else None,
            add_notes=value if kind == "add" else None,
            remove_notes=value if kind == "remove" else None,
        )
        assert changed == (notes.render() != before_text)
        assert notes.version == before_version + (1 if changed else 0)
    assert len(notes.timeline) <= 5 and len(notes.notes) <= 4
    assert all(len(note) <= MAX_NOTE_CHARS for note in notes.notes)
    assert all(len(entry) <= MAX_NOTE_CHARS + 20 for entry in notes.timeline)
