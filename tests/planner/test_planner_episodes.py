"""The offline planner marks its work with episodes and condenses after each object, so
`harness demo` shows the mechanism (issue 18): end to end on the simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig
from harness.events import CompactionEvent, EpisodeEvent, ModelResponseEvent, ToolResultEvent
from harness.store.reader import RunLog
from harness.store.task_page import render_report


@pytest.mark.sim
def test_the_planner_explores_acts_and_condenses_on_the_simulator(sim: Any, tmp_path: Path) -> None:
    config = HarnessConfig.model_validate(
        {
            "model": {"provider": "planner"},
            "embodiment": "panda_tabletop",
            "driver": None,
            "run": {"store": str(tmp_path / "store"), "max_turns": 60},
            "memory": {"enabled": False},
            "evaluation": {"required_tools": ["pick", "place"]},
            "context": {"episodes": {"enabled": True}},
        }
    )
    with Harness.from_config(config, driver=sim) as h:
        events = list(h.run_stream("put all the cubes in the tray"))
        task_id = events[-1].task_id
    done = events[-1]
    assert done.status == "completed" and done.outcome == "achieved", done.termination_reason
    # Every object: an exploration that found it, then an action depending on it.
    episodes = [e for e in events if isinstance(e, EpisodeEvent)]
    actions = [e for e in episodes if e.kind == "action" and e.status == "ended"]
    assert len(actions) == 3
    explored = {e.name: e.conclusion for e in episodes if e.kind == "exploration"}
    for action in actions:
        ref = action.name.removeprefix("move-").rsplit("-t", 1)[0]
        assert action.depends_on and explored[action.depends_on[0]].startswith(ref)
        assert action.conclusion.startswith(f"{ref} is in tray_1 (evaluator:")
    # A condensation after each object but the last, each accepted.
    explicit = [e for e in events if isinstance(e, CompactionEvent) and e.mode == "explicit"]
    assert len(explicit) == 2 and all(e.status == "completed" for e in explicit)
    condensed = [
        e for e in events if isinstance(e, ToolResultEvent) and e.name == "condense_context"
    ]
    assert not any(e.is_error for e in condensed)
    # The report still cites every verdict (read back from the planner's own memory).
    assert "Result: 3 of 3 objects where they belong" in done.report
    assert done.report.count("(evaluator: ") == 3
    assert all(len(e.tool_calls) <= 1 for e in events if isinstance(e, ModelResponseEvent))
    with RunLog(tmp_path / "store") as log:
        assert len(log.context_at(task_id).episodes) == len(explored) + 3
        html = render_report(log, task_id)
    assert "<h2>Episodes</h2>" in html and "condense_context" in html
