"""The console Stop benchmark's bookkeeping: phases from the last event, and a table whose
counts add up (no timing is checked)."""

from __future__ import annotations

from benchmarks.console_stop import PHASES, phase_at_click, table
from harness.events import ObservationEvent, PromptSnapshotEvent, ToolCallEvent


def test_the_phase_is_read_from_the_last_event_before_the_click() -> None:
    motion = ToolCallEvent(call_id="c", name="pick", physical=True)
    prompt = PromptSnapshotEvent(
        sections={}, total_tokens=1, budget_tokens=2, threshold_tokens=1, items=0, images=0
    )
    events = [(1.0, ObservationEvent()), (2.0, prompt), (3.0, motion)]
    assert phase_at_click(events, 0.5) == ("task start", "")
    assert phase_at_click(events, 1.5)[0] == PHASES["observation"]
    assert phase_at_click(events, 2.5) == ("model call", "prompt_snapshot")
    assert phase_at_click(events, 3.5) == ("motion", "tool_call")


def test_the_table_counts_every_click_once() -> None:
    def trial(phase: str, stop: float | None, done: float, shown: float) -> dict:
        return {
            "phase": phase,
            "status": "cancelled",
            "to_stop_ms": stop,
            "to_done_ms": done,
            "shown_ms": shown,
        }

    trials = [
        trial("motion", 10.0, 50.0, 60.0),
        trial("motion", 30.0, 70.0, 80.0),
        trial("model call", None, 40.0, 45.0),
    ]
    text = table({"seed": 0, "max_delay": 4.0, "missed": 1, "trials": trials})
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    counts = {row.split("|")[1].strip(): int(row.split("|")[2]) for row in rows}
    assert counts == {"model call": 1, "motion": 2, "**all**": 3}
    assert "| motion | 2 | 20 / 30 / 30 / 30 | 60 / 70 / 70 | 70 |" in text
    assert "driver.stop() seen after 2 of 3 clicks" in text


def test_percentiles_are_nearest_rank() -> None:
    from benchmarks.console_stop import summary_stats

    values = [float(v) for v in range(1, 21)]  # 20 clicks: 1..20 ms
    stats = summary_stats(values)
    assert (stats["median"], stats["p90"], stats["p99"], stats["max"]) == (10.5, 18.0, 20.0, 20.0)
