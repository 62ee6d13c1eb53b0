"""Real provider adapters driven by the real Harness loop, against the local wire server.

Every test runs twice, once per wire format (OpenAI Chat Completions, Anthropic Messages),
through the official SDKs: multi-turn tool use with the history re-sent correctly,
streaming deltas as events, overflow -> forced compaction -> one resend, several tool
calls in one response, visible retries, usage, cost, the usage-report guard, and keys that
never reach events or the run store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.config import PriceConfig
from harness.events import CompactionEvent, DoneEvent, EventBase
from harness.store import MemoryRunStore
from tests.conftest import BoxSafety, fake_robot, move_to_tool
from tests.dialects import OPENAI, Dialect
from tests.wire_server import Recorded, Reply, WireServer, cut_stream, empty_body


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return f"echo: {text}"


class RecordingCompactor:
    """A compactor fake: records each call and, when forced, drops the oldest item."""

    def __init__(self) -> None:
        self.calls: list[tuple[bool, str]] = []

    def compact(
        self, context: Any, *, force: bool = False, reason: str = ""
    ) -> Iterator[CompactionEvent]:
        self.calls.append((force, reason))
        if force:
            yield CompactionEvent(status="completed", mode="overflow", reason=reason)

    @property
    def forced(self) -> list[str]:
        return [reason for force, reason in self.calls if force]


def run(harness: Harness, instruction: str = "tidy the table", **kw: Any) -> list[EventBase]:
    return list(harness.run_stream(instruction, **kw))


def done_of(events: list[EventBase]) -> DoneEvent:
    dones = [e for e in events if isinstance(e, DoneEvent)]
    assert len(dones) == 1 and events[-1] is dones[0]
    return dones[0]


# --------------------------------------------------------------------------- tool round trip


def test_multi_turn_tool_use_resends_the_history_correctly(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    driver = fake_robot()
    server.reply(
        dialect.tools(("call_a", "move_to", {"x": 0.1, "y": 0.2, "z": 0.3}), text="Moving."),
        dialect.tools(("call_b", "echo", {"text": "hello"})),
        dialect.text("Moved the gripper and echoed hello."),
    )
    config.model = dialect.config(server)
    with Harness.from_config(
        config,
        tools=[echo],
        driver=driver,
        safety=BoxSafety(),
        physical_tools=[move_to_tool(driver)],
    ) as harness:
        events = run(harness)
    done = done_of(events)
    assert done.status == "completed", done.termination_reason
    assert done.report == "Moved the gripper and echoed hello."
    assert driver.executed == [("move_to", {"x": 0.1, "y": 0.2, "z": 0.3})]
    assert len(server.requests) == 3

    first, second, third = (dialect.turns(r.body) for r in server.requests)
    assert first[0].role == "system" and "one tool call per turn" in first[0].text
    assert {t.role for t in first[1:]} == {"user"}
    user_text = "\n".join(t.text for t in first[1:])
    assert "Instruction: tidy the table" in user_text and "Task notes" in user_text
    assert user_text.index("Instruction") < user_text.index("Observation at t=")
    assert first[-1].images == 1 and sum(t.images for t in first) == 1

    # request 2: the first decision and its answered call, then fresh evidence
    assistant = next(t for t in second if t.role == "assistant")
    assert assistant.text == "Moving."
    assert [(c[0], c[1], json.loads(c[2])) for c in assistant.calls] == [
        ("call_a", "move_to", {"x": 0.1, "y": 0.2, "z": 0.3})
    ]
    index = second.index(assistant)
    assert second[index + 1].role == "tool" and second[index + 1].answers == "call_a"
    assert "move_to done" in second[index + 1].text
    assert second[-1].images == 1  # only the current observation, the old one left

    # request 3 repeats request 2's history unchanged, then the second exchange
    answered = [t.answers for t in third if t.role == "tool"]
    assert answered == ["call_a", "call_b"]
    calls = [c[0] for t in third if t.role == "assistant" for c in t.calls]
    assert calls == ["call_a", "call_b"]
    assert "echo: hello" in next(t.text for t in third if t.answers == "call_b")
    prefix = [t for t in second if t.images == 0]
    assert [t for t in third if t.images == 0][: len(prefix) - 1] == prefix[:-1]


def test_streamed_text_and_tool_arguments_arrive_as_delta_events(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.reply(
        dialect.tools(("call_1", "echo", {"text": "a fairly long argument"}), text="Let me echo."),
        dialect.text("Finished: the echo worked as expected."),
    )
    config.model = dialect.config(server)
    with Harness.from_config(config, tools=[echo]) as harness:
        events = run(harness)
    deltas = [e for e in events if e.type == "model_delta"]
    first_response = next(i for i, e in enumerate(events) if e.type == "model_response")
    first_deltas = [e for e in events[:first_response] if e.type == "model_delta"]
    text = "".join(e.delta for e in first_deltas if e.kind == "text")
    arguments = "".join(e.delta for e in first_deltas if e.kind == "tool_arguments")
    assert text == "Let me echo."
    assert json.loads(arguments) == {"text": "a fairly long argument"}
    assert {e.tool_call_id for e in first_deltas if e.kind == "tool_arguments"} == {"call_1"}
    assert len([e for e in first_deltas if e.kind == "tool_arguments"]) > 1  # fragments
    later = "".join(e.delta for e in deltas[len(first_deltas) :] if e.kind == "text")
    assert later == "Finished: the echo worked as expected."
    assert done_of(events).status == "completed"


# --------------------------------------------------------------------------- one tool per turn


def test_request_asks_for_one_tool_and_extra_calls_are_answered(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.reply(
        dialect.tools(("c_1", "echo", {"text": "one"}), ("c_2", "echo", {"text": "two"})),
        dialect.text("done"),
    )
    config.model = dialect.config(server)
    with Harness.from_config(config, tools=[echo]) as harness:
        events = run(harness)
    first = server.requests[0].body
    if dialect is OPENAI:
        assert first["parallel_tool_calls"] is False
    else:
        assert first["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    results = [e for e in events if e.type == "tool_result"]
    assert [(r.call_id, r.executed) for r in results] == [("c_1", True), ("c_2", False)]
    assert results[1].error_kind == "not_executed"
    turns = dialect.turns(server.requests[1].body)
    assistant = next(t for t in turns if t.role == "assistant")
    assert [c[0] for c in assistant.calls] == ["c_1", "c_2"]
    index = turns.index(assistant)
    assert [t.answers for t in turns[index + 1 : index + 3]] == ["c_1", "c_2"]
    assert "not executed: one tool per turn" in turns[index + 2].text
    assert done_of(events).status == "completed"


def test_dotted_tool_names_go_out_wire_safe_and_come_back(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    """MCP-style names like ``ros.echo`` are rejected by both APIs as they are."""

    @tool(name="ros.echo")
    def ros_echo(text: str) -> str:
        """Echo through ROS."""
        return f"ros says {text}"

    server.reply(dialect.tools(("c_1", "ros_echo", {"text": "hi"})), dialect.text("done"))
    config.model = dialect.config(server)
    with Harness.from_config(config, tools=[ros_echo]) as harness:
        events = run(harness)
    offered = [
        spec.get("name") or spec["function"]["name"] for spec in server.requests[0].body["tools"]
    ]
    assert "ros_echo" in offered and "ros.echo" not in offered
    result = next(e for e in events if e.type == "tool_result")
    assert (result.name, result.text, result.executed) == ("ros.echo", "ros says hi", True)
    assistant = next(t for t in dialect.turns(server.requests[1].body) if t.role == "assistant")
    assert assistant.calls[0][1] == "ros_echo"


# --------------------------------------------------------------------------- overflow


def test_overflow_forces_compaction_and_resends_once(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    compactor = RecordingCompactor()
    server.reply(dialect.overflow(), dialect.text("fits now"))
    config.model = dialect.config(server)
    with Harness.from_config(config, compactor=compactor) as harness:
        events = run(harness)
    done = done_of(events)
    assert done.status == "completed" and done.report == "fits now"
    assert len(server.requests) == 2
    assert len(compactor.forced) == 1 and "overflow" in compactor.forced[0]
    error = next(e for e in events if e.type == "model_error")
    assert error.kind == "context_overflow" and error.status_code == 400
    kinds = [e.type for e in events]
    assert kinds.index("model_error") < kinds.index("compaction") < kinds.index("model_response")


@pytest.mark.parametrize("second", ["overflow", "413"])
def test_second_overflow_ends_the_task_with_a_clear_reason(
    config: HarnessConfig, dialect: Dialect, server: WireServer, second: str
) -> None:
    compactor = RecordingCompactor()
    too_large = Reply(413, {"error": {"type": "request_too_large", "message": "Request too large"}})
    # Issue 17: after the forced compaction come a reference and a minimal-reference
    # request before the overflow is terminal (this programmed and counted 2 requests).
    server.reply(
        dialect.overflow(),
        dialect.overflow() if second == "overflow" else too_large,
        dialect.overflow(),
        dialect.overflow(),
    )
    config.model = dialect.config(server)
    with Harness.from_config(config, compactor=compactor) as harness:
        events = run(harness)
        done = done_of(events)
        assert done.status == "failed"
        assert "context overflow again after a forced compaction" in done.termination_reason
        assert "ContextOverflowError" in done.termination_reason
        assert len(server.requests) == 4 and len(compactor.forced) == 1
        # the session survives for the next task
        server.reply(dialect.text("ok"))
        assert harness.run("next").status == "completed"


# --------------------------------------------------------------------------- retries


def test_rate_limit_wait_is_visible_and_honours_retry_after(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.reply(
        dialect.error(429, "slow down", headers={"retry-after-ms": "20"}),
        dialect.error(500, "upstream hiccup"),
        dialect.text("done after retries"),
    )
    config.model = dialect.config(server)
    with Harness.from_config(config) as harness:
        events = run(harness)
    retries = [e for e in events if e.type == "model_retry"]
    assert [(r.attempt, r.error_kind) for r in retries] == [(1, "rate_limit"), (2, "transient")]
    assert retries[0].wait_s == 0.02
    assert 0 < retries[1].wait_s <= 0.002
    assert done_of(events).status == "completed" and len(server.requests) == 3


def test_retries_are_bounded_and_end_the_task_with_the_error(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.responder = lambda request: dialect.error(500, "still broken")
    config.model = dialect.config(server, max_retries=2)
    with Harness.from_config(config) as harness:
        events = run(harness)
    assert len(server.requests) == 3
    assert len([e for e in events if e.type == "model_retry"]) == 2
    done = done_of(events)
    assert done.status == "failed"
    assert "transient" in done.termination_reason and "gave up after 2 retries" in (
        done.termination_reason
    )


def test_cancelling_at_a_retry_stops_without_another_request(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.responder = lambda request: dialect.error(500, "down")
    config.model = dialect.config(server, options={"retry_base_s": 30.0, "retry_max_s": 30.0})
    seen: list[str] = []
    with Harness.from_config(config) as harness:
        events = []
        for event in harness.run_stream("go", should_cancel=lambda: "model_retry" in seen):
            seen.append(event.type)
            events.append(event)
    done = done_of(events)
    assert done.status == "cancelled" and "during the model call" in done.termination_reason
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- incomplete answers


def cut_after_tool_name(reply: Reply) -> Reply:
    """The stream of ``reply`` up to the event that names the tool: no arguments, no end."""
    assert reply.events is not None
    named = next(i for i, (_, data) in enumerate(reply.events) if '"name": "move_to"' in data)
    return cut_stream(reply, keep=named + 1)


def _end_marker(reply: Reply) -> int:
    """The index of the event that ends the answer (finish_reason; message_delta/stop)."""
    assert reply.events is not None
    return next(
        i
        for i, (name, data) in enumerate(reply.events)
        if '"finish_reason": "tool_calls"' in data or name == "message_delta"
    )


@pytest.mark.parametrize("fault", ["cut after the tool name", "empty 200 body", "no end marker"])
def test_an_incomplete_tool_call_is_never_executed_and_the_task_fails(
    config: HarnessConfig, dialect: Dialect, server: WireServer, fault: str
) -> None:
    """A physical call cut before its arguments would run with defaults: it must not run."""
    full = dialect.tools(("call_a", "move_to", {"x": 0.1, "y": 0.2, "z": 0.3}))
    assert full.events is not None
    faulty = {
        "cut after the tool name": cut_after_tool_name(full),
        "empty 200 body": empty_body("text/event-stream"),
        "no end marker": cut_stream(full, keep=_end_marker(full)),
    }[fault]
    server.responder = lambda request: faulty
    driver = fake_robot()
    config.model = dialect.config(server, max_retries=2)
    with Harness.from_config(
        config, driver=driver, safety=BoxSafety(), physical_tools=[move_to_tool(driver)]
    ) as harness:
        events = run(harness)
    assert driver.executed == []
    assert not [e for e in events if e.type in ("tool_call", "tool_result", "model_response")]
    retries = [e for e in events if e.type == "model_retry"]
    assert [r.error_kind for r in retries] == ["incomplete_response"] * 2
    done = done_of(events)
    assert done.status == "failed"
    assert "incomplete_response" in done.termination_reason


def test_a_cut_tool_call_is_retried_and_then_runs_once_whole(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    full = dialect.tools(("call_a", "move_to", {"x": 0.1, "y": 0.2, "z": 0.3}))
    server.reply(cut_after_tool_name(full), full, dialect.text("Moved."))
    driver = fake_robot()
    config.model = dialect.config(server)
    with Harness.from_config(
        config, driver=driver, safety=BoxSafety(), physical_tools=[move_to_tool(driver)]
    ) as harness:
        events = run(harness)
    assert driver.executed == [("move_to", {"x": 0.1, "y": 0.2, "z": 0.3})]
    assert [e.error_kind for e in events if e.type == "model_retry"] == ["incomplete_response"]
    assert done_of(events).status == "completed"


def test_an_empty_final_answer_is_retried_once_then_the_task_fails(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.responder = lambda request: dialect.text("")
    config.model = dialect.config(server)
    with Harness.from_config(config) as harness:
        events = run(harness)
    assert len(server.requests) == 2
    done = done_of(events)
    assert done.status == "failed" and "empty_response" in done.termination_reason


# --------------------------------------------------------------------------- usage and cost


def test_usage_and_cost_per_call_and_per_task(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.reply(
        dialect.tools(("c1", "echo", {"text": "x"})),
        dialect.text("done", usage=(2000, 100, 1500)),
    )
    config.model = dialect.config(
        server, prices=PriceConfig(input=2.0, output=8.0, cache_read=0.5, cache_write=2.5)
    )
    with Harness.from_config(config, tools=[echo]) as harness:
        events = run(harness)
    responses = [e for e in events if e.type == "model_response"]
    second = responses[1].usage
    assert (second.input_tokens, second.cache_read_tokens, second.output_tokens) == (500, 1500, 100)
    assert second.prompt_tokens == 2000
    assert second.cost_usd == pytest.approx((500 * 2.0 + 1500 * 0.5 + 100 * 8.0) / 1e6)
    done = done_of(events)
    assert done.usage.requests == 2
    assert done.usage.cache_read_tokens == 1500
    assert done.usage.output_tokens == responses[0].usage.output_tokens + 100
    assert done.usage.cost_usd == pytest.approx(
        responses[0].usage.cost_usd + second.cost_usd  # type: ignore[operator]
    )


def test_usage_reports_calibrate_unless_implausible(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    """A reported prompt many times the estimate is ignored; a plausible one calibrates."""
    snapshots: list[int] = []

    def implausible(request: Recorded) -> Reply:
        return _tool_reply_reporting(dialect, prompt_tokens=snapshots[-1] * 50)

    def plausible(request: Recorded) -> Reply:
        return dialect.text("done", usage=(int(snapshots[-1] * 1.5), 5, 0))

    server.reply(implausible, plausible)
    config.model = dialect.config(server)
    with Harness.from_config(config, tools=[echo]) as harness:
        estimator = harness.context.estimator
        for event in harness.run_stream("go"):
            if event.type == "prompt_snapshot":
                snapshots.append(event.total_tokens)
            if event.type == "model_response" and len(snapshots) == 1:
                assert estimator.ignored_reports == 1 and estimator.calibration == 1.0
    assert estimator.ignored_reports == 1
    assert estimator.calibration == pytest.approx(1.5, rel=0.01)


def _tool_reply_reporting(dialect: Dialect, *, prompt_tokens: int) -> Reply:
    """A streamed tool-call reply whose usage reports ``prompt_tokens`` input tokens."""
    reply = dialect.tools(("c1", "echo", {"text": "x"}))
    assert reply.events is not None
    events = []
    for name, data in reply.events:
        if data.startswith("{"):
            payload = json.loads(data)
            if payload.get("usage") and "prompt_tokens" in payload["usage"]:
                payload["usage"]["prompt_tokens"] = prompt_tokens
            if payload.get("type") == "message_start":
                payload["message"]["usage"]["input_tokens"] = prompt_tokens
            data = json.dumps(payload)
        events.append((name, data))
    return Reply(events=events)


# --------------------------------------------------------------------------- secrets


def test_api_key_never_reaches_events_errors_or_the_store(
    config: HarnessConfig, dialect: Dialect, server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-proj-SECRETsecret0123456789abcdefXYZ"
    monkeypatch.setenv("HARNESS_TEST_SECRET_KEY", secret)
    server.reply(
        dialect.error(500, f"upstream echoed your header: Bearer {secret}"),
        dialect.error(401, f"Incorrect API key provided: {secret}"),
    )
    config.model = dialect.config(server, api_key_env="HARNESS_TEST_SECRET_KEY")
    store = MemoryRunStore()
    with Harness.from_config(config, store=store) as harness:
        events = run(harness)
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"  # it was sent
    done = done_of(events)
    assert done.status == "failed" and "authentication" in done.termination_reason
    assert "[REDACTED]" in done.termination_reason
    dumped = [e.model_dump_json() for e in store.events]
    dumped += [json.dumps(task, default=str) for task in store.tasks.values()]
    dumped += [json.dumps(session, default=str) for session in store.sessions.values()]
    assert dumped and not any(secret in line for line in dumped)
    assert not any(secret in e.model_dump_json() for e in events)


def test_cli_runs_a_task_with_a_model_spec(
    tmp_path: Path, server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    path = tmp_path / "deploy.yaml"
    path.write_text(
        "embodiment: null\ndriver: null\nrun: {store: null}\nmemory: {enabled: false}\n"
    )
    server.reply(OPENAI.text("Nothing to do: the table is already tidy."))
    spec = f"openai:gpt-4o-mini@{server.openai_url}"
    code = main(["run", "--config", str(path), "--model", spec, "--json", "tidy"])
    assert code == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["type"] for e in events if e["type"] == "model_delta"]
    assert events[-1]["type"] == "done" and events[-1]["status"] == "completed"
    assert server.requests[0].body["model"] == "gpt-4o-mini"


def test_usage_a_server_does_not_report_is_unknown_never_zero(
    config: HarnessConfig, server: WireServer
) -> None:
    """A local server streams no usage: ``done.usage`` says how many calls went unreported
    instead of claiming they cost 0 tokens, and the one-line description says so."""
    from tests.wire_server import openai_stream

    events = openai_stream("Nothing to do.").events or []
    finish = next(i for i, (_, data) in enumerate(events) if '"finish_reason": "stop"' in data)
    server.reply(Reply(events=[*events[: finish + 1], (None, "[DONE]")]))  # no usage chunk
    config.model = OPENAI.config(server)
    with Harness.from_config(config) as harness:
        done = done_of(run(harness))
    assert done.status == "completed", done.termination_reason
    assert done.usage.requests == 1 and done.usage.unreported_requests == 1
    assert not done.usage.complete
    assert "usage not reported for 1 of 1 calls" in done.usage.describe()
    server.reply(OPENAI.text("Done."))
    with Harness.from_config(config) as harness:
        done = done_of(run(harness))
    assert done.usage.complete and done.usage.prompt_tokens == 100
