"""Answers the output limit cut off, through the real SDKs and the real loop (both formats).

A text answer stopped at the limit (OpenAI ``finish_reason: length``, Anthropic
``max_tokens``) is never the report; a tool call the limit cut is never run and the request
that produced it is never resent unchanged; complete calls before a cut one are not lost
(the first runs, the rest are answered "not executed"). Each test reads what the server
received, so "changed" means the bytes on the wire differ.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness import Harness, HarnessConfig
from harness.errors import OutputLimitError
from harness.events import DoneEvent, EventBase
from harness.messages import InstructionItem, ModelRequest, SystemBlock
from harness.providers import build_model
from harness.providers.base import RetryNotice
from tests.conftest import BoxSafety, fake_robot, move_to_tool
from tests.dialects import Dialect
from tests.wire_server import WireServer
from worlds.fake import FakeRobot

WHOLE = {"x": 0.1, "y": 0.2, "z": 0.3}
CUT_JSON = '{"x": 0.4, "y": 0.'


def run(harness: Harness) -> list[EventBase]:
    return list(harness.run_stream("put the cube on the tray"))


def done_of(events: list[EventBase]) -> DoneEvent:
    dones = [e for e in events if isinstance(e, DoneEvent)]
    assert len(dones) == 1 and events[-1] is dones[0]
    return dones[0]


def limit_of(body: dict[str, Any]) -> int:
    return int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)


def robot(config: HarnessConfig) -> tuple[Harness, FakeRobot]:
    driver = fake_robot()
    harness = Harness.from_config(
        config, driver=driver, safety=BoxSafety(), physical_tools=[move_to_tool(driver)]
    )
    return harness, driver


def test_a_text_answer_cut_by_the_output_limit_is_never_the_report(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    cut = "The cube is now on the tr"
    server.reply(dialect.cut_text(cut), dialect.text("The cube is on the tray."))
    config.model = dialect.config(server)
    with Harness.from_config(config) as harness:
        events = run(harness)
    done = done_of(events)
    assert done.status == "completed"
    assert done.report == "The cube is on the tray."
    discarded = [e for e in events if e.type == "model_discarded"]
    assert len(discarded) == 1 and discarded[0].text == cut
    assert not [e for e in events if e.type == "model_retry"]
    first, second = (r.body for r in server.requests)
    assert limit_of(second) > limit_of(first)  # more room for the answer
    resent = " ".join(t.text for t in dialect.turns(second))
    assert "cut off by the output limit" in resent
    assert cut not in resent  # the cut text was discarded, not shown as an answer


def test_an_answer_cut_twice_ends_the_task_failed_with_the_reason(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    cut = "Step one done, step two is to move the"
    server.responder = dialect.cut_text(cut)
    config.model = dialect.config(server)
    with Harness.from_config(config) as harness:
        events = run(harness)
    done = done_of(events)
    assert done.status == "failed"
    assert "output limit" in done.termination_reason
    assert "never a report" in done.termination_reason
    assert done.report != cut and cut not in done.report
    assert len(server.requests) == 2  # one changed resend, then the reason
    assert server.requests[0].body != server.requests[1].body


def test_complete_calls_before_a_cut_one_run_the_first_and_answer_the_rest(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.reply(
        dialect.cut_tools(
            ("call_1", "move_to", WHOLE), ("call_2", "move_to", WHOLE), cut_json=CUT_JSON
        ),
        dialect.text("Moved."),
    )
    config.model = dialect.config(server)
    harness, driver = robot(config)
    with harness:
        events = run(harness)
    assert driver.executed == [("move_to", WHOLE)]
    results = [e for e in events if e.type == "tool_result"]
    assert [r.executed for r in results] == [True, False, False]
    # the whole second call: one tool per turn; the cut last one: cut, quoted as it arrived
    assert [r.error_kind for r in results[1:]] == ["not_executed", "output_limit"]
    assert "output limit cut this move_to call off" in results[2].text
    assert repr(CUT_JSON) in results[2].text
    assert not [e for e in events if e.type in ("model_retry", "model_error")]
    assert len(server.requests) == 2
    assert done_of(events).status == "completed"


def test_a_cut_tool_call_is_never_resent_unchanged(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.reply(
        dialect.cut_tools(cut_json=CUT_JSON),
        dialect.tools(("call_w", "move_to", WHOLE)),
        dialect.text("Moved."),
    )
    config.model = dialect.config(server)
    harness, driver = robot(config)
    with harness:
        events = run(harness)
    assert driver.executed == [("move_to", WHOLE)]
    assert not [e for e in events if e.type == "model_retry"]
    errors = [e for e in events if e.type == "model_error"]
    assert [e.kind for e in errors] == ["output_limit"]
    first, second = server.requests[0].body, server.requests[1].body
    assert first != second
    assert limit_of(second) > limit_of(first)
    assert "cut off by the output limit" in " ".join(t.text for t in dialect.turns(second))
    assert done_of(events).status == "completed"


def test_a_tool_call_cut_every_time_fails_after_one_changed_resend(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.responder = dialect.cut_tools(cut_json=CUT_JSON)
    config.model = dialect.config(server, max_retries=3)
    harness, driver = robot(config)
    with harness:
        events = run(harness)
    assert driver.executed == []
    assert len(server.requests) == 2
    done = done_of(events)
    assert done.status == "failed"
    reason = done.termination_reason
    assert "the output limit of 4096 tokens cut a tool call (move_to) off" in reason


def test_a_configured_output_limit_is_kept_and_the_resend_changes_by_its_notice(
    config: HarnessConfig, dialect: Dialect, server: WireServer
) -> None:
    server.reply(dialect.cut_text("Half a"), dialect.text("Done."))
    config.model = dialect.config(server, max_output_tokens=300)
    with Harness.from_config(config) as harness:
        events = run(harness)
    assert done_of(events).report == "Done."
    first, second = (r.body for r in server.requests)
    assert limit_of(first) == limit_of(second) == 300
    assert first != second


@pytest.mark.parametrize("calls_before", [0, 1, 3])
def test_the_adapter_never_retries_a_length_cut_call_itself(
    dialect: Dialect, server: WireServer, calls_before: int
) -> None:
    whole = [(f"call_{i}", "move_to", WHOLE) for i in range(calls_before)]
    server.responder = dialect.cut_tools(*whole, cut_json=CUT_JSON)
    model = build_model(dialect.config(server, max_retries=3))
    request = ModelRequest(
        system=[SystemBlock(name="system", text="You drive a robot.")],
        items=[InstructionItem(text="move")],
    )
    chunks: list[Any] = []
    try:
        for chunk in model.stream(request):
            chunks.append(chunk)
    except OutputLimitError as exc:
        assert calls_before == 0 and exc.max_output_tokens
    else:
        assert calls_before >= 1
        final = chunks[-1].response
        assert [c.id for c in final.tool_calls][:-1] == [c[0] for c in whole]
        assert final.tool_calls[0].arguments == WHOLE
    finally:
        model.close()
    assert len(server.requests) == 1
    assert not [c for c in chunks if isinstance(c, RetryNotice)]
