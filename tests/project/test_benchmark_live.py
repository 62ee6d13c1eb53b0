"""The live-viewer benchmark rows run and say what they measured (numbers are not
asserted: speed claims live in benchmarks/README.md)."""

from __future__ import annotations

import pytest

pytest.importorskip("foxglove")
pytest.importorskip("pybullet")

from benchmarks import live_viewers


def test_live_rows_run_off_and_on_side_by_side() -> None:
    rows = live_viewers.measure(
        rounds=1,
        rows=("off", "foxglove, client"),
        instruction="put the red cube in the tray",
        warm_up=False,
    )
    assert [r.status for r in rows.values()] == ["completed", "completed"]
    assert rows["off"].sink_us_per_turn == [0.0]
    assert rows["foxglove, client"].sink_us_per_turn[0] > 0
    table = live_viewers.render(rows)
    assert "| off " in table and "1.00x" in table and "foxglove, client" in table
