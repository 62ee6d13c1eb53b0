"""A local model on a small window, through the real SDKs and loop (issue 45's four bugs).

Each test here failed before the fix it names:

- usage is never lost: a request whose answer was cut (or retried, or empty) is counted in
  ``done.usage`` like one whose answer was used (hypothesis over answer sequences, against
  the wire server's own record of what it answered);
- the "more room" resend asks for no more than the window has left after the prompt as
  the server counted it, and the reason names the limit that actually cut the answer;
- ``harness check`` runs the tools-fit check ``harness run`` runs, and a small window gets a
  smaller tool set with a notice naming what was left out, not a refusal;
- a cut call is recorded as cut (its name and partial arguments) and answered as such.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig
from harness.cli import main as cli_main
from harness.context.admission import OPTIONAL_FEATURES
from harness.events import DoneEvent, EventBase
from harness.messages import AssistantItem
from harness.tools import Tool
from tests.conftest import BoxSafety, fake_robot, move_to_tool
from tests.dialects import OPENAI, Dialect, asked_limit
from tests.tiers import examples
from tests.wire_server import (
    Recorded,
    Reply,
    WireServer,
    cut_stream,
    openai_stream,
    openai_usage,
)
from worlds.fake import FakeRobot

ROOT = Path(__file__).resolve().parents[2]
WHOLE = {"x": 0.1, "y": 0.2, "z": 0.3}


def done_of(events: list[EventBase]) -> DoneEvent:
    dones = [e for e in events if isinstance(e, DoneEvent)]
    assert len(dones) == 1 and events[-1] is dones[0]
    return dones[0]


def robot(config: HarnessConfig) -> tuple[Harness, FakeRobot]:
    driver = fake_robot()
    harness = Harness.from_config(
        config, driver=driver, safety=BoxSafety(), physical_tools=[move_to_tool(driver)]
    )
    return harness, driver


# =========================================================================== usage


def test_a_cut_calls_request_is_counted_in_done_usage(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    """Bug 2: the server answered two requests (a cut call, then a report); both count."""
    server.reply(
        dialect.cut_tools(cut_json='{"x": 0.4, "y'), dialect.text("Done.", usage=(1352, 9, 0))
    )
    config.model = dialect.config(server)
    harness, _ = robot(config)
    with harness:
        events = list(harness.run_stream("move the arm"))
    done = done_of(events)
    first_limit = asked_limit(server.requests[0])
    assert done.status == "completed"
    assert done.usage.requests == 2 == len(server.requests)
    assert done.usage.prompt_tokens == 100 + 1352
    assert done.usage.output_tokens == first_limit + 9
    discarded = [e for e in events if e.type == "model_discarded"]
    assert len(discarded) == 1 and discarded[0].usage.output_tokens == first_limit


ANSWERS = ("text", "tool", "cut_text", "cut_tool", "empty", "broken")


def _planned(kind: str, prompt: int, completion: int) -> Any:
    """A responder for one answer of ``kind`` and what it tells the oracle: (requests,
    prompt tokens, output tokens, unreported requests) the server's answer stands for."""

    def answer(request: Recorded) -> tuple[Reply, tuple[int, int, int, int]]:
        usage = openai_usage(prompt, completion)
        limit = asked_limit(request)
        if kind == "text":
            return openai_stream("All done.", usage=usage), (1, prompt, completion, 0)
        if kind == "tool":
            reply = openai_stream(tool_calls=[("call_t", "move_to", WHOLE)], usage=usage)
            return reply, (1, prompt, completion, 0)
        if kind == "cut_text":
            reply = openai_stream(
                "Half an ans", finish_reason="length", usage=openai_usage(prompt, limit)
            )
            return reply, (1, prompt, limit, 0)
        if kind == "cut_tool":
            reply = openai_stream(
                tool_calls=[("call_c", "move_to", '{"x": 0.')],
                finish_reason="length",
                usage=openai_usage(prompt, limit),
            )
            return reply, (1, prompt, limit, 0)
        if kind == "empty":
            return openai_stream("", usage=usage), (1, prompt, completion, 0)
        # broken: the stream stops before its finish chunk and usage (retried)
        whole = openai_stream("Never finish", usage=usage)
        return cut_stream(whole, keep=2), (1, 0, 0, 1)

    return answer


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    plan=st.lists(
        st.tuples(st.sampled_from(ANSWERS), st.integers(1, 5000), st.integers(1, 400)),
        min_size=1,
        max_size=8,
    )
)
def test_every_answered_request_is_counted_whatever_the_answers(
    config: HarnessConfig, plan: list[tuple[str, int, int]]
) -> None:
    """Whatever mix of whole, cut, empty and broken answers the server gives, ``done.usage``
    counts exactly what the server answered (the oracle is the server's own record)."""
    OPENAI.prepare(pytest.MonkeyPatch())
    sent: list[tuple[int, int, int, int]] = []
    queue = [_planned(kind, prompt, completion) for kind, prompt, completion in plan]

    def respond(request: Recorded) -> Reply:
        answer = queue.pop(0) if queue else _planned("text", 7, 3)
        reply, counted = answer(request)
        sent.append(counted)
        return reply

    with WireServer(respond) as server:
        config.model = OPENAI.config(server, max_retries=2)
        harness, _ = robot(config)
        with harness:
            done = done_of(list(harness.run_stream("move the arm", max_turns=4)))
    requests, prompt, output, unreported = (sum(column) for column in zip(*sent, strict=True))
    assert done.usage.requests == requests == len(sent)
    assert done.usage.prompt_tokens == prompt
    assert done.usage.output_tokens == output
    assert done.usage.unreported_requests == unreported


# =========================================================================== more room


def _cut_then(first: tuple[int, int | None], second: Reply | None = None) -> Any:
    """Responder: the first answer is a text cut off with usage (prompt, completion; None:
    the limit asked); then ``second``, or a report."""
    calls: list[int] = []

    def respond(request: Recorded) -> Reply:
        calls.append(1)
        if len(calls) == 1:
            prompt, completion = first
            used = asked_limit(request) if completion is None else completion
            return openai_stream("Half a", finish_reason="length", usage=openai_usage(prompt, used))
        if second is not None:
            return second
        return openai_stream("Short report.", usage=openai_usage(100, 5))

    return respond


def test_the_resend_never_asks_for_more_than_the_window_has_left(
    config: HarnessConfig, server: WireServer
) -> None:
    """Bug 3: the estimate put the prompt far lower than the server's 5,009 tokens; the
    resend's room comes from the server's count, so prompt + answer fit the window."""
    OPENAI.prepare(pytest.MonkeyPatch())
    server.responder = _cut_then((5009, None))
    config.model = OPENAI.config(server, context_window=8192)
    with Harness.from_config(config) as harness:
        done = done_of(list(harness.run_stream("report")))
    assert done.status == "completed" and done.report == "Short report."
    first, second = (asked_limit(r) for r in server.requests)
    assert first == 2048  # the reserve of an 8k window
    assert 5009 + second <= 8192  # before the fix: 2 * 2048 = 4096, 913 tokens too many
    assert second > first  # and still more room than before, since the window has it


def test_a_cut_at_the_servers_context_end_is_named_as_such(
    config: HarnessConfig, server: WireServer
) -> None:
    """Bug 3: a server whose real window is smaller stops at its end, before the output
    limit; the reason names the window, not the output limit."""
    OPENAI.prepare(pytest.MonkeyPatch())
    server.responder = _cut_then((5009, 1191))  # 5009 + 1191 = a 6200-token server window
    config.model = OPENAI.config(server, context_window=8192)
    with Harness.from_config(config) as harness:
        events = list(harness.run_stream("report"))
    done = done_of(events)
    assert done.status == "completed"
    discarded = next(e for e in events if e.type == "model_discarded")
    assert "end of the server's context window" in discarded.reason
    assert "after 1191 tokens, before the output limit of 2048" in discarded.reason
    # the resend is sized to the window the server showed it has, not the configured one
    assert 5009 + asked_limit(server.requests[1]) <= 6200


def test_two_cuts_end_the_task_naming_each_limit(config: HarnessConfig, server: WireServer) -> None:
    OPENAI.prepare(pytest.MonkeyPatch())
    second = openai_stream("Still", finish_reason="length", usage=openai_usage(5100, 700))
    server.responder = _cut_then((5009, None), second)
    config.model = OPENAI.config(server, context_window=8192)
    with Harness.from_config(config) as harness:
        done = done_of(list(harness.run_stream("report")))
    assert done.status == "failed"
    reason = done.termination_reason
    assert "the output limit of 2048 tokens cut a text answer off" in reason
    assert "the end of the server's context window cut a text answer off after 700" in reason
    assert done.report != "Still"


# =========================================================================== cut calls


def test_a_cut_call_is_recorded_as_cut_with_its_partial_arguments(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    """Bug 5: the cut last call went back as ``move_to`` with ``{}`` answered "one tool per
    turn"; it is recorded cut, with what arrived, and answered that the limit cut it."""
    cut_json = '{"x": 0.4, "y": 0.'
    server.reply(
        dialect.cut_tools(("call_1", "move_to", WHOLE), cut_json=cut_json),
        dialect.text("Moved."),
    )
    config.model = dialect.config(server)
    harness, driver = robot(config)
    with harness:
        events = list(harness.run_stream("move the arm"))
        items = [i for i in harness.session.context.accumulated if isinstance(i, AssistantItem)]
    assert driver.executed == [("move_to", WHOLE)]
    calls = items[0].tool_calls
    assert [c.cut for c in calls] == [False, True]
    assert calls[1].name == "move_to" and calls[1].raw_arguments == cut_json
    response = next(e for e in events if e.type == "model_response")
    assert response.tool_calls[1]["cut"] is True
    assert response.tool_calls[1]["arguments_so_far"] == cut_json
    answered = [e for e in events if e.type == "tool_result"][1]
    assert answered.error_kind == "output_limit" and not answered.executed
    # what the model reads next turn says so
    second = " ".join(t.text for t in dialect.turns(server.requests[1].body))
    assert "output limit cut this move_to call off" in second
    assert "one tool per turn" not in second.split("output limit cut")[1][:80]


# =========================================================================== small windows


def _wire_config(tmp_path: Path, server: WireServer, window: int) -> list[str]:
    return [
        "--config",
        str(ROOT / "configs" / "default.yaml"),
        "--model",
        f"openai:local-gemma@{server.openai_url}",
        "--context-window",
        str(window),
        "--set",
        f"run.store={tmp_path / 'store'}",
        "--set",
        f"memory.path={tmp_path / 'memory'}",
    ]


@pytest.mark.parametrize("window", [8192, 2048])
def test_check_and_run_agree_on_the_tools_a_window_holds(
    tmp_path: Path, server: WireServer, capsys: pytest.CaptureFixture[str], window: int
) -> None:
    """Bug 4: ``check`` said 0 failed where ``run`` refused (exit 2). Now both run the same
    selection: an 8k window gets a smaller tool set (check warns, naming what it left
    out; run starts and ends truthfully), a 2k window fails both."""
    server.responder = lambda request: openai_stream(
        "I cannot see a cube.", usage=openai_usage(900, 8)
    )
    base = _wire_config(tmp_path, server, window)
    checked = cli_main(["check", *base])
    check_out = capsys.readouterr().out
    ran = cli_main(["run", "--json", "--max-turns", "2", *base, "put the red cube in the tray"])
    run_out = capsys.readouterr()
    assert "tool fit" in check_out
    if window == 8192:
        assert checked == 0 and "0 failed" in check_out
        assert "left out episodes" in check_out.replace("\n", " ")
        events = [json.loads(line) for line in run_out.out.splitlines() if line.startswith("{")]
        notices = [e["message"] for e in events if e["type"] == "notification"]
        assert any("left out" in n and "episodes" in n for n in notices), notices
        listed = next(e for e in events if e["type"] == "tools_listed")
        assert "begin_episode" not in listed["tools"] and "move_to" in listed["tools"]
        done = events[-1]
        assert done["type"] == "done" and done["status"] == "completed"
        assert ran == 1  # completed, but the task check denies it: exit 1, never 0
        sent = server.requests[-1].body
        assert "begin_episode" not in json.dumps(sent["tools"])
    else:
        assert checked == 2 and "fail tool fit" in " ".join(check_out.split())
        assert ran == 2 and "do not fit" in run_out.err
        assert not server.requests  # neither called the model


def test_a_left_out_tool_called_anyway_is_refused_with_the_reason(
    config: HarnessConfig, server: WireServer
) -> None:
    """A model may still name a tool it was not offered: the call is refused, saying why."""
    OPENAI.prepare(pytest.MonkeyPatch())
    server.reply(
        openai_stream(tool_calls=[("call_1", "begin_episode", {"kind": "action", "name": "a"})]),
        openai_stream("ok"),
    )
    config.model = OPENAI.config(server, context_window=6000)  # too small for episodes
    config.context.episodes.enabled = True
    harness, _ = robot(config)
    with harness:
        events = list(harness.run_stream("go"))
    listed = next(e for e in events if e.type == "tools_listed")
    assert "begin_episode" not in listed.tools
    result = next(e for e in events if e.type == "tool_result")
    assert result.name == "begin_episode" and not result.executed
    assert "window is too small for the episodes tools" in result.text


def test_optional_features_leave_in_order_and_only_as_needed() -> None:
    """The selection leaves out whole features, in :data:`OPTIONAL_FEATURES` order, and
    stops as soon as the rest fits (an oracle over every window from tiny to ample)."""
    from harness.context import Budget, Context
    from harness.context.admission import select_tools
    from harness.tokens import TokenEstimator

    def make(name: str, optional: str | None, size: int) -> Tool:
        return Tool(name, "x " * size, lambda: "ok", optional=optional, source="test")

    tools = [make("core_a", None, 600), make("core_b", None, 600)]
    for feature in OPTIONAL_FEATURES:
        tools += [make(f"{feature.replace(' ', '_')}_{i}", feature, 300) for i in range(2)]
    seen_orders = set()
    for window in range(1024, 40_000, 512):
        context = Context(
            TokenEstimator(), Budget(context_window=window, reserve_tokens=window // 4)
        )
        offer = select_tools(context, tools)
        dropped = list(offer.left_out)
        assert dropped == list(OPTIONAL_FEATURES[: len(dropped)])
        if offer.refusal is None:
            assert offer.admission is not None and offer.admission.admitted
            if dropped:  # one feature fewer would not have fitted
                fewer = [t for t in tools if t.optional not in dropped[:-1]]
                assert select_tools(context, fewer).left_out
        else:
            assert len(dropped) == len(OPTIONAL_FEATURES)
        assert {t.name for t in offer.offered} == {
            t.name for t in tools if t.optional not in dropped
        }
        seen_orders.add(len(dropped))
    assert seen_orders == set(range(len(OPTIONAL_FEATURES) + 1))


@settings(max_examples=examples(300), deadline=None)
@given(
    whole=st.lists(
        st.dictionaries(st.sampled_from("xyz"), st.floats(-1, 1, allow_nan=False)), max_size=3
    ),
    last=st.dictionaries(st.sampled_from("xyzw"), st.floats(-1, 1, allow_nan=False)),
    cut_at=st.integers(0, 60),
    finish=st.sampled_from(["length", "tool_calls", "stop"]),
)
def test_only_the_last_call_of_an_answer_the_limit_stopped_is_cut(
    whole: list[dict[str, float]], last: dict[str, float], cut_at: int, finish: str
) -> None:
    """Over every cut point of the last call's arguments: an answer the output limit
    stopped has its last call marked cut with exactly what arrived, the calls before it
    whole; an answer that stopped on its own has no cut call."""
    from types import SimpleNamespace as NS

    from harness.providers.chat_assembly import ChatAssembler
    from harness.providers.transcript import ToolNames

    texts = [json.dumps(args) for args in whole]
    last_text = json.dumps(last)[:cut_at] if finish == "length" else json.dumps(last)
    texts.append(last_text)
    assembler = ChatAssembler("gemma", ToolNames(["move_to"]))
    for index, text in enumerate(texts):
        function = NS(name="move_to", arguments=text)
        delta = NS(content=None, tool_calls=[NS(index=index, id=f"c{index}", function=function)])
        list(assembler.add(NS(model="gemma", usage=None, choices=[NS(index=0, delta=delta)])))
    end = NS(index=0, delta=NS(content=None, tool_calls=None), finish_reason=finish)
    list(assembler.add(NS(model="gemma", usage=None, choices=[end])))
    calls = assembler.response().tool_calls
    assert [c.cut for c in calls[:-1]] == [False] * len(whole)
    assert [c.arguments for c in calls[:-1]] == whole
    if finish == "length":
        assert calls[-1].cut and calls[-1].raw_arguments == last_text
        assert calls[-1].arguments == {}
        assert assembler.cut_by_output_limit() is (not whole)
    else:
        assert not calls[-1].cut and calls[-1].arguments == last


def test_a_small_output_limit_the_user_chose_is_resent_not_taken_for_a_full_window(
    config: HarnessConfig, server: WireServer
) -> None:
    """Found live (llama-server, output limit 48): the resend keeps the user's limit even
    below 64 tokens; only a window without room ends the task."""
    OPENAI.prepare(pytest.MonkeyPatch())
    server.reply(OPENAI.cut_text("Half"), OPENAI.text("Done."))
    config.model = OPENAI.config(server, context_window=8192, max_output_tokens=48)
    with Harness.from_config(config) as harness:
        done = done_of(list(harness.run_stream("report")))
    assert done.status == "completed" and done.report == "Done."
    assert [asked_limit(r) for r in server.requests] == [48, 48]
