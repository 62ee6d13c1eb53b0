"""The turn loop: order of steps, one tool per turn, exactly one done, limits, replan."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.errors import RateLimitError
from harness.events import DoneEvent, EventBase, parse_event
from harness.messages import (
    AssistantItem,
    ModelResponse,
    RevisionItem,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
)
from harness.providers import ScriptedModel, call, reply
from tests.conftest import BoxSafety, RecordingScene, fake_robot, move_to_tool, when_set


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return f"echo: {text}"


@tool
def explode() -> str:
    """Always raises."""
    raise ValueError("boom")


def dones(events: list[EventBase]) -> list[DoneEvent]:
    return [e for e in events if isinstance(e, DoneEvent)]


def run_all(h: Harness, instruction: str = "do it", **kw: Any) -> list[EventBase]:
    return list(h.run_stream(instruction, **kw))


# --------------------------------------------------------------------------- happy path


def test_completes_with_report_and_exactly_one_done(config: HarnessConfig) -> None:
    model = ScriptedModel([call("echo", text="hi"), reply("all done")])
    with Harness(config, model=model, tools=[echo]) as h:
        events = run_all(h)
    done = dones(events)
    assert len(done) == 1 and events[-1] is done[0]
    assert done[0].status == "completed"
    assert done[0].report == "all done"
    assert done[0].turns == 2
    assert done[0].usage.requests == 2
    types = [e.type for e in events]
    assert types[:2] == ["task_started", "tools_listed"]
    assert types.index("tool_call") < types.index("tool_result")
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    model.assert_consumed()


def test_every_event_is_one_json_line_that_parses_back(config: HarnessConfig) -> None:
    model = ScriptedModel([call("echo", text="a\nb"), reply("ok")], stream_text=True)
    with Harness(config, model=model, tools=[echo]) as h:
        events = run_all(h)
    for event in events:
        line = event.model_dump_json()
        assert "\n" not in line
        assert parse_event(line) == event
        assert json.loads(line)["type"] == event.type


def test_refresh_steps_run_in_specified_order_before_each_model_call(
    config: HarnessConfig, log: list[str]
) -> None:
    class LoggingCompactor:
        def compact(self, context: Any, *, force: bool = False, reason: str = "") -> Iterator[Any]:
            snapshot = [i for i in context.accumulated if isinstance(i, TaskNotesItem)]
            log.append(f"compact(notes={len(snapshot)})")
            yield from ()

    def responder(request: Any) -> ModelResponse:
        log.append("model")
        return reply("done") if log.count("model") > 1 else call("echo", text="x")

    driver = fake_robot(log)
    h = Harness(
        config,
        model=ScriptedModel(responder=responder),
        tools=[echo],
        driver=driver,
        scene=RecordingScene(log),
        compactor=LoggingCompactor(),
    )
    with h:
        run_all(h)
    first = log.index("model")
    # notes snapshot appended first (visible to the compactor), then observe, scene, compact
    assert log[:first] == ["observe", "scene", "compact(notes=1)"]
    second = log.index("model", first + 1)
    assert log[first + 1 : second] == ["observe", "scene", "compact(notes=2)"]


# --------------------------------------------------------------------------- one tool per turn


def test_extra_tool_calls_are_answered_not_executed(config: HarnessConfig) -> None:
    executed: list[str] = []

    @tool
    def mark(label: str) -> str:
        """Record a label."""
        executed.append(label)
        return label

    calls = [ToolCall(id=f"c{i}", name="mark", arguments={"label": str(i)}) for i in range(3)]
    model = ScriptedModel([ModelResponse(text="three at once", tool_calls=calls), reply("ok")])
    with Harness(config, model=model, tools=[mark]) as h:
        events = run_all(h)
    assert executed == ["0"]
    results = [e for e in events if e.type == "tool_result"]
    assert [r.call_id for r in results] == ["c0", "c1", "c2"]
    assert [r.executed for r in results] == [True, False, False]
    assert all(r.error_kind == "not_executed" for r in results[1:])
    # every call id is answered in the history the model sees next
    second = model.requests[1]
    answered = {i.call_id for i in second.items if isinstance(i, ToolResultItem)}
    assert answered == {"c0", "c1", "c2"}
    assert any(e.type == "progress" and e.text == "three at once" for e in events)


# --------------------------------------------------------------------------- errors become results


def test_bad_arguments_unknown_tool_and_exceptions_become_error_results(
    config: HarnessConfig,
) -> None:
    model = ScriptedModel(
        [
            call("echo", text=5),
            call("ecko", text="x"),
            call("explode"),
            ModelResponse(tool_calls=[ToolCall(id="bad", name="echo", raw_arguments="{not json")]),
            reply("survived"),
        ]
    )
    with Harness(config, model=model, tools=[echo, explode]) as h:
        events = run_all(h)
    results = [e for e in events if e.type == "tool_result"]
    assert [r.error_kind for r in results] == [
        "invalid_arguments",
        "unknown_tool",
        "exception",
        "invalid_arguments",
    ]
    assert "did you mean echo" in results[1].text
    assert "ValueError: boom" in results[2].text
    assert dones(events)[0].status == "completed"


def test_model_cannot_call_evaluate_run(config: HarnessConfig) -> None:
    model = ScriptedModel([call("evaluate_run"), reply("ok")])
    with Harness(config, model=model) as h:
        events = run_all(h)
    result = next(e for e in events if e.type == "tool_result")
    assert result.error_kind == "refused" and not result.executed
    assert "evaluate_run" not in next(e for e in events if e.type == "tools_listed").tools


# --------------------------------------------------------------------------- termination


def test_max_turns_ends_with_one_done(config: HarnessConfig) -> None:
    model = ScriptedModel(responder=lambda r: call("echo", text="again"))
    with Harness(config, model=model, tools=[echo]) as h:
        events = run_all(h, max_turns=3)
    done = dones(events)
    assert len(done) == 1 and done[0].status == "max_turns" and done[0].turns == 3
    assert len(model.requests) == 3


def test_failure_budget_counts_consecutive_failed_turns(config: HarnessConfig) -> None:
    config.run.failure_budget = 3
    script = [
        call("explode"),
        call("explode"),
        call("echo", text="ok"),
        call("explode"),
        call("explode"),
        call("explode"),
        call("echo", text="never"),
    ]
    model = ScriptedModel(script)
    with Harness(config, model=model, tools=[echo, explode]) as h:
        events = run_all(h)
    done = dones(events)[0]
    assert done.status == "failure_budget"
    assert done.turns == 6  # the success at turn 3 reset the count
    assert model.remaining == 1


def test_model_error_ends_task_with_named_reason(config: HarnessConfig) -> None:
    model = ScriptedModel([call("echo", text="a"), RateLimitError("slow down", status_code=429)])
    with Harness(config, model=model, tools=[echo]) as h:
        events = run_all(h)
        errors = [e for e in events if e.type == "model_error"]
        assert errors and errors[0].kind == "rate_limit"
        done = dones(events)
        assert len(done) == 1 and done[0].status == "failed"
        assert "rate_limit" in done[0].termination_reason
        # the session survives: a new task runs
        h.model = ScriptedModel([reply("fine")])
        assert h.run("again").status == "completed"


@pytest.mark.parametrize("where", ["observe", "scene"])
def test_observation_or_scene_exception_ends_with_one_done(
    config: HarnessConfig, log: list[str], where: str
) -> None:
    driver = fake_robot(log)
    if where == "observe":

        def broken() -> Any:
            raise OSError("camera unplugged")

        driver.observe = broken  # type: ignore[method-assign]
    scene = RecordingScene(log, fail=where == "scene")
    with Harness(config, model=ScriptedModel([reply("x")]), driver=driver, scene=scene) as h:
        events = run_all(h)
    done = dones(events)
    assert len(done) == 1 and done[0].status == "failed"
    expected = "camera unplugged" if where == "observe" else "scene graph exploded"
    assert expected in done[0].termination_reason
    assert driver.stops >= 1  # the robot is left stopped


def test_harness_bug_in_a_component_still_ends_with_one_done(config: HarnessConfig) -> None:
    class BrokenCompactor:
        def compact(self, context: Any, *, force: bool = False, reason: str = "") -> Iterator[Any]:
            raise KeyError("bug")
            yield

    h = Harness(config, model=ScriptedModel([reply("x")]), compactor=BrokenCompactor())
    with h:
        events = run_all(h)
        assert len(dones(events)) == 1 and dones(events)[0].status == "failed"
        assert not h.busy


# --------------------------------------------------------------------------- cancellation


def test_cancel_before_first_turn(config: HarnessConfig) -> None:
    model = ScriptedModel([reply("never")])
    with Harness(config, model=model) as h:
        events = run_all(h, should_cancel=lambda: True)
    done = dones(events)
    assert len(done) == 1 and done[0].status == "cancelled" and done[0].turns == 0
    assert model.requests == []


def test_cancel_before_model_call_after_refresh(config: HarnessConfig, log: list[str]) -> None:
    driver = fake_robot(log)
    checks = iter([False, True])  # passes the limit check, trips before the model call
    model = ScriptedModel([reply("never")])
    with Harness(config, model=model, driver=driver) as h:
        events = run_all(h, should_cancel=lambda: next(checks, True))
    done = dones(events)[0]
    assert done.status == "cancelled" and "before the model call" in done.termination_reason
    assert model.requests == [] and "observe" in log


def test_cancel_before_tool_execution_answers_the_call(config: HarnessConfig) -> None:
    executed: list[str] = []

    @tool
    def act() -> str:
        """Do something."""
        executed.append("act")
        return "acted"

    cancel = threading.Event()

    def responder(request: Any) -> ModelResponse:
        cancel.set()  # the operator hits stop while the model is thinking
        return call("act")

    model = ScriptedModel(responder=responder)
    with Harness(config, model=model, tools=[act]) as h:
        events = run_all(h, should_cancel=cancel.is_set)
    assert executed == []
    done = dones(events)[0]
    assert done.status == "cancelled"
    result = next(e for e in events if e.type == "tool_result")
    assert result.error_kind == "cancelled" and not result.executed


def test_cancel_during_physical_tool_stops_robot(config: HarnessConfig, log: list[str]) -> None:
    driver = fake_robot(log, motion_s=30.0)
    cancel = threading.Event()
    model = ScriptedModel([call("move_to", x=0.1, y=0.1, z=0.1), reply("never")])
    with Harness(
        config,
        model=model,
        driver=driver,
        safety=BoxSafety(),
        physical_tools=[move_to_tool(driver)],
    ) as h:
        when_set(driver.moving, cancel.set)  # during the motion, however busy the machine
        events = run_all(h, should_cancel=cancel.is_set)
    done = dones(events)[0]
    assert done.status == "cancelled"
    assert driver.stops >= 1
    result = next(e for e in events if e.type == "tool_result")
    assert result.error_kind == "cancelled"
    assert done.time - events[0].time < 10  # did not wait for the 30 s motion


def test_early_close_leaves_harness_usable(config: HarnessConfig, log: list[str]) -> None:
    driver = fake_robot(log)
    model = ScriptedModel(responder=lambda r: call("echo", text="x"))
    h = Harness(config, model=model, tools=[echo], driver=driver)
    stream = h.run_stream("loop forever")
    for event in stream:
        if event.type == "tool_result":
            break
    stream.close()
    assert not h.busy and driver.stops == 1
    cancelled = [t for t in h.store.tasks.values() if t["status"] == "cancelled"]  # type: ignore[attr-defined]
    assert cancelled and "closed by its consumer" in cancelled[0]["reason"]
    h.model = ScriptedModel([reply("second task")])
    assert h.run("next").report == "second task"
    h.close()


def test_unstarted_stream_releases_the_slot_when_closed(config: HarnessConfig) -> None:
    h = Harness(config, model=ScriptedModel([reply("a"), reply("b")]))
    stream = h.run_stream("first")
    stream.close()
    assert h.run("second").status == "completed"


# --------------------------------------------------------------------------- replan


def test_replan_reaches_the_next_request(config: HarnessConfig) -> None:
    inbox = ["", "put it in the bin instead"]
    model = ScriptedModel([call("echo", text="1"), call("echo", text="2"), reply("ok")])
    with Harness(config, model=model, tools=[echo]) as h:
        events = run_all(h, poll_replan=lambda: inbox.pop(0) if inbox else None)
    replans = [e for e in events if e.type == "replan"]
    assert [r.revision for r in replans] == ["put it in the bin instead"]
    third = model.requests[2]
    revisions = [i for i in third.items if isinstance(i, RevisionItem)]
    assert revisions and revisions[0].text == "put it in the bin instead"
    assert not any(isinstance(i, RevisionItem) for i in model.requests[1].items)


# --------------------------------------------------------------------------- hooks and safety


def test_physical_tool_without_safety_envelope_is_blocked(
    config: HarnessConfig, log: list[str]
) -> None:
    driver = fake_robot(log)
    model = ScriptedModel([call("move_to", x=0.1, y=0.0, z=0.1), reply("ok")])
    with Harness(config, model=model, driver=driver, physical_tools=[move_to_tool(driver)]) as h:
        events = run_all(h)
    assert driver.executed == []
    check = next(e for e in events if e.type == "safety_check")
    assert check.outcome == "block"
    assert next(e for e in events if e.type == "tool_result").error_kind == "blocked"


def test_safety_clamp_rewrites_arguments_and_records_both(
    config: HarnessConfig, log: list[str]
) -> None:
    driver = fake_robot(log)
    model = ScriptedModel([call("move_to", x=2.0, y=0.0, z=0.1), reply("ok")])
    with Harness(
        config,
        model=model,
        driver=driver,
        safety=BoxSafety(),
        physical_tools=[move_to_tool(driver)],
    ) as h:
        events = run_all(h)
    assert driver.executed == [("move_to", {"x": 0.5, "y": 0.0, "z": 0.1})]
    check = next(e for e in events if e.type == "safety_check")
    assert check.outcome == "clamp"
    assert check.requested["x"] == 2.0 and check.applied["x"] == 0.5
    tool_call = next(e for e in events if e.type == "tool_call")
    assert tool_call.arguments["x"] == 0.5


def test_safety_fails_closed_without_readings(config: HarnessConfig, log: list[str]) -> None:
    driver = fake_robot(log)
    model = ScriptedModel([call("move_to", x=0.1, y=0.0, z=0.1), reply("ok")])
    # no observation provider -> no readings -> blocked
    with Harness(
        config, model=model, driver=None, safety=BoxSafety(), physical_tools=[move_to_tool(driver)]
    ) as h:
        events = run_all(h)
    assert driver.executed == []
    assert next(e for e in events if e.type == "safety_check").outcome == "block"


def test_pre_hooks_rewrite_and_block(config: HarnessConfig) -> None:
    from harness.protocols import HookDecision

    def shout(call: ToolCall, tool: Any, arguments: Any) -> HookDecision | None:
        if arguments.get("text") == "secret":
            return HookDecision("block", reason="no secrets")
        return HookDecision("rewrite", {"text": arguments["text"].upper()}, "louder")

    model = ScriptedModel([call("echo", text="hi"), call("echo", text="secret"), reply("ok")])
    with Harness(config, model=model, tools=[echo], hooks=[shout]) as h:
        events = run_all(h)
    results = [e for e in events if e.type == "tool_result"]
    assert results[0].text == "echo: HI"
    assert results[1].error_kind == "blocked" and "no secrets" in results[1].text
    decisions = [e for e in events if e.type == "hook_decision"]
    assert [d.action for d in decisions] == ["rewrite", "block"]


def test_evaluate_run_after_required_tool_with_segments(
    config: HarnessConfig, log: list[str]
) -> None:
    from harness.messages import Verdict

    driver = fake_robot(log)
    verdicts = iter(["process", "process", "success"])

    class Evaluator:
        def evaluate(self, **kw: Any) -> Verdict:
            return Verdict(status=next(verdicts), evidence=f"segment {kw['segment']}")

    config.evaluation.required_tools = ["move_to"]
    config.evaluation.segment_tools = ["move_to"]
    scene = RecordingScene(log)
    model = ScriptedModel([call("move_to", x=0.1, y=0.0, z=0.1), reply("ok")])
    with Harness(
        config,
        model=model,
        driver=driver,
        safety=BoxSafety(),
        scene=scene,
        evaluator=Evaluator(),
        physical_tools=[move_to_tool(driver)],
    ) as h:
        events = run_all(h)
    evaluations = [e for e in events if e.type == "evaluation"]
    assert [e.segment for e in evaluations] == [1, 2, 3]
    assert len(driver.executed) == 3
    result = next(e for e in events if e.type == "tool_result")
    assert result.evaluation is not None and result.evaluation.status == "success"
    assert scene.verdicts == [("move_to", "success")]
    assert "evaluation: success" in model.requests[1].items[-2].text  # type: ignore[union-attr]


def test_evaluator_failure_counts_against_failure_budget(
    config: HarnessConfig, log: list[str]
) -> None:
    from harness.messages import Verdict

    driver = fake_robot(log)

    class Never:
        def evaluate(self, **kw: Any) -> Verdict:
            return Verdict(status="failure", evidence="cube not in gripper")

    config.evaluation.required_tools = ["move_to"]
    config.run.failure_budget = 2
    model = ScriptedModel(responder=lambda r: call("move_to", x=0.1, y=0.0, z=0.1))
    with Harness(
        config,
        model=model,
        driver=driver,
        safety=BoxSafety(),
        evaluator=Never(),
        physical_tools=[move_to_tool(driver)],
    ) as h:
        events = run_all(h)
    assert dones(events)[0].status == "failure_budget"


def test_tool_timeout_becomes_error_result(config: HarnessConfig) -> None:
    from harness.tools import Tool, ToolContext

    def slow(ctx: ToolContext) -> str:
        ctx.wait(10)
        return "late"

    slow_tool = Tool("slow", "Takes forever.", slow, timeout_s=0.1)
    model = ScriptedModel([call("slow"), reply("ok")])
    with Harness(config, model=model, tools=[slow_tool]) as h:
        events = run_all(h)
    result = next(e for e in events if e.type == "tool_result")
    assert result.error_kind == "timeout"
    assert dones(events)[0].status == "completed"


def test_tool_progress_is_streamed_as_events(config: HarnessConfig) -> None:
    from harness.tools import ToolContext

    @tool
    def long_job(ctx: ToolContext) -> str:
        """Reports progress."""
        for step in range(3):
            ctx.report_progress(f"step {step}")
        return "finished"

    model = ScriptedModel([call("long_job"), reply("ok")])
    with Harness(config, model=model, tools=[long_job]) as h:
        events = run_all(h)
    progress = [e.text for e in events if e.type == "progress" and e.source == "tool"]
    assert progress == ["step 0", "step 1", "step 2"]
    assert all(e.turn == 1 for e in events if e.type == "progress")


# --------------------------------------------------------------------------- history


def test_later_task_continues_accumulated_history(config: HarnessConfig) -> None:
    model = ScriptedModel([call("echo", text="first"), reply("one"), reply("two")])
    with Harness(config, model=model, tools=[echo]) as h:
        h.run("task one")
        h.run("task two")
    last = model.requests[-1]
    texts = [getattr(i, "text", "") for i in last.items]
    assert "task one" in texts and "task two" in texts
    assert any(isinstance(i, AssistantItem) and i.text == "one" for i in last.items)


def test_task_notes_snapshot_only_when_changed(config: HarnessConfig) -> None:
    model = ScriptedModel(
        [
            call("update_task_notes", phase="searching", add_notes=["cube is red"]),
            call("update_task_notes", phase="searching"),
            reply("ok"),
        ]
    )
    with Harness(config, model=model) as h:
        run_all(h)
    per_request = [
        [i for i in request.items if isinstance(i, TaskNotesItem)] for request in model.requests
    ]
    # a superseded snapshot leaves the context when the next one arrives: one per request
    assert all(len(snapshots) == 1 for snapshots in per_request)
    versions = [snapshots[0].version for snapshots in per_request]
    assert versions == sorted(versions)
    assert "cube is red" in per_request[-1][0].text
    # task start, after the first update (+ its timeline entry), after the second call's
    # timeline entry; the second update itself changed nothing but the timeline
    assert len(set(versions)) == 3
