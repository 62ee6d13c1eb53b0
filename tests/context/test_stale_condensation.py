"""A model condensation whose working set changed while it ran is dropped: the
deterministic plan is used instead (issue 18), and the summarizer is not blamed for it."""

from __future__ import annotations

from typing import Any

from harness import Harness
from harness.events import CompactionEvent, DoneEvent
from harness.messages import CheckpointItem, ModelRequest, ModelResponse, NoticeItem
from harness.providers import ScriptedModel
from tests.context.test_compaction_harness import scan, scanning_model, session_config
from tests.histories import VALID_NOTE


def test_a_condensation_overtaken_by_a_new_item_is_discarded_for_the_deterministic_plan() -> None:
    holder: dict[str, Any] = {}
    calls: list[int] = []

    def summarize(request: ModelRequest) -> ModelResponse:
        calls.append(1)
        if len(calls) == 1:  # the working set moves while this condensation runs
            holder["h"].context.append(NoticeItem(text="operator: the tray moved"))
        return ModelResponse(text=VALID_NOTE)

    summarizer = ScriptedModel(responder=summarize, name="summarizer")
    config = session_config(16_000)
    config.context.pruning.enabled = False
    with Harness(config, model=scanning_model(30), compaction_model=summarizer, tools=[scan]) as h:
        holder["h"] = h
        events = list(h.run_stream("scan the table"))
        checkpoints = [i for i in h.context.accumulated if isinstance(i, CheckpointItem)]
    assert next(e for e in events if isinstance(e, DoneEvent)).status == "completed"
    passes = [e for e in events if isinstance(e, CompactionEvent) and e.mode != "prune"]
    stale = [e for e in passes if e.status == "skipped" and "working set changed" in e.reason]
    assert len(stale) == 1 and "deterministic plan is used instead" in stale[0].reason
    after = passes[passes.index(stale[0]) + 1]
    assert (after.status, after.mode) == ("fallback", "deterministic")
    assert "stale condensation" in after.reason
    # The model was not blamed: no failure, no backoff; the next fold uses the model again.
    assert not [e for e in passes if e.status == "failed"]
    later = [e for e in passes[passes.index(after) + 1 :] if e.status == "completed"]
    assert any(e.mode == "checkpoint" for e in later)
    assert len(calls) >= 2
    assert len(checkpoints) == 1
