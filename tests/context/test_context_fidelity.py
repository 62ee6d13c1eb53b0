"""Nothing the model needs is ever out of reach (issue 17), through the real loop.

- the first exchange of a long compacted task is two ``recall`` calls away, whatever the
  summarizer wrote (here: a note with no address at all);
- there is one rolling checkpoint, never a nested one, and every version stays archived;
- the instruction and its revisions survive any number of compactions (hypothesis);
- an oversized instruction reaches the model as an authoritative reference;
- a later task carries an ended task's prose, not its tool traffic;
- a provider overflow climbs the recovery ladder, then ends with the numbers;
- ``search_archive`` finds an exchange by tool name and arguments.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig, tool
from harness.config import CompactionConfig, PruningConfig
from harness.context import Budget
from harness.context.compaction.archive import RECALL_MAX_CHARS
from harness.context.compaction.checkpoint import note_of
from harness.context.compaction.compactor import CheckpointCompactor
from harness.errors import ContextBudgetError, ContextOverflowError
from harness.events import CompactionEvent, DoneEvent, EventBase, PromptSnapshotEvent
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    ModelRequest,
    ModelResponse,
    NoticeItem,
    RevisionItem,
    ToolResultItem,
)
from harness.providers import ScriptedModel, call, reply
from harness.store import MemoryRunStore, SQLiteRunStore
from harness.tools import ToolContext
from tests.histories import (
    TaskSpec,
    TurnSpec,
    append_turns,
    build_history,
    filler,
    valid_note_responder,
)
from tests.tiers import examples

ADDRESS = re.compile(r"archive://[A-Za-z0-9_./\-]+[A-Za-z0-9_]")
OUTPUTS: dict[int, tuple[str, str]] = {}
"""Sensor log index -> (call id, exact output)."""


@tool
def read_sensor_log(index: int, ctx: ToolContext) -> str:
    """Read one sensor log.

    Args:
        index: Which log.
    """
    text = f"sensor log {index}: " + filler(2500, index) + f" marker M{index:04d}"
    OUTPUTS[index] = (ctx.call_id, text)
    return text


def config(window: int, *, max_turns: int = 400, **context: Any) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None, "max_turns": max_turns, "failure_budget": max_turns},
            "memory": {"enabled": False},
            "context": {
                "compaction": {"context_window": window, "reserve_tokens": 2000},
                **context,
            },
        }
    )


def done_of(events: list[EventBase]) -> DoneEvent:
    [done] = [e for e in events if isinstance(e, DoneEvent)]
    return done


def request_text(request: ModelRequest) -> str:
    return "\n".join(getattr(item, "text", "") for item in request.items)


# --------------------------------------------------------------------------- two recalls


def test_the_first_exchange_of_a_long_compacted_task_is_two_recalls_away() -> None:
    """The summarizer writes no address at all; the model still reaches the first
    exchange's exact output: one recall of the index page, one of the output."""
    OUTPUTS.clear()
    turns = 160
    recalled: list[str] = []

    def decide(request: ModelRequest) -> ModelResponse:
        decisions = len(requests)
        requests.append(request)
        if decisions < turns:
            return call("read_sensor_log", index=decisions + 1)
        last = request.items[-1] if request.items[-1].kind != "task_notes" else request.items[-2]
        if decisions == turns:  # find the page listing turn 1 in the checkpoint's index
            [checkpoint] = [i for i in request.items if isinstance(i, CheckpointItem)]
            page = next(
                ADDRESS.search(line).group(0)  # type: ignore[union-attr]
                for line in checkpoint.text.split("\n")
                if line.startswith("- t1-") or " t1 - " in line
            )
            return call("recall", address=page, limit=RECALL_MAX_CHARS)
        assert isinstance(last, ToolResultItem) and last.name == "recall"
        recalled.append(last.text)
        if decisions == turns + 1:  # the page: the first exchange's line has its address
            line = next(line for line in last.text.split("\n") if " t1 read_sensor_log(" in line)
            return call("recall", address=ADDRESS.findall(line)[-1])
        return reply("found it")

    requests: list[ModelRequest] = []
    summarizer = ScriptedModel(responder=valid_note_responder, name="no-address-writer")
    with Harness(
        config(12_000),
        model=ScriptedModel(responder=decide),
        compaction_model=summarizer,
        tools=[read_sensor_log],
    ) as h:
        events = list(h.run_stream("read every sensor log, then find the first one again"))
    done = done_of(events)
    assert done.status == "completed", done.termination_reason
    assert len(summarizer.requests) > 3  # compacted many times
    _, exact = OUTPUTS[1]
    assert len(recalled) == 2
    assert recalled[1].split("\n", 1)[1] == exact  # the second recall is the exact output
    for request in requests:
        checkpoints = [i for i in request.items if isinstance(i, CheckpointItem)]
        assert len(checkpoints) <= 1
        assert "## Earlier checkpoint" not in request_text(request)
        for checkpoint in checkpoints:  # the summarizer wrote no address; the harness did
            assert not ADDRESS.search(note_of(checkpoint))
        assert isinstance(request.items[0], InstructionItem)


def test_every_checkpoint_version_stays_archived_and_its_metadata_covers_the_union() -> None:
    history = build_history([TaskSpec(turns=[TurnSpec(notes_chars=200, result_chars=[1500])] * 20)])
    compactor = CheckpointCompactor(
        CompactionConfig(keep_recent_turns=2),
        PruningConfig(enabled=False),
        summarizer=ScriptedModel(responder=valid_note_responder),
        store=history.store,
    )
    versions: list[CheckpointItem] = []
    for _ in range(4):
        total = history.context.total_tokens()
        history.context.budget = Budget(context_window=total + 3000, reserve_tokens=4000)
        list(compactor.compact(history.context))
        [checkpoint] = [i for i in history.context.accumulated if isinstance(i, CheckpointItem)]
        versions.append(checkpoint)
        append_turns(history, [TurnSpec(notes_chars=200, result_chars=[1500])] * 8)
    for older, newer in itertools.pairwise(versions):
        assert newer.source.previous_checkpoint == older.id
        assert newer.source.items_folded > older.source.items_folded
        assert newer.source.rounds > older.source.rounds
        assert newer.source.first_turn == versions[0].source.first_turn
        assert newer.source.exchanges > older.source.exchanges
        assert history.store.archive_get(f"archive://task_0/{older.id}") == older.text
        assert older.id in newer.text.split("\n", 1)[0]  # the header names the old version
        assert "## Earlier checkpoint" not in newer.text


# --------------------------------------------------------------------------- the instruction


@settings(
    max_examples=examples(60),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    instruction_chars=st.sampled_from([40, 3000, 40_000]),
    steps=st.lists(
        st.tuples(
            st.lists(
                st.builds(
                    TurnSpec,
                    notes_chars=st.sampled_from([0, 300]),
                    result_chars=st.lists(
                        st.sampled_from([50, 2000, 20000]), min_size=1, max_size=2
                    ),
                    revision=st.booleans(),
                    error=st.booleans(),
                ),
                min_size=1,
                max_size=8,
            ),
            st.sampled_from([3000, 8000, 30000]),  # how far over the threshold
            st.sampled_from(["model", "none", "failing"]),
            st.booleans(),  # forced, as after a provider overflow
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_the_instruction_and_its_revisions_survive_any_number_of_compactions(
    instruction_chars: int, steps: list[tuple[list[TurnSpec], int, str, bool]]
) -> None:
    history = build_history([TaskSpec(instruction_chars=instruction_chars, turns=[TurnSpec()])])
    context, store = history.context, history.store
    instruction = context.accumulated[0]
    assert isinstance(instruction, InstructionItem)
    exact = {instruction.id: instruction.text}
    order = [instruction.id]

    def summarizer(kind: str) -> ScriptedModel | None:
        if kind == "model":
            return ScriptedModel(responder=valid_note_responder)
        if kind == "failing":
            return ScriptedModel(responder=lambda r: RuntimeError("down"))  # type: ignore[arg-type,return-value]
        return None

    for turns, over, kind, force in steps:
        known = {item.id for item in context.accumulated}
        append_turns(history, turns)
        for item in context.accumulated:
            if isinstance(item, RevisionItem) and item.id not in known:
                exact[item.id] = item.text
                order.append(item.id)
        total = context.total_tokens()
        context.budget = Budget(context_window=max(2500, total - over) + 2000, reserve_tokens=2000)
        compactor = CheckpointCompactor(
            CompactionConfig(keep_recent_turns=1, failure_backoff_turns=0),
            PruningConfig(trigger_tokens=0, min_reclaim_tokens=0),
            summarizer=summarizer(kind),
            store=store,
        )
        try:
            events = list(compactor.compact(context, force=force, reason="overflow"))
        except ContextBudgetError:
            event("budget error (named)")
        else:
            event(f"{len(events)} events")
        # every one of the operator's words is in context: verbatim, or as the
        # authoritative reference whose address holds them exactly
        present: list[str] = []
        for item in context.accumulated:
            if not isinstance(item, (InstructionItem, RevisionItem)):
                continue
            if item.id in exact:  # the very item, verbatim
                assert item.text == exact[item.id]
                present.append(item.id)
                continue
            # a replacement: the authoritative reference, whose address holds the words
            assert item.archive and "authoritative" in item.text
            archived = store.archive_get(item.archive)
            key = next(k for k in order if k not in present and exact[k] == archived)
            present.append(key)
            event("instruction as a reference")
        assert present == order  # nothing folded, nothing lost, in the order given


def test_an_oversized_instruction_reaches_the_model_as_an_authoritative_reference() -> None:
    instruction = "Sort every part exactly as listed: " + " ".join(
        f"part_{i:05d} -> tray_{i % 7}" for i in range(4000)
    )
    model = ScriptedModel([call("recall", address="archive://x/y"), reply("done")])
    store = MemoryRunStore()
    with Harness(config(32_000), model=model, store=store) as h:
        done = h.run(instruction)
    first = model.requests[0]
    [item] = [i for i in first.items if isinstance(i, InstructionItem)]
    assert item.archive and len(item.text) < len(instruction) // 4
    assert "authoritative" in item.text and item.archive in item.text
    assert item.text.split("\n", 1)[1].startswith(instruction[:500])  # its beginning
    assert store.archive_get(item.archive) == instruction  # exact in the archive
    assert store.tasks[done.task_id]["instruction"] == instruction  # and in the task record
    assert all(isinstance(r.items[0], InstructionItem) for r in model.requests)


# --------------------------------------------------------------------------- tasks


def test_a_later_task_carries_the_ended_tasks_prose_but_not_its_tool_traffic() -> None:
    OUTPUTS.clear()
    model = ScriptedModel(
        [
            *(call("read_sensor_log", index=i) for i in range(1, 6)),
            reply("First task done: logs 1-5 read, marker M0003 looked odd."),
            call("read_sensor_log", index=6),
            reply("Second task done."),
        ]
    )
    store = MemoryRunStore()
    with Harness(config(200_000), model=model, tools=[read_sensor_log], store=store) as h:
        first = list(h.run_stream("read logs 1 to 5"))
        second = list(h.run_stream("read log 6"))
    assert done_of(first).status == done_of(second).status == "completed"
    opening = model.requests[6]  # the second task's first decision
    kinds = [(i.kind, getattr(i, "text", "")[:20]) for i in opening.items]
    assert kinds[0] == ("instruction", "read logs 1 to 5")
    assert ("assistant", "First task done: log") in kinds
    assert not [i for i in opening.items if isinstance(i, ToolResultItem)]
    assert not [i for i in opening.items if isinstance(i, AssistantItem) and i.tool_calls]
    [checkpoint] = [i for i in opening.items if isinstance(i, CheckpointItem)]
    pages = "\n".join(store.archive_get(p.address) or "" for p in checkpoint.source.index)
    for index in range(1, 6):
        call_id, exact = OUTPUTS[index]
        address = f"archive://{done_of(first).task_id}/{call_id}"
        assert address in checkpoint.text or address in pages
        assert store.archive_get(address) == exact
    folds = [e for e in second if isinstance(e, CompactionEvent) and e.mode == "task_end"]
    assert len(folds) == 1 and folds[0].status == "completed"
    # the next task starts with a fresh capability snapshot: its tools are offered again
    assert [e.type for e in second][:3] == ["task_started", "tools_listed", "compaction"]


def test_a_report_the_harness_wrote_stays_for_the_next_task() -> None:
    model = ScriptedModel([call("read_sensor_log", index=1), call("read_sensor_log", index=2)])
    model2 = ScriptedModel([reply("ok")])
    with Harness(config(200_000), model=model, tools=[read_sensor_log]) as h:
        result = h.run("read two logs", max_turns=1)
        assert result.status == "max_turns"
        h.model = model2
        assert h.run("and now?").status == "completed"
    notices = [i for i in model2.requests[0].items if isinstance(i, NoticeItem)]
    assert len(notices) == 1 and notices[0].text.startswith(f"Task {result.task_id} report")
    assert "max_turns" in notices[0].text


# --------------------------------------------------------------------------- overflow


def overflowing(times: int, *, limit: int | None = None) -> ScriptedModel:
    """A model that reads logs, then rejects ``times`` requests in a row as too large."""
    seen: list[ModelRequest] = []
    state = {"rejected": 0}

    def decide(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        done = sum(1 for i in request.items if isinstance(i, ToolResultItem))
        if len(seen) <= 12:
            return call("read_sensor_log", index=len(seen))
        if state["rejected"] < times:
            state["rejected"] += 1
            exc = ContextOverflowError("maximum context length is 5632 tokens")
            if limit is not None:
                exc.limit_tokens = limit  # type: ignore[attr-defined]
            raise exc
        return reply(f"done ({done} results in view)")

    return ScriptedModel(responder=decide)


@pytest.mark.parametrize("times", [1, 2, 3])
def test_each_overflow_climbs_one_step_and_the_resent_request_is_smaller(times: int) -> None:
    model = overflowing(times)
    store = MemoryRunStore()
    with Harness(
        config(200_000),
        model=model,
        tools=[read_sensor_log],
        store=store,
        compaction_model=ScriptedModel(responder=valid_note_responder),
    ) as h:
        events = list(h.run_stream("read logs"))
        context = h.context
        assert done_of(events).status == "completed"
        # after the k-th overflow, the first compaction event is the k-th step of the ladder
        errors = [i for i, e in enumerate(events) if e.type == "model_error"]
        assert len(errors) == times
        steps = [
            next(e for e in events[at:] if isinstance(e, CompactionEvent)).mode for at in errors
        ]
        assert steps == ["overflow", "reference", "minimal_reference"][:times]
        # every resent request is smaller than the one the provider rejected
        sizes = [e.total_tokens for e in events if isinstance(e, PromptSnapshotEvent)]
        rejected = sizes[-1 - times :]
        assert rejected == sorted(rejected, reverse=True) and len(set(rejected)) == len(rejected)
        last = model.requests[-1]
        if times >= 2:  # references instead of bodies outside the newest exchange
            results = [i for i in last.items if isinstance(i, ToolResultItem)]
            assert results and all("recall(address=" in r.text for r in results[:-1])
            for result in results:
                if result.archive:
                    assert store.archive_get(result.archive) is not None
        if times == 3:  # minimal: the newest exchange too
            results = [i for i in last.items if isinstance(i, ToolResultItem)]
            assert all(len(r.text) < 300 for r in results)
        assert context.budget.context_window == 200_000  # no limit was stated


def test_a_fourth_overflow_is_terminal_with_the_numbers_and_a_stated_limit_is_the_budget() -> None:
    model = overflowing(10, limit=5632)
    with Harness(config(200_000), model=model, tools=[read_sensor_log]) as h:
        done = done_of(list(h.run_stream("read logs")))
        assert h.context.budget.context_window == 5632
        assert h.context.budget.reserve_tokens <= 5632 // 2  # room for the answer stays
    assert done.status == "failed"
    reason = done.termination_reason
    assert reason.startswith("ContextOverflowError") or reason.startswith("context budget")
    if reason.startswith("ContextOverflowError"):
        assert "rejected 4 requests" in reason and "stated limit 5632" in reason
        assert "input budget is" in reason  # the budget error's breakdown, with numbers


# --------------------------------------------------------------------------- search


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_search_archive_finds_an_exchange_by_tool_name_and_arguments(
    kind: str, tmp_path: Any
) -> None:
    store = MemoryRunStore() if kind == "memory" else SQLiteRunStore(tmp_path)
    model = ScriptedModel(
        [
            *(call("read_sensor_log", index=i) for i in (5, 7, 17, 70)),
            call("search_archive", query="read_sensor_log index 7"),
            call("search_archive", query="marker M0017"),
            reply("done"),
        ]
    )
    try:
        with Harness(config(200_000), model=model, tools=[read_sensor_log], store=store) as h:
            assert h.run("find log 7").status == "completed"
    finally:
        store.close()
    by_args = [i for i in model.requests[5].items if isinstance(i, ToolResultItem)][-1].text
    lines = [line for line in by_args.split("\n") if line.startswith("- ")]
    assert len(lines) == 1 and f"/{OUTPUTS[7][0]} (read_sensor_log)" in lines[0]
    by_text = [i for i in model.requests[6].items if isinstance(i, ToolResultItem)][-1].text
    assert f"/{OUTPUTS[17][0]}" in by_text and f"/{OUTPUTS[70][0]}" not in by_text
