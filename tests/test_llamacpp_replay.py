"""The local-server items of issue 21, against llama.cpp's real answers, replayed offline.

The transcripts under ``tests/fixtures/llamacpp/`` were recorded once from the real
server (``llama-cpp-python`` 0.3.36, Gemma 3 270M, ``chatml-function-calling``, ``n_ctx``
8192; ``python -m tests.real.record_llamacpp`` re-records them). Here the wire server
answers with exactly those bytes, in order, while the real adapter, loop and example run,
and each scenario's ``check_*`` (shared with the live run in ``tests/real/``) judges the
outcome and what was sent. The requests must also have the shape of the recorded ones: a
replay that sent something else would be answering questions nobody asked.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from harness.tokens import TokenEstimator
from tests.llamacpp_scenarios import SCENARIOS, check_facts
from tests.transcripts import Transcript
from tests.wire_server import WireServer, strip_images


def shape(body: dict[str, Any]) -> tuple[Any, ...]:
    """What a request is, without the text that changes from run to run (timestamps)."""
    messages = [
        (
            m["role"],
            type(m.get("content")).__name__,
            len(m["content"]) if isinstance(m.get("content"), list) else 0,
            len(m.get("tool_calls") or []),
        )
        for m in body["messages"]
    ]
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    fields = sorted(k for k in body if k not in ("messages", "tools"))
    return (fields, messages, tools, body.get("stream"), body.get("tool_choice"))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_replayed(name: str, server: WireServer) -> None:
    run, check = SCENARIOS[name]
    transcript = Transcript.load(name)
    server.reply(*transcript.replies())
    result = run(server.openai_url)
    bodies = [strip_images(request.body) for request in server.requests]
    check(result, bodies)
    assert [shape(b) for b in bodies] == [shape(e.request) for e in transcript.exchanges]


def test_the_servers_behaviour_the_adapter_is_built_around() -> None:
    """What the server did when asked plainly (no adapter involved)."""
    view = check_facts(Transcript.load("facts").exchanges)
    without = view.prompt_tokens("tools_without_tool_choice")
    with_choice = view.prompt_tokens("tools_with_tool_choice")
    alone = view.prompt_tokens("brief_alone")
    with_image = view.prompt_tokens("brief_with_image")
    print(
        f"\nllama.cpp: tools in the prompt: {without} prompt tokens without tool_choice, "
        f"{with_choice} with it; a 16-pixel image adds {with_image - alone} tokens of text"
    )


def test_the_estimate_recalibrates_from_the_servers_prompt_count() -> None:
    """The function-calling chat format adds a long preamble our estimate cannot see; one
    report fixes the estimate instead of fifteen."""
    exchange = Transcript.load("tool_session").exchanges[1]  # the unstreamed tool request
    body = exchange.request
    reported = exchange.json()["usage"]["prompt_tokens"]
    estimator = TokenEstimator()
    estimate = estimator.json(body["messages"]) + estimator.json(body["tools"])
    assert reported > 1.5 * estimate  # the server's template is far from the estimate
    assert estimator.observe_usage(estimated_prompt=estimate, reported_prompt=reported)
    corrected = estimator.calibrated(estimate)
    print(f"\nestimate {estimate} vs llama.cpp's {reported} prompt tokens; calibrated: {corrected}")
    assert abs(corrected - reported) <= 0.02 * reported + 1
    assert estimator.recalibrations == 1


def test_transcripts_hold_no_images_and_say_where_they_came_from() -> None:
    for name in ["facts", *SCENARIOS]:
        transcript = Transcript.load(name)
        assert "llama-cpp-python 0.3.36" in transcript.recorded_with["server"]
        text = json.dumps([e.request for e in transcript.exchanges])
        assert not re.search(r"[A-Za-z0-9+/=]{200,}", text)  # images replaced by their length
