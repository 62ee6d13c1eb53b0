"""The Anthropic Messages adapter through the official SDK against the wire server:
payload shape, thinking passthrough, cache breakpoints, usage, and every error class."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from harness.config import ModelConfig
from harness.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ContextOverflowError,
    EmptyResponseError,
    RateLimitError,
)
from harness.messages import (
    AssistantItem,
    ImagePart,
    InstructionItem,
    ModelRequest,
    ReasoningBlock,
    RefreshedBlock,
    SystemBlock,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
    ToolSpec,
)
from harness.providers.anthropic import MAX_CACHE_BREAKPOINTS, AnthropicModel
from harness.providers.base import Delta, RetryNotice
from tests.dialects import (
    ANTHROPIC,
    ANTHROPIC_KEY_ENV,
    ANTHROPIC_TEST_KEY,
    drain,
    drain_incomplete,
)
from tests.wire_server import (
    Reply,
    WireServer,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    anthropic_usage,
    cut_stream,
    empty_body,
    redacted_block,
    strip_images,
    text_block,
    thinking_block,
    tool_use_block,
)

PICK = ToolSpec(
    name="pick",
    description="Pick up an object.",
    parameters={
        "type": "object",
        "properties": {"ref": {"type": "string"}},
        "required": ["ref"],
    },
)
PLACE = ToolSpec(
    name="place",
    description="Place the held object.",
    parameters={"type": "object", "properties": {"on": {"type": "string"}}},
)
IMAGE = ImagePart(data=b"\xff\xd8\xff" + bytes(range(120)), width=64, height=48, label="front")
CACHED = {"type": "ephemeral"}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_TEST_KEY)


def model(server: WireServer, **overrides: Any) -> AnthropicModel:
    return AnthropicModel(ANTHROPIC.config(server, **overrides), rng=random.Random(0))


def request(**overrides: Any) -> ModelRequest:
    data: dict[str, Any] = {
        "system": [
            SystemBlock(name="system", text="You drive a robot."),
            SystemBlock(name="embodiment", text="Franka Panda on a table."),
        ],
        "tools": [PICK, PLACE],
        "items": [InstructionItem(text="pick the red cube")],
        "refreshed": RefreshedBlock(brief="Scene: red_cube_1"),
    }
    data.update(overrides)
    return ModelRequest(**data)


def exchange(call_id: str, ref: str, **assistant: Any) -> list[Any]:
    return [
        AssistantItem(
            tool_calls=[ToolCall(id=call_id, name="pick", arguments={"ref": ref})], **assistant
        ),
        ToolResultItem(call_id=call_id, name="pick", text=f"picked {ref}"),
    ]


def cache_marks(body: dict[str, Any]) -> list[str]:
    """Where the cache breakpoints are, as readable labels."""
    marks = [f"tool:{t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    marks += [f"system:{b['text'][:12]}" for b in body.get("system", []) if "cache_control" in b]
    for index, message in enumerate(body["messages"]):
        for block in message["content"]:
            if "cache_control" in block:
                label = block.get("text") or block.get("content") or block.get("id")
                marks.append(f"{index}:{block['type']}:{str(label)[:16]}")
    return marks


# --------------------------------------------------------------------------- payload


def test_payload_snapshot_with_thinking_tool_results_and_images(server: WireServer) -> None:
    items = [
        InstructionItem(text="pick the red cube"),
        AssistantItem(
            text="Picking.",
            reasoning=[
                ReasoningBlock(text="cube is near", signature="sig-1", provider="anthropic"),
                ReasoningBlock(redacted="opaque==", provider="anthropic"),
            ],
            tool_calls=[ToolCall(id="toolu_1", name="pick", arguments={"ref": "red_cube_1"})],
        ),
        ToolResultItem(
            call_id="toolu_1", name="pick", text="gripper blocked", is_error=True, error_kind="x"
        ),
        TaskNotesItem(text="phase: retry", version=2),
    ]
    refreshed = RefreshedBlock(brief="Scene: red_cube_1", images=[IMAGE])
    server.reply(anthropic_stream([text_block("ok")]))
    adapter = model(server, thinking_budget_tokens=2048, reasoning_effort="low")
    drain(adapter.stream(request(items=items, refreshed=refreshed, stable_items=2)))
    assert server.requests[0].path == "/v1/messages"
    body = strip_images(server.requests[0].body)
    assert body == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "stream": True,
        "system": [
            {"type": "text", "text": "You drive a robot."},
            {"type": "text", "text": "Franka Panda on a table.", "cache_control": CACHED},
        ],
        "tools": [
            {"name": "pick", "description": "Pick up an object.", "input_schema": PICK.parameters},
            {
                "name": "place",
                "description": "Place the held object.",
                "input_schema": PLACE.parameters,
                "cache_control": CACHED,
            },
        ],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "output_config": {"effort": "low"},
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Instruction: pick the red cube"}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "cube is near", "signature": "sig-1"},
                    {"type": "redacted_thinking", "data": "opaque=="},
                    {"type": "text", "text": "Picking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "pick",
                        "input": {"ref": "red_cube_1"},
                        "cache_control": CACHED,  # last stable item (stable_items=2)
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "gripper blocked",
                        "is_error": True,
                    },
                    {
                        "type": "text",
                        "text": "Task notes (version 2):\nphase: retry",
                        "cache_control": CACHED,  # last item: what the next request reads
                    },
                    {"type": "text", "text": "Scene: red_cube_1"},
                    {"type": "text", "text": IMAGE.ref().placeholder()},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/jpeg",
                            "data": "<164 base64 chars>",
                        },
                    },
                ],
            },
        ],
    }
    image = server.requests[0].body["messages"][2]["content"][4]["source"]["data"]
    assert image == IMAGE.base64
    assert "temperature" not in body


def test_cache_breakpoints_follow_the_stable_prefix_and_never_exceed_four(
    server: WireServer,
) -> None:
    items: list[Any] = [InstructionItem(text="go")]
    for n in range(6):
        items += exchange(f"toolu_{n}", f"cube_{n}")
    adapter = model(server)
    server.reply(anthropic_stream([text_block("a")]), anthropic_stream([text_block("b")]))
    drain(adapter.stream(request(items=items, stable_items=5)))
    drain(adapter.stream(request(items=items, stable_items=0)))
    first, second = (r.body for r in server.requests)
    assert cache_marks(first) == [
        "tool:place",
        "system:Franka Panda",
        "4:tool_result:picked cube_1",  # item 4 is the second result
        "12:tool_result:picked cube_5",
    ]
    assert cache_marks(second) == [
        "tool:place",
        "system:Franka Panda",
        "12:tool_result:picked cube_5",
    ]
    assert all(len(cache_marks(body)) <= MAX_CACHE_BREAKPOINTS for body in (first, second))


def test_caching_can_be_switched_off_and_uses_the_configured_ttl(server: WireServer) -> None:
    server.reply(anthropic_stream([text_block("a")]), anthropic_stream([text_block("b")]))
    drain(model(server, options={"prompt_caching": False}).stream(request()))
    drain(model(server, options={"cache_ttl": "1h"}).stream(request()))
    assert cache_marks(server.requests[0].body) == []
    system = server.requests[1].body["system"]
    assert system[-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_budgeted_thinking_is_disabled_when_the_last_tool_turn_has_no_signed_thinking(
    server: WireServer,
) -> None:
    unsigned = [ReasoningBlock(text="from a local model", provider="openai:reasoning")]
    items = [InstructionItem(text="go"), *exchange("call.7", "a", reasoning=unsigned)]
    server.reply(anthropic_stream([text_block("a")]), anthropic_stream([text_block("b")]))
    adapter = model(server, thinking_budget_tokens=1024)
    drain(adapter.stream(request(items=items)))
    body = server.requests[0].body
    assert body["thinking"] == {"type": "disabled"}
    assistant = body["messages"][1]
    assert [b["type"] for b in assistant["content"]] == ["tool_use"]
    assert assistant["content"][0]["id"] == "call_7"  # sanitised, and paired:
    assert body["messages"][2]["content"][0]["tool_use_id"] == "call_7"
    signed = [ReasoningBlock(text="t", signature="s", provider="anthropic")]
    items = [InstructionItem(text="go"), *exchange("toolu_1", "a", reasoning=signed)]
    drain(adapter.stream(request(items=items)))
    assert server.requests[1].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_adaptive_thinking_and_small_requests(server: WireServer) -> None:
    server.reply(anthropic_stream([text_block("a")]), anthropic_stream([text_block("b")]))
    drain(model(server, options={"thinking": "adaptive"}).stream(request()))
    drain(model(server, thinking_budget_tokens=2048).stream(request(max_output_tokens=1024)))
    assert server.requests[0].body["thinking"] == {"type": "adaptive"}
    assert server.requests[1].body["thinking"] == {"type": "disabled"}
    assert server.requests[1].body["max_tokens"] == 1024


def test_roles_alternate_and_start_and_end_with_the_user(server: WireServer) -> None:
    items = [
        AssistantItem(text="(resumed) I was picking."),
        AssistantItem(text=""),
        InstructionItem(text="continue"),
        AssistantItem(text="done"),
    ]
    server.reply(anthropic_stream([text_block("a")]))
    drain(model(server).stream(request(items=items, refreshed=None)))
    messages = server.requests[0].body["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    texts = [b.get("text") for m in messages for b in m["content"]]
    assert "" not in texts and "(no text)" in texts


# --------------------------------------------------------------------------- streaming


def test_stream_yields_deltas_and_keeps_thinking_with_its_signature(server: WireServer) -> None:
    server.reply(
        anthropic_stream(
            [
                thinking_block("The cube is left of the tray.", "EqQBCkgIARABGAIiQ..."),
                redacted_block("EmwKAhgBEgy3va3pzix/LafPsn4a"),
                text_block("Picking it up."),
                tool_use_block("toolu_01", "pick", {"ref": "red_cube_1"}),
            ],
            usage=anthropic_usage(300, 50, cache_read=1200, cache_write=400),
            model="claude-sonnet-4-6-20260101",
        )
    )
    chunks, response = drain(model(server).stream(request()))
    deltas = [c for c in chunks if isinstance(c, Delta)]
    assert "".join(d.text for d in deltas if d.kind == "reasoning") == (
        "The cube is left of the tray."
    )
    assert "".join(d.text for d in deltas if d.kind == "text") == "Picking it up."
    arguments = [d for d in deltas if d.kind == "tool_arguments"]
    assert len(arguments) > 1 and {d.tool_call_id for d in arguments} == {"toolu_01"}
    assert response.reasoning == [
        ReasoningBlock(
            text="The cube is left of the tray.",
            signature="EqQBCkgIARABGAIiQ...",
            provider="anthropic",
        ),
        ReasoningBlock(redacted="EmwKAhgBEgy3va3pzix/LafPsn4a", provider="anthropic"),
    ]
    assert response.tool_calls == [
        ToolCall(id="toolu_01", name="pick", arguments={"ref": "red_cube_1"})
    ]
    assert response.stop_reason == "tool_use" and response.model == "claude-sonnet-4-6-20260101"
    usage = response.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        300,
        1200,
        400,
    )
    assert usage.output_tokens == 50 and usage.prompt_tokens == 1900


def test_thinking_round_trip_sends_the_blocks_back_unchanged(server: WireServer) -> None:
    server.reply(
        anthropic_stream(
            [
                thinking_block("plan: pick", "sig-abc"),
                tool_use_block("toolu_1", "pick", {"ref": "a"}),
            ]
        ),
        anthropic_stream([text_block("done")]),
    )
    adapter = model(server, thinking_budget_tokens=1024)
    _, response = drain(adapter.stream(request()))
    items = [
        InstructionItem(text="go"),
        AssistantItem(reasoning=response.reasoning, tool_calls=response.tool_calls),
        ToolResultItem(call_id="toolu_1", name="pick", text="ok"),
    ]
    drain(adapter.stream(request(items=items)))
    assistant = server.requests[1].body["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "plan: pick",
        "signature": "sig-abc",
    }
    assert server.requests[1].body["thinking"]["type"] == "enabled"


def test_invalid_tool_json_is_kept_raw(server: WireServer) -> None:
    broken = dict(tool_use_block("toolu_1", "pick", {}), raw_json='{"ref": "cube"')
    server.reply(anthropic_stream([broken]))
    _, response = drain(model(server).stream(request()))
    assert response.tool_calls[0].raw_arguments == '{"ref": "cube"'
    assert response.tool_calls[0].arguments == {}


def test_non_streaming_mode(server: WireServer) -> None:
    server.reply(
        anthropic_message(
            [thinking_block("hm", "sig"), tool_use_block("toolu_9", "place", {"on": "tray"})],
            usage=anthropic_usage(10, 5, cache_read=90),
        )
    )
    chunks, response = drain(model(server, stream=False).stream(request()))
    assert len(chunks) == 1 and "stream" not in server.requests[0].body
    assert response.tool_calls[0].arguments == {"on": "tray"}
    assert response.reasoning[0].signature == "sig"
    assert response.usage.prompt_tokens == 100


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("reply", "error_type", "status"),
    [
        (
            anthropic_error(
                400, "invalid_request_error", "prompt is too long: 210443 tokens > 200000 maximum"
            ),
            ContextOverflowError,
            400,
        ),
        (
            anthropic_error(
                400,
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000",
            ),
            ContextOverflowError,
            400,
        ),
        (
            anthropic_error(413, "request_too_large", "Request exceeds the maximum size"),
            ContextOverflowError,
            413,
        ),
        (
            anthropic_error(401, "authentication_error", "invalid x-api-key"),
            AuthenticationError,
            401,
        ),
        (anthropic_error(403, "permission_error", "no access"), AuthenticationError, 403),
        (
            anthropic_error(400, "invalid_request_error", "tools.0.name: bad"),
            BadRequestError,
            400,
        ),
    ],
    ids=["prompt-too-long", "exceed-context-limit", "413", "401", "403", "400"],
)
def test_errors_map_to_named_errors_without_retrying(
    server: WireServer, reply: Reply, error_type: type[Exception], status: int
) -> None:
    server.reply(reply)
    with pytest.raises(error_type) as caught:
        list(model(server).stream(request()))
    assert type(caught.value) is error_type
    assert caught.value.status_code == status  # type: ignore[attr-defined]
    assert len(server.requests) == 1


def test_response_cut_off_by_the_window_is_an_overflow(server: WireServer) -> None:
    server.reply(
        anthropic_stream([text_block("I will now")], stop_reason="model_context_window_exceeded")
    )
    with pytest.raises(ContextOverflowError, match="model_context_window_exceeded"):
        list(model(server).stream(request()))


def test_rate_limit_honours_retry_after_then_succeeds(server: WireServer) -> None:
    server.reply(
        anthropic_error(
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
            headers={"retry-after": "0.03"},
        ),
        anthropic_error(529, "overloaded_error", "Overloaded"),
        anthropic_stream([text_block("ok")]),
    )
    chunks, response = drain(model(server).stream(request()))
    notices = [c for c in chunks if isinstance(c, RetryNotice)]
    assert [(n.attempt, n.error_kind) for n in notices] == [(1, "rate_limit"), (2, "transient")]
    assert notices[0].wait_s == 0.03 and "HTTP 429" in notices[0].message
    assert response.text == "ok" and len(server.requests) == 3


def test_overloaded_error_inside_the_stream_is_retried(server: WireServer) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    started = anthropic_stream([text_block("partial")]).events or []
    server.reply(
        Reply(events=[*started[:4], ("error", json.dumps(error))]),  # after one text delta
        anthropic_stream([text_block("complete")]),
    )
    chunks, response = drain(model(server).stream(request()))
    notice = next(c for c in chunks if isinstance(c, RetryNotice))
    assert notice.error_kind == "transient" and "Overloaded" in notice.message
    assert "partial response streamed so far is discarded" in notice.message
    assert response.text == "complete"


def test_rate_limit_exhausts_retries(server: WireServer) -> None:
    server.responder = lambda r: anthropic_error(429, "rate_limit_error", "slow down")
    with pytest.raises(RateLimitError, match="gave up after 1 retries"):
        list(model(server, max_retries=1).stream(request()))
    assert len(server.requests) == 2


def test_timeout_then_success(server: WireServer) -> None:
    server.reply(Reply(delay_s=30.0, body={}), anthropic_stream([text_block("ok")]))
    chunks, response = drain(model(server, timeout_s=0.5).stream(request()))
    assert any(isinstance(c, RetryNotice) and "no response within" in c.message for c in chunks)
    assert response.text == "ok"


# --------------------------------------------------------------------------- config


def test_missing_key_names_the_setting_and_the_variable(
    monkeypatch: pytest.MonkeyPatch, server: WireServer
) -> None:
    monkeypatch.delenv(ANTHROPIC_KEY_ENV)
    with pytest.raises(ConfigError) as caught:
        model(server)
    assert caught.value.key == "model.api_key_env"
    assert ANTHROPIC_KEY_ENV in str(caught.value)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(ModelConfig(provider="anthropic", name="claude-opus-4-8"))


def test_thinking_budget_must_fit_in_the_output_limit(server: WireServer) -> None:
    with pytest.raises(ConfigError) as caught:
        model(server, thinking_budget_tokens=4096, max_output_tokens=4096)
    assert caught.value.key == "model.thinking_budget_tokens"


# --------------------------------------------------------------------------- incomplete answers


def _tool_stream() -> Reply:
    return anthropic_stream([tool_use_block("toolu_1", "pick", {"ref": "red_cube_1"})], piece=4)


def _index_of(reply: Reply, event_name: str, nth: int = 0) -> int:
    assert reply.events is not None
    found = [i for i, (name, _) in enumerate(reply.events) if name == event_name]
    return found[nth]


@pytest.mark.parametrize(
    ("label", "cut"),
    [
        (
            "text cut mid-sentence",
            lambda: cut_stream(anthropic_stream([text_block("Placed the cube in the")]), keep=5),
        ),
        (
            "tool use cut after its name",
            lambda: cut_stream(
                _tool_stream(), keep=_index_of(_tool_stream(), "content_block_start") + 1
            ),
        ),
        (
            "tool use cut mid-arguments",
            lambda: cut_stream(
                _tool_stream(), keep=_index_of(_tool_stream(), "content_block_delta", 2)
            ),
        ),
        (
            "everything but message_stop",
            lambda: cut_stream(anthropic_stream([text_block("done")]), keep=-1),
        ),
        ("empty 200 stream", lambda: Reply(events=[])),
        ("empty 200 body", lambda: empty_body()),
    ],
)
def test_an_incomplete_answer_is_an_error_never_a_final(
    server: WireServer, label: str, cut: Any
) -> None:
    server.responder = lambda recorded: cut()
    stream = model(server, max_retries=2, stream=label != "empty 200 body").stream(request())
    drain_incomplete(stream, retries=2)
    assert len(server.requests) == 3


def test_an_empty_final_answer_is_retried_once_then_fails(server: WireServer) -> None:
    server.responder = lambda recorded: anthropic_stream([text_block("")])
    with pytest.raises(EmptyResponseError):
        list(model(server, max_retries=3).stream(request()))
    assert len(server.requests) == 2


def test_images_are_left_out_when_vision_is_off(server: WireServer) -> None:
    server.reply(anthropic_stream([text_block("ok")]))
    refreshed = RefreshedBlock(brief="Scene: red_cube_1", images=[IMAGE])
    drain(model(server, vision=False).stream(request(refreshed=refreshed)))
    last = server.requests[0].body["messages"][-1]["content"][-2:]
    assert [b["type"] for b in last] == ["text", "text"]
    assert last[0]["text"] == "Scene: red_cube_1"
    assert last[1]["text"].startswith(IMAGE.ref().placeholder()) and "not shown" in last[1]["text"]
