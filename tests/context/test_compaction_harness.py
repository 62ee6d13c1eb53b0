"""Compaction through the real Harness loop with scripted models: provider overflow,
long sessions, recall of every shortened original, redaction and introspection."""

from __future__ import annotations

import random
from typing import Any

from harness import Harness, HarnessConfig, tool
from harness.errors import ContextOverflowError
from harness.events import (
    CompactionEvent,
    DoneEvent,
    EventBase,
    PromptSnapshotEvent,
)
from harness.messages import (
    CheckpointItem,
    InstructionItem,
    ModelRequest,
    ModelResponse,
    TaskNotesItem,
    ToolResultItem,
)
from harness.providers import ScriptedModel, call, reply
from harness.tools import ToolContext
from tests.histories import filler, recall_references, valid_note_responder

OUTPUTS: dict[str, str] = {}


@tool
def scan(area: str, ctx: ToolContext) -> str:
    """Scan an area of the table and list what is there.

    Args:
        area: Which area to scan.
    """
    rng = random.Random(area)
    text = f"scan {area}: " + filler(rng.choice([300, 2000, 9000, 20000]), rng.randrange(10**6))
    OUTPUTS[ctx.call_id] = text
    return text


def session_config(window: int, **compaction: Any) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": 400, "failure_budget": 400},
            "memory": {"enabled": False},
            "context": {
                "compaction": {"context_window": window, "reserve_tokens": 2000, **compaction}
            },
        }
    )


def scanning_model(turns: int) -> ScriptedModel:
    def decide(request: ModelRequest) -> ModelResponse:
        count = sum(1 for item in request.items if item.kind == "assistant")
        done = sum(1 for item in request.items if item.kind == "tool_result")
        step = len(decide.seen)  # type: ignore[attr-defined]
        decide.seen.append(request)  # type: ignore[attr-defined]
        if step >= turns:
            return reply(f"scanned {turns} areas ({count} decisions, {done} results in view)")
        return call("scan", area=f"area-{step}")

    decide.seen = []  # type: ignore[attr-defined]
    return ScriptedModel(responder=decide, name="decider")


def events_of(h: Harness, instruction: str = "scan the table") -> list[EventBase]:
    return list(h.run_stream(instruction))


def done_of(events: list[EventBase]) -> DoneEvent:
    [done] = [e for e in events if isinstance(e, DoneEvent)]
    return done


# --------------------------------------------------------------------------- overflow


def test_provider_overflow_forces_a_compaction_and_the_request_is_resent_once() -> None:
    requests: list[ModelRequest] = []

    def decide(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        if len(requests) == 9:
            raise ContextOverflowError("prompt is too long: 212000 tokens > 200000 maximum")
        if len(requests) >= 12:
            return reply("done")
        return call("scan", area=f"a{len(requests)}")

    summarizer = ScriptedModel(responder=valid_note_responder, name="note-writer")
    config = session_config(200_000, keep_recent_turns=2)
    with Harness(
        config, model=ScriptedModel(responder=decide), tools=[scan], compaction_model=summarizer
    ) as h:
        events = events_of(h)
    assert done_of(events).status == "completed"
    kinds = [(e.type, getattr(e, "status", getattr(e, "kind", ""))) for e in events]
    overflow = kinds.index(("model_error", "context_overflow"))
    assert kinds[overflow + 1] == ("compaction", "started")
    started = events[overflow + 1]
    assert isinstance(started, CompactionEvent) and started.mode == "overflow"
    assert "prompt is too long" in started.reason
    completed = events[overflow + 2]
    assert isinstance(completed, CompactionEvent) and completed.status == "completed"
    # the same decision was asked again, from the compacted context; the instruction is
    # never folded, so it stays first (issue 17: this asserted items[0] was the checkpoint)
    resent = requests[9]
    assert isinstance(resent.items[0], InstructionItem)
    assert isinstance(resent.items[1], CheckpointItem)
    assert len(resent.items) < len(requests[8].items)
    assert len(summarizer.requests) >= 1
    assert all(r.purpose == "summarize" and not r.tools for r in summarizer.requests)


def test_a_second_overflow_after_the_forced_compaction_ends_the_task() -> None:
    requests: list[ModelRequest] = []

    def decide(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        if len(requests) >= 6:
            raise ContextOverflowError("input exceeds the context window")
        return call("scan", area=f"a{len(requests)}")

    with Harness(
        session_config(200_000),
        model=ScriptedModel(responder=decide),
        compaction_model=ScriptedModel(responder=valid_note_responder),
        tools=[scan],
    ) as h:
        done = done_of(events_of(h))
    assert done.status == "failed"
    assert "context overflow again after a forced compaction" in done.termination_reason


def test_an_overflow_with_nothing_to_compact_is_a_named_budget_error() -> None:
    def decide(request: ModelRequest) -> ModelResponse:
        raise ContextOverflowError("request too large")

    with Harness(session_config(200_000), model=ScriptedModel(responder=decide)) as h:
        events = events_of(h)
    done = done_of(events)
    assert done.status == "failed"
    assert done.termination_reason.startswith("context budget: ")
    assert "provider reported an overflow" in done.termination_reason
    failed = [e for e in events if isinstance(e, CompactionEvent) and e.status == "failed"]
    assert failed and failed[-1].reason in done.termination_reason


# --------------------------------------------------------------------------- long sessions


def test_a_long_session_stays_under_the_window_and_every_original_is_recallable() -> None:
    OUTPUTS.clear()
    turns = 150
    window = 24_000
    summarizer = ScriptedModel(responder=valid_note_responder, name="note-writer")
    with Harness(
        session_config(window),
        model=scanning_model(turns),
        tools=[scan],
        compaction_model=summarizer,
    ) as h:
        events = events_of(h)
        done = done_of(events)
        assert done.status == "completed" and done.turns == turns + 1
        snapshots = [e for e in events if isinstance(e, PromptSnapshotEvent)]
        threshold = h.context.budget.threshold
        assert max(s.total_tokens for s in snapshots) < window
        # every request that reached the model was within budget, or a failed summary
        # was being waited out (none here: the summarizer always answers)
        assert all(s.total_tokens < threshold for s in snapshots)
        compactions = [e for e in events if isinstance(e, CompactionEvent)]
        assert any(e.status == "completed" and e.mode == "checkpoint" for e in compactions)
        assert any(e.mode == "prune" for e in compactions)
        # the summarizer's calls are part of what the task cost
        summarizer_requests = sum(e.usage.requests for e in compactions if e.usage)
        assert summarizer_requests == len(summarizer.requests) > 0
        assert done.usage.requests == turns + 1 + summarizer_requests

        # every exact tool output is in the archive, and every marker resolves
        assert len(OUTPUTS) == turns
        for call_id, text in OUTPUTS.items():
            assert h.store.archive_get(f"archive://{done.task_id}/{call_id}") == text
        for item in h.context.accumulated:
            for address in recall_references(getattr(item, "text", "")):
                assert h.store.archive_get(address) is not None

        # the recall tool returns exact slices
        recall = h.tools.get("recall")
        assert recall is not None
        call_id, text = max(OUTPUTS.items(), key=lambda kv: len(kv[1]))
        address = f"archive://{done.task_id}/{call_id}"
        ctx = ToolContext(call_id="r", task_id=done.task_id, turn=0)
        sliced = recall.invoke({"address": address, "offset": 5000, "limit": 3000}, ctx)
        body = sliced.text.split("\n", 1)[1]
        assert body == text[5000:8000]

        # superseded Task Notes snapshots never pile up
        notes = [i for i in h.context.accumulated if isinstance(i, TaskNotesItem)]
        assert len(notes) <= 25
        notes_tokens = h.context.accumulated_tokens(notes)
        assert notes_tokens < 0.5 * h.context.accumulated_tokens()


def test_the_recall_tool_reads_a_pruned_output_back_through_the_loop() -> None:
    OUTPUTS.clear()
    answers: list[str] = []

    def decide(request: ModelRequest) -> ModelResponse:
        pruned = [
            i
            for i in request.items
            if isinstance(i, ToolResultItem) and "pruned from context" in i.text
        ]
        recalled = [
            i for i in request.items if isinstance(i, ToolResultItem) and i.name == "recall"
        ]
        if recalled:
            answers.append(recalled[-1].text)
            return reply("done")
        if pruned:
            [address] = recall_references(pruned[0].text)
            return call("recall", address=address, offset=0, limit=20000)
        return call("scan", area=f"x{len(request.items)}")

    config = session_config(200_000)
    config.context.pruning.trigger_tokens = 0
    config.context.pruning.protect_recent_items = 4
    config.context.pruning.min_reclaim_tokens = 100
    with Harness(config, model=ScriptedModel(responder=decide), tools=[scan]) as h:
        done = done_of(events_of(h))
        assert done.status == "completed"
    assert answers
    header, body = answers[0].split("\n", 1)
    address = header.split()[0].lstrip("[")
    call_id = address.rsplit("/", 1)[1]
    assert body == OUTPUTS[call_id][:20000]


def test_a_decision_model_that_cannot_summarize_gets_deterministic_checkpoints() -> None:
    model = scanning_model(60)
    model.supports_summaries = False  # type: ignore[attr-defined]
    with Harness(session_config(16_000), model=model, tools=[scan]) as h:
        events = events_of(h)
    assert done_of(events).status == "completed"
    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    assert any(e.status == "fallback" and e.mode == "deterministic" for e in compactions)
    assert all(r.purpose == "decide" for r in model.requests)


def test_secrets_never_reach_the_summarizer() -> None:
    secret = "sk-proj-" + "a1B2c3D4e5" * 4

    @tool
    def read_config() -> str:
        """Read the robot's config file."""
        return f"controller ok\napi_key = {secret}\n" + filler(12_000, 3)

    calls: list[int] = []

    def decide(request: ModelRequest) -> ModelResponse:
        calls.append(1)
        return reply("done") if len(calls) > 40 else call("read_config")

    summarizer = ScriptedModel(responder=valid_note_responder)
    with Harness(
        session_config(20_000),
        model=ScriptedModel(responder=decide),
        tools=[read_config],
        compaction_model=summarizer,
    ) as h:
        assert done_of(events_of(h)).status == "completed"
    assert summarizer.requests
    for request in summarizer.requests:
        text = request.items[0].text  # type: ignore[union-attr]
        assert secret not in text and "[REDACTED]" in text


def test_context_report_lists_every_item_with_lifetime_state_tokens_and_reason() -> None:
    summarizer = ScriptedModel(responder=valid_note_responder)
    with Harness(
        session_config(24_000),
        model=scanning_model(80),
        tools=[scan],
        compaction_model=summarizer,
        profile_text="Robot: 7-dof arm",
    ) as h:
        events_of(h)
        rows = h.context_report()
        sections = h.context.sections()
    by_lifetime = {row["lifetime"] for row in rows}
    assert {"resident", "accumulated"} <= by_lifetime
    assert {"system", "embodiment"} <= {r["id"] for r in rows if r["lifetime"] == "resident"}
    assert any(r["kind"] == "tool_definitions" and "scan" in r["reason"] for r in rows)
    live = [r for r in rows if r["lifetime"] == "accumulated" and r["in_context"]]
    gone = [r for r in rows if r["lifetime"] == "accumulated" and not r["in_context"]]
    assert abs(sum(r["tokens"] for r in live) - sections["accumulated"]) <= len(live)
    states = {r["state"] for r in gone}
    assert {"summarized", "pruned"} <= states
    for row in gone:
        assert row["reason"] and row["tokens"] == 0 and row["kind"]
        if row["state"] == "summarized":
            assert "folded into checkpoint item_" in row["reason"]
    checkpoint = next(r for r in live if r["kind"] == "checkpoint")
    assert checkpoint["state"] == "summarized" and "checkpoint of" in checkpoint["reason"]
    assert checkpoint["original_tokens"] > checkpoint["tokens"]
    assert any(r["replaced_by"] for r in rows if r["state"] == "pruned")
