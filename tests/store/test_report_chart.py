"""The context chart of the HTML report marks the passes that rewrote the context, and only
those: a free ``supersede`` of the Task Notes snapshot happens most turns, and marked as a
compaction it drew a dashed line on nearly every turn of the demo's chart."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.events import CompactionEvent
from harness.store.task_page import charted_compactions
from tests.tiers import examples

MODES = list(CompactionEvent.model_fields["mode"].annotation.__args__)  # type: ignore[union-attr]
STATUSES = ["started", "completed", "failed", "fallback", "skipped", "cancelled"]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(MODES), st.sampled_from(STATUSES)), max_size=30))
def test_the_chart_marks_every_rewrite_and_no_supersede(passes: list[tuple[str, str]]) -> None:
    events: list[Any] = [
        CompactionEvent(mode=mode, status=status, turn=i)  # type: ignore[arg-type]
        for i, (mode, status) in enumerate(passes)
    ]
    events.insert(0, "not an event")
    marked = charted_compactions(events)
    expected = [
        i
        for i, (mode, status) in enumerate(passes)
        if mode != "supersede" and status in {"completed", "fallback"}
    ]
    assert [e.turn for e in marked] == expected
