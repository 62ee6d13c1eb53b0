"""Sub-agents: the ``delegate`` tool runs a child lane with a contract, narrowed tools and a
structured handoff (issue 19).

The parent and the child are scripted models (the child on its own ``subagent_model`` so
each script reads in order); the cache-sharing test runs the real OpenAI and Anthropic
adapters against the loopback wire server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.errors import ModelError
from harness.events import (
    DoneEvent,
    EventBase,
    HandoffEvent,
    LaneStartedEvent,
    ProgressEvent,
    PromptSnapshotEvent,
    SafetyCheckEvent,
    ToolResultEvent,
)
from harness.messages import ModelRequest, ModelResponse, ToolResultItem
from harness.providers import ScriptedModel, build_model, call, reply
from harness.runtime.delegation.delegate import HANDOFF_SCHEMA, Handoff, parse_answer
from harness.store import MemoryRunStore
from tests.conftest import BoxSafety, fake_robot, move_to_tool
from tests.dialects import DIALECTS, Dialect
from tests.fixtures.parts import FakeSkills
from tests.wire_server import Recorded, Reply, WireServer


@tool
def look(area: str) -> str:
    """Look at one area of the shelves.

    Args:
        area: Which shelf.
    """
    return f"{area}: " + (
        "a blue mug, ref mug_7, at (0.41, -0.12, 0.83)" if area == "top" else "nothing"
    )


@tool
def wipe(area: str) -> str:
    """Wipe an area.

    Args:
        area: Which shelf.
    """
    return f"wiped {area}"


FOUND = {
    "summary": "the blue mug is on the top shelf",
    "findings": [{"ref": "mug_7", "position": [0.41, -0.12, 0.83], "confidence": 0.9}],
    "verification": ["seen by look(top)"],
}


def config(**subagents: Any) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "run": {"store": None},
            "memory": {"enabled": False},
            "subagents": {"enabled": True, **subagents},
        }
    )


def answer(data: dict[str, Any] | None = None) -> ModelResponse:
    return reply(json.dumps(data if data is not None else FOUND))


def delegate(goal: str = "find the blue mug; report its ref and pose", **kw: Any) -> ModelResponse:
    kw.setdefault("tools", ["look"])
    return call("delegate", goal=goal, **kw)


def run(harness: Harness, instruction: str = "fetch the blue mug", **kw: Any) -> list[EventBase]:
    return list(harness.run_stream(instruction, **kw))


def done_of(events: list[EventBase]) -> DoneEvent:
    dones = [e for e in events if isinstance(e, DoneEvent)]
    assert len(dones) == 1 and events[-1] is dones[0], "one done, the parent's, last"
    return dones[0]


def handoff_of(events: list[EventBase]) -> Handoff:
    [event] = [e for e in events if isinstance(e, HandoffEvent)]
    return Handoff.model_validate(event.handoff)


def delegate_result(events: list[EventBase]) -> ToolResultEvent:
    [result] = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "delegate"]
    return result


def harness(child: ScriptedModel, parent: ScriptedModel, **kw: Any) -> Harness:
    cfg = kw.pop("cfg", None) or config()
    return Harness(cfg, model=parent, subagent_model=child, tools=[look, wipe], **kw)


# ====================================================================== the happy path


def test_the_parent_receives_only_the_handoff() -> None:
    child = ScriptedModel([call("look", area="bottom"), call("look", area="top"), answer()])
    parent = ScriptedModel([delegate(), reply("the mug is mug_7")])
    with harness(child, parent) as h:
        events = run(h)
        lane_id = next(e for e in events if isinstance(e, LaneStartedEvent)).task_id
    assert done_of(events).status == "completed"
    handoff = handoff_of(events)
    assert handoff.status == "completed" and handoff.findings == FOUND["findings"]
    assert handoff.lane == lane_id and handoff.turns == 3
    # the parent's next request: its own history plus the handoff, nothing of the trace
    after = parent.requests[1]
    assert all(item.task_id != lane_id for item in after.items)
    [result] = [i for i in after.items if isinstance(i, ToolResultItem)]
    assert result.name == "delegate" and not result.is_error
    assert json.loads(result.text)["findings"] == FOUND["findings"]
    assert "nothing" not in result.text  # the look that found nothing stays in the child
    assert len(result.text) <= h.config.subagents.handoff_max_chars
    # the child's first request: its goal and the contract, nothing of the parent's
    first = child.requests[0]
    assert [item.kind for item in first.items][:2] == ["instruction", "notice"]
    assert first.items[0].text == "find the blue mug; report its ref and pose"
    assert all(item.task_id == lane_id for item in first.items)
    # the child's events reached the parent's stream; the child's done did not
    lane_events = [e for e in events if e.task_id == lane_id]
    assert lane_events[0].type == "lane_started" and lane_events[-1].type == "handoff"
    assert not any(isinstance(e, DoneEvent) for e in lane_events)
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_the_parent_pays_for_the_child() -> None:
    child = ScriptedModel([call("look", area="top"), answer()])
    parent = ScriptedModel([delegate(), reply("done")])
    with harness(child, parent) as h:
        done = done_of(run(h))
    assert done.usage.requests == 4  # two parent calls, two child calls


def test_the_parent_can_recall_the_childs_evidence() -> None:
    child = ScriptedModel([call("look", area="top"), answer()])
    evidence: list[str] = []

    def recall_it(request: ModelRequest) -> ModelResponse:
        result = next(i for i in request.items if isinstance(i, ToolResultItem))
        evidence.extend(json.loads(result.text)["evidence"])
        return call("recall", address=evidence[0])

    parent = ScriptedModel([delegate(), recall_it, reply("done")])
    with harness(child, parent, store=MemoryRunStore()) as h:
        events = run(h)
    assert evidence and evidence[0].startswith("archive://lane_")
    recalled = [e for e in events if isinstance(e, ToolResultEvent) and e.name == "recall"]
    assert not recalled[0].is_error and "mug_7" in recalled[0].text


# ====================================================================== the shared prefix


@pytest.fixture(params=DIALECTS, ids=lambda d: d.name)
def dialect(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Dialect:
    chosen: Dialect = request.param
    chosen.prepare(monkeypatch)
    return chosen


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as wire:
        yield wire


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in body.get("tools") or []]


def _resident(dialect: Dialect, body: dict[str, Any]) -> str:
    """The Resident prefix exactly as it went over the wire."""
    if dialect.name == "anthropic":
        return json.dumps(body["system"], sort_keys=True)
    first = body["messages"][0]
    assert first["role"] in ("system", "developer")
    return json.dumps(first, sort_keys=True)


def test_child_requests_share_the_resident_prefix_byte_for_byte(
    dialect: Dialect, server: WireServer
) -> None:
    """Parent and child go over the real SDKs to the loopback server; the child's
    Resident blocks are the parent's, byte for byte (skill catalog and a loaded skill
    included), while its tools and history are its own."""
    child_turns = iter(["look", "answer"])

    def answer_for(request: Recorded) -> Reply:
        names = _tool_names(request.body)
        turns = dialect.turns(request.body)
        if "delegate" not in names:  # the child
            step = next(child_turns)
            if step == "look":
                return dialect.tools(("call_look", "look", {"area": "top"}))
            return dialect.text(json.dumps(FOUND))
        texts = "\n".join(t.text for t in turns)
        if "Skill careful_motion" not in texts and not any(
            "careful_motion" in str(c) for t in turns for c in t.calls
        ):
            return dialect.tools(("call_skill", "load_skill", {"name": "careful_motion"}))
        if not any(c[1] == "delegate" for t in turns for c in t.calls):
            args = {"goal": "find the blue mug", "tools": ["look"]}
            return dialect.tools(("call_delegate", "delegate", args))
        return dialect.text("the mug is mug_7")

    server.responder = answer_for
    model = build_model(dialect.config(server))
    with Harness(config(), model=model, tools=[look, wipe], skills=FakeSkills()) as h:
        events = run(h)
    assert done_of(events).status == "completed", [e.type for e in events]
    bodies = [r.body for r in server.requests]
    parents = [b for b in bodies if "delegate" in _tool_names(b)]
    children = [b for b in bodies if "delegate" not in _tool_names(b)]
    assert len(children) == 2 and len(parents) == 3
    # after the skill loaded, the parent's prefix is the child's, exactly
    assert _resident(dialect, parents[1]) == _resident(dialect, children[0])
    assert _resident(dialect, children[0]) == _resident(dialect, children[1])
    assert "careful_motion" in _resident(dialect, children[0])
    assert _tool_names(children[0]) == ["update_task_notes", "recall", "search_archive", "look"]
    assert handoff_of(events).findings == FOUND["findings"]


def test_a_child_shares_the_parents_resident_blocks_as_objects() -> None:
    child = ScriptedModel([answer()])
    parent = ScriptedModel([delegate(), reply("done")])
    with harness(child, parent, skills=FakeSkills()) as h:
        run(h)
    assert child.requests[0].system == parent.requests[0].system
    assert all(
        a is b for a, b in zip(child.requests[0].system, parent.requests[1].system, strict=True)
    )


# ====================================================================== narrowed tools


def test_an_unlisted_tool_is_unknown_to_the_child() -> None:
    child = ScriptedModel([call("wipe", area="top"), call("delegate", goal="x"), answer()])
    parent = ScriptedModel([delegate(tools=["lo*"]), reply("done")])
    with harness(child, parent) as h:
        events = run(h)
    lane_id = next(e for e in events if isinstance(e, LaneStartedEvent)).task_id
    refused = [e for e in events if isinstance(e, ToolResultEvent) and e.task_id == lane_id]
    assert [(e.name, e.error_kind, e.executed) for e in refused] == [
        ("wipe", "unknown_tool", False),
        ("delegate", "unknown_tool", False),
    ]
    offered = [t.name for t in child.requests[0].tools]
    assert offered == ["update_task_notes", "recall", "search_archive", "look"]


def test_a_pattern_that_matches_nothing_is_the_parents_error() -> None:
    parent = ScriptedModel([delegate(tools=["scan_*"]), reply("done")])
    with harness(ScriptedModel([]), parent) as h:
        events = run(h)
    result = delegate_result(events)
    assert result.error_kind == "invalid_arguments" and not result.executed
    assert "scan_*" in result.text and "look" in result.text
    assert not any(isinstance(e, LaneStartedEvent) for e in events)


def _robot_harness(child: ScriptedModel, parent: ScriptedModel, **subagents: Any) -> Any:
    driver = fake_robot()
    safety = BoxSafety()
    h = Harness(
        config(**subagents),
        model=parent,
        subagent_model=child,
        tools=[look],
        physical_tools=[move_to_tool(driver)],
        driver=driver,
        safety=safety,
    )
    return h, driver, safety


def test_physical_tools_are_withheld_from_children_by_default() -> None:
    child = ScriptedModel([call("move_to", x=0.1, y=0.0, z=0.2), answer()])
    parent = ScriptedModel([delegate(tools=["look", "move_to"]), reply("done")])
    h, driver, safety = _robot_harness(child, parent)
    with h:
        events = run(h)
    started = next(e for e in events if isinstance(e, LaneStartedEvent))
    assert "move_to" not in started.tools and "move_to" in started.withheld
    assert "move_to" not in [t.name for t in child.requests[0].tools]
    refused = next(e for e in events if isinstance(e, ToolResultEvent) and e.name == "move_to")
    assert refused.error_kind == "blocked" and not refused.executed
    assert "subagents.physical" in refused.text
    assert driver.executed == [] and safety.calls == 0
    assert handoff_of(events).withheld_tools.keys() == {"move_to"}


def test_allowed_physical_calls_pass_the_same_envelope() -> None:
    child = ScriptedModel(
        [call("move_to", x=0.9, y=0.0, z=0.2), call("move_to", x=0.1, y=0.1, z=0.2), answer()]
    )
    parent = ScriptedModel([delegate(tools=["move_to"]), reply("done")])
    h, driver, _ = _robot_harness(child, parent, physical=True)
    with h:
        events = run(h)
    checks = [e for e in events if isinstance(e, SafetyCheckEvent)]
    assert [c.outcome for c in checks] == ["clamp", "allow"]
    assert all(c.task_id.startswith("lane_") for c in checks)
    assert driver.executed == [
        ("move_to", {"x": 0.5, "y": 0.0, "z": 0.2}),
        ("move_to", {"x": 0.1, "y": 0.1, "z": 0.2}),
    ]
    changes = handoff_of(events).world_changes
    assert len([c for c in changes if c.startswith("recorded by the harness: move_to")]) == 2
    assert driver.stops >= 1  # the child's lane ends with the robot stopped, like any task


# ====================================================================== the contract


def test_a_mismatch_earns_one_repair_round() -> None:
    child = ScriptedModel([reply("the mug is on top"), answer()])
    parent = ScriptedModel([delegate(max_turns=1), reply("done")])
    with harness(child, parent) as h:
        events = run(h)
    handoff = handoff_of(events)
    assert handoff.status == "completed" and handoff.turns == 2  # the repair is extra
    repair = child.requests[1].items[-1]
    assert repair.kind == "notice" and "does not match the required JSON Schema" in repair.text
    assert any(isinstance(e, ProgressEvent) and "repair round" in e.text for e in events)


def test_a_second_mismatch_fails_with_the_validation_error() -> None:
    child = ScriptedModel([reply("not json"), answer({"summary": 3, "findings": []})])
    parent = ScriptedModel([delegate(), reply("done")])
    with harness(child, parent) as h:
        events = run(h)
    assert done_of(events).status == "completed"  # the parent's task goes on
    handoff = handoff_of(events)
    assert handoff.status == "failed" and "summary: 3 is not of type 'string'" in handoff.error
    result = delegate_result(events)
    assert result.is_error and result.error_kind == "subagent_failed"


def test_a_custom_output_schema_is_the_contract() -> None:
    schema = {
        "type": "object",
        "properties": {"ref": {"type": "string"}, "sure": {"type": "number"}},
        "required": ["ref", "sure"],
    }
    child = ScriptedModel([answer(FOUND), answer({"ref": "mug_7", "sure": 0.8})])
    parent = ScriptedModel([delegate(output_schema=schema), reply("done")])
    with harness(child, parent) as h:
        events = run(h)
    handoff = handoff_of(events)
    assert handoff.status == "completed" and handoff.output == {"ref": "mug_7", "sure": 0.8}
    started = next(e for e in events if isinstance(e, LaneStartedEvent))
    assert started.output_schema == schema
    assert '"sure"' in child.requests[0].items[1].text  # the schema is in the contract


def test_an_invalid_output_schema_is_refused_before_anything_runs() -> None:
    parent = ScriptedModel([delegate(output_schema={"type": "banana"}), reply("done")])
    with harness(ScriptedModel([]), parent) as h:
        events = run(h)
    result = delegate_result(events)
    assert result.error_kind == "invalid_arguments" and "output_schema" in result.text


def test_a_child_that_reports_failure_is_not_completed() -> None:
    child = ScriptedModel(
        [answer({"status": "failed", "summary": "no mug", "findings": [], "unresolved": ["x"]})]
    )
    parent = ScriptedModel([delegate(), reply("done")])
    with harness(child, parent) as h:
        handoff = handoff_of(run(h))
    assert handoff.status == "failed" and handoff.unresolved == ["x"]


# ====================================================================== every failure status


def test_a_provider_error_in_the_child_is_contained() -> None:
    child = ScriptedModel([call("look", area="top"), ModelError("backend down", status_code=500)])
    parent = ScriptedModel([delegate(), reply("I will look myself")])
    with harness(child, parent) as h:
        events = run(h)
    assert done_of(events).status == "completed"
    handoff = handoff_of(events)
    assert handoff.status == "provider_error" and "backend down" in handoff.error
    assert delegate_result(events).error_kind == "subagent_provider_error"
    assert handoff.evidence  # what it had found is still cited


def test_the_turn_budget_ends_the_child_budget_exhausted() -> None:
    child = ScriptedModel([call("look", area="a"), call("look", area="b")])
    parent = ScriptedModel([delegate(max_turns=2), reply("done")])
    with harness(child, parent) as h:
        events = run(h)
    handoff = handoff_of(events)
    assert handoff.status == "budget_exhausted" and "max_turns=2" in handoff.error
    assert child.remaining == 0


def test_the_token_budget_ends_the_child_budget_exhausted() -> None:
    child = ScriptedModel([call("look", area="a"), call("look", area="b")])
    parent = ScriptedModel([delegate(max_tokens=10), reply("done")])
    with harness(child, parent) as h:
        events = run(h)
    handoff = handoff_of(events)
    assert handoff.status == "budget_exhausted" and "max_tokens=10" in handoff.error
    assert len(child.requests) == 1


def test_the_configured_budgets_cap_what_a_call_asks_for() -> None:
    child = ScriptedModel([call("look", area=str(i)) for i in range(5)])
    parent = ScriptedModel([delegate(max_turns=50), reply("done")])
    with harness(child, parent, cfg=config(max_turns=3)) as h:
        events = run(h)
    assert next(e for e in events if isinstance(e, LaneStartedEvent)).max_turns == 3
    assert handoff_of(events).status == "budget_exhausted" and len(child.requests) == 3


def test_a_failing_part_in_the_child_is_contained() -> None:
    observations = iter([True])

    class FlakyCamera:
        def observe(self) -> Any:
            if next(observations, False):
                return fake_robot().observe()
            raise RuntimeError("camera unplugged")

    child = ScriptedModel([answer()])
    parent = ScriptedModel([delegate(), reply("done")])
    with harness(child, parent, observation_provider=FlakyCamera()) as h:
        events = list(h.run_stream("fetch"))
    handoff = handoff_of(events)
    assert handoff.status == "failed" and "camera unplugged" in handoff.error
    assert done_of(events).status == "failed"  # the parent's own next observation fails too
    assert "observation provider failed" in done_of(events).termination_reason


def test_a_child_refuses_to_start_without_a_known_window() -> None:
    unknown = ScriptedModel([answer()], name="mystery-model", context_window=None)
    parent = ScriptedModel([delegate(), reply("done")])
    with harness(unknown, parent) as h:
        events = run(h)
    assert unknown.requests == []
    result = delegate_result(events)
    assert result.error_kind == "subagent_failed"
    assert "context window" in result.text and "subagents.model.context_window" in result.text
    assert not any(isinstance(e, LaneStartedEvent) for e in events)
    assert done_of(events).status == "completed"


def test_cancel_from_the_parent_interrupts_the_child() -> None:
    stop = threading.Event()
    in_child = threading.Event()

    def slow_look(request: ModelRequest) -> ModelResponse:
        in_child.set()
        # The operator stops while the child's model call is in flight: from here, not on a
        # timer started with the lane (a busy machine fired it before the child's call).
        threading.Timer(0.05, stop.set).start()
        stop.wait(5)
        return call("look", area="top")

    child = ScriptedModel([slow_look, answer()])
    parent = ScriptedModel([delegate(), reply("never")])
    driver = fake_robot()
    with Harness(config(), model=parent, subagent_model=child, tools=[look], driver=driver) as h:
        events: list[EventBase] = []
        for event in h.run_stream("fetch", should_cancel=stop.is_set):
            events.append(event)
    assert done_of(events).status == "cancelled"
    handoff = handoff_of(events)
    assert handoff.status == "interrupted"
    result = delegate_result(events)
    assert result.error_kind == "subagent_interrupted"
    assert len(parent.requests) == 1 and driver.stops >= 1
    assert in_child.is_set()


def test_operator_revisions_reach_the_child_and_the_parent() -> None:
    revisions = iter(["the mug is green, not blue"])
    seen: list[list[str]] = []

    def child_answer(request: ModelRequest) -> ModelResponse:
        seen.append([i.kind for i in request.items])
        return answer()

    child = ScriptedModel([call("look", area="top"), child_answer])
    parent = ScriptedModel([delegate(), reply("done")])
    with harness(child, parent) as h:
        events = run(h, poll_replan=lambda: next(revisions, None))
    assert "instruction_revision" in seen[0]
    replans = [e for e in events if e.type == "replan"]
    assert [r.task_id[:5] for r in replans] == ["lane_", "task_"]
    assert any(i.kind == "instruction_revision" for i in parent.requests[1].items)


# ====================================================================== the Python API


def test_harness_delegate_runs_a_child_directly() -> None:
    child = ScriptedModel([call("look", area="top"), answer()])
    store = MemoryRunStore()
    seen: list[EventBase] = []
    with Harness(
        config(enabled=False),
        model=ScriptedModel([]),
        subagent_model=child,
        tools=[look],
        store=store,
    ) as h:
        assert "delegate" not in h.tools
        handoff = h.delegate("find the blue mug", tools=["look"], on_event=seen.append)
        assert not h.busy
        with pytest.raises(ValueError, match="no tool matches"):
            h.delegate("x", tools=["nope"])
    assert handoff.ok and handoff.findings == FOUND["findings"]
    assert store.tasks[handoff.lane]["lane"] == handoff.lane
    assert store.tasks[handoff.lane]["parent"] is None
    assert seen[0].type == "lane_started" and seen[-1].type == "handoff"


def test_the_delegate_tool_is_offered_only_when_enabled() -> None:
    with Harness(config(enabled=False), model=ScriptedModel([])) as h:
        assert "delegate" not in h.tools
    with Harness(config(), model=ScriptedModel([])) as h:
        assert "delegate" in h.tools


# ====================================================================== answers and handoffs


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        (json.dumps(FOUND), True),
        ("```json\n" + json.dumps(FOUND) + "\n```", True),
        ("Here it is: " + json.dumps(FOUND) + " -- done", True),
        ("[1, 2]", False),
        ("", False),
        (json.dumps({"summary": "x"}), False),
        (json.dumps({**FOUND, "extra": 1}), False),
    ],
)
def test_parse_answer(text: str, ok: bool) -> None:
    value, error = parse_answer(text, HANDOFF_SCHEMA)
    assert (value is not None) == ok and bool(error) != ok


def test_a_bounded_handoff_keeps_status_and_evidence() -> None:
    handoff = Handoff(
        status="completed",
        summary="s" * 5000,
        findings=[f"finding {i} " + "x" * 300 for i in range(200)],
        evidence=[f"archive://lane_1/call_{i}" for i in range(3)],
        lane="lane_1",
    )
    for limit in (500, 1000, 4000):
        text = handoff.bounded(limit, archive="archive://lane_1/handoff")
        assert len(text) <= limit
        data = json.loads(text)
        assert data["status"] == "completed" and data["evidence"] == handoff.evidence
        assert data["full"] == "archive://lane_1/handoff"


def test_harness_check_reports_the_sub_agents_model() -> None:
    from harness.assembly.checks import check_subagents

    known = ScriptedModel([], name="child", context_window=32_000)
    with Harness(config(), model=ScriptedModel([]), subagent_model=known) as h:
        [row] = list(check_subagents(h))
    assert row.status == "ok" and "window 32000" in row.detail
    unknown = ScriptedModel([], name="mystery-model", context_window=None)
    with Harness(config(physical=True), model=ScriptedModel([]), subagent_model=unknown) as h:
        rows = list(check_subagents(h))
    assert [r.status for r in rows] == ["fail", "warn"]
    assert "subagents.model.context_window" in rows[0].detail
    with Harness(config(enabled=False), model=ScriptedModel([])) as h:
        assert list(check_subagents(h)) == []


def test_a_spec_string_names_the_sub_agents_model() -> None:
    from harness.assembly.build import subagent_model_config
    from harness.errors import ConfigError

    cfg = config(model="scripted:cheap")
    chosen = subagent_model_config(cfg)
    assert chosen is not None and (chosen.provider, chosen.name) == ("scripted", "cheap")
    assert subagent_model_config(config()) is None
    with pytest.raises(ConfigError, match=r"subagents\.model"):
        subagent_model_config(config(model="nosuch:model"))


def test_a_custom_schema_may_shape_the_standard_fields_freely() -> None:
    schema = {"type": "object", "properties": {"findings": {"type": "string"}}}
    odd = {"findings": "one mug", "evidence": "archive://nowhere", "decisions": 3}
    child = ScriptedModel([answer(odd)])
    parent = ScriptedModel([delegate(output_schema=schema), reply("done")])
    with harness(child, parent) as h:
        handoff = handoff_of(run(h))
    assert handoff.status == "completed" and handoff.output == odd
    assert handoff.findings == ["one mug"] and handoff.decisions == ["3"]
    assert handoff.evidence == []  # not in the archive: dropped, and said so
    assert any("archive://nowhere" in u for u in handoff.unresolved)


def test_closing_the_parents_stream_stops_the_child() -> None:
    looks: list[str] = []

    def slow(request: ModelRequest) -> ModelResponse:
        looks.append("asked")
        return call("look", area=f"shelf {len(looks)}")

    child = ScriptedModel(responder=slow)
    parent = ScriptedModel([delegate(max_turns=50), reply("never")])
    with harness(child, parent, cfg=config(max_turns=50)) as h:
        stream = h.run_stream("fetch")
        for event in stream:
            if event.type == "tool_result" and event.task_id.startswith("lane_"):
                break  # the consumer stops reading while the child works
        stream.close()
        asked = len(looks)
        assert not h.busy
    time.sleep(0.3)
    assert len(looks) <= asked + 1  # the child saw the cancel at its next check


def test_a_child_on_a_model_without_vision_is_not_charged_for_frames() -> None:
    """Whether frames count against the budget is the lane's own model's property: a child
    on a text-only ``subagent_model`` under a parent that sees images pays no image tokens,
    and the parent still does (this read the session's model for every lane)."""
    child = ScriptedModel([call("look", area="shelf"), answer()])
    child.vision = False  # type: ignore[attr-defined]
    parent = ScriptedModel([delegate(), reply("done")])
    h, _driver, _safety = _robot_harness(child, parent)
    with h:
        events = run(h)
    assert done_of(events).status == "completed"
    snapshots = [e for e in events if isinstance(e, PromptSnapshotEvent)]
    lanes = {e.task_id for e in events if isinstance(e, LaneStartedEvent)}
    child_images = [e.sections.get("images", 0) for e in snapshots if e.task_id in lanes]
    parent_images = [e.sections.get("images", 0) for e in snapshots if e.task_id not in lanes]
    assert child_images and parent_images
    assert max(parent_images) > 0, "the parent's requests carry the camera frame"
    assert child_images == [0] * len(child_images)
