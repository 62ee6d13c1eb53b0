"""The OpenAI Chat Completions adapter through the official SDK against the wire server:
payload shape, streaming assembly, reasoning, usage, and every error class."""

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
    IncompleteResponseError,
    RateLimitError,
    TransientModelError,
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
from harness.providers.base import Chunk, Delta, Final, RetryNotice
from harness.providers.openai import OpenAIChatModel
from tests.dialects import OPENAI, drain, drain_incomplete
from tests.wire_server import (
    Reply,
    WireServer,
    cut_stream,
    empty_body,
    openai_completion,
    openai_error,
    openai_stream,
    openai_usage,
    sse_bytes,
    strip_images,
)

PICK = ToolSpec(
    name="pick",
    description="Pick up an object.",
    parameters={
        "type": "object",
        "properties": {"ref": {"type": "string", "description": "object ref"}},
        "required": ["ref"],
        "additionalProperties": False,
    },
)
IMAGE = ImagePart(data=b"\xff\xd8\xff" + bytes(range(200)), width=64, height=48, label="front")


def model(server: WireServer, **overrides: Any) -> OpenAIChatModel:
    config = OPENAI.config(server, **{"name": "qwen2.5-vl-7b", **overrides})
    return OpenAIChatModel(config, rng=random.Random(0))


def request(**overrides: Any) -> ModelRequest:
    data: dict[str, Any] = {
        "system": [SystemBlock(name="system", text="You drive a robot.")],
        "tools": [PICK],
        "items": [InstructionItem(text="pick the red cube")],
        "refreshed": RefreshedBlock(brief="Scene: red_cube_1", observation="Observation at t=0"),
    }
    data.update(overrides)
    return ModelRequest(**data)


# --------------------------------------------------------------------------- payload


def test_payload_snapshot_for_a_tool_exchange_with_an_image(server: WireServer) -> None:
    items = [
        InstructionItem(text="pick the red cube"),
        AssistantItem(
            text="Picking.",
            tool_calls=[ToolCall(id="call_1", name="pick", arguments={"ref": "red_cube_1"})],
        ),
        ToolResultItem(
            call_id="call_1", name="pick", text="gripper blocked", is_error=True, error_kind="exec"
        ),
        TaskNotesItem(text="phase: retry", version=2),
    ]
    refreshed = RefreshedBlock(brief="Scene: red_cube_1", images=[IMAGE])
    server.reply(openai_stream("ok"))
    drain(model(server, image_detail="low").stream(request(items=items, refreshed=refreshed)))
    body = strip_images(server.requests[0].body)
    assert server.requests[0].path == "/v1/chat/completions"
    assert body == {
        "model": "qwen2.5-vl-7b",
        "messages": [
            {"role": "system", "content": "You drive a robot."},
            {"role": "user", "content": "Instruction: pick the red cube"},
            {
                "role": "assistant",
                "content": "Picking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "pick", "arguments": '{"ref": "red_cube_1"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "[error: exec] gripper blocked"},
            {"role": "user", "content": "Task notes (version 2):\nphase: retry"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Scene: red_cube_1"},
                    {"type": "text", "text": IMAGE.ref().placeholder()},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/jpeg;base64,<295 chars>", "detail": "low"},
                    },
                ],
            },
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "pick",
                    "description": "Pick up an object.",
                    "parameters": PICK.parameters,
                },
            }
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "max_tokens": 4096,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    image_url = server.requests[0].body["messages"][-1]["content"][2]["image_url"]["url"]
    assert image_url == f"data:image/jpeg;base64,{IMAGE.base64}"


def test_hosted_openai_payload_differences() -> None:
    """Hosted reasoning models get max_completion_tokens and no temperature."""

    class Offline:  # never called: build_payload is pure
        def close(self) -> None: ...

    config = ModelConfig(provider="openai", name="o3-mini", reasoning_effort="high")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijkl")
        hosted = OpenAIChatModel(config, client=Offline())
        chat = OpenAIChatModel(
            config.model_copy(update={"name": "gpt-4.1-mini", "reasoning_effort": None}),
            client=Offline(),
        )
    payload = hosted.build_payload(request(max_output_tokens=512))
    assert payload["max_completion_tokens"] == 512 and "max_tokens" not in payload
    assert "temperature" not in payload and payload["reasoning_effort"] == "high"
    assert hosted.image_cost == "openai" and hosted.context_window == 200_000
    assert chat.build_payload(request())["temperature"] == 0.0


def test_extra_body_and_headers_reach_the_server(server: WireServer) -> None:
    server.reply(openai_stream("ok"))
    options = {
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
        "extra_headers": {"X-Robot": "panda-1"},
        "parallel_tool_calls": True,
        "stream_usage": False,
    }
    drain(model(server, options=options).stream(request()))
    recorded = server.requests[0]
    assert recorded.body["chat_template_kwargs"] == {"enable_thinking": False}
    assert recorded.headers["x-robot"] == "panda-1"
    assert "parallel_tool_calls" not in recorded.body and "stream_options" not in recorded.body


def test_no_tools_means_no_tool_fields(server: WireServer) -> None:
    server.reply(openai_stream("ok"))
    drain(model(server).stream(request(tools=[])))
    body = server.requests[0].body
    assert "tools" not in body and "parallel_tool_calls" not in body


def test_unanswered_and_duplicate_call_ids_still_make_a_valid_history(server: WireServer) -> None:
    """A resumed session may hold a call without result, and some servers reuse ids."""
    items = [
        InstructionItem(text="go"),
        AssistantItem(tool_calls=[ToolCall(id="call_0", name="pick", arguments={"ref": "a"})]),
        ToolResultItem(call_id="call_0", name="pick", text="ok a"),
        AssistantItem(tool_calls=[ToolCall(id="call_0", name="pick", arguments={"ref": "b"})]),
        ToolResultItem(call_id="call_0", name="pick", text="ok b"),
        AssistantItem(tool_calls=[ToolCall(id="call_9", name="pick", arguments={"ref": "c"})]),
        InstructionItem(text="resumed after a crash"),
    ]
    server.reply(openai_stream("ok"))
    drain(model(server).stream(request(items=items, refreshed=None)))
    messages = server.requests[0].body["messages"]
    shape = [(m["role"], m.get("tool_call_id") or "") for m in messages]
    assert shape == [
        ("system", ""),
        ("user", ""),
        ("assistant", ""),
        ("tool", "call_0"),
        ("assistant", ""),
        ("tool", "call_0_2"),
        ("assistant", ""),
        ("tool", "call_9"),
        ("user", ""),
    ]
    assert messages[4]["tool_calls"][0]["id"] == "call_0_2"
    assert messages[5]["content"] == "ok b"
    assert "No result was recorded" in messages[7]["content"]


# --------------------------------------------------------------------------- streaming


def test_stream_yields_deltas_then_assembles_calls_reasoning_and_usage(server: WireServer) -> None:
    server.reply(
        openai_stream(
            "I will pick it.",
            reasoning="The cube is left of the tray.",
            tool_calls=[("call_7", "pick", {"ref": "red_cube_1"})],
            usage=openai_usage(1200, 40, cached=1000),
            model="qwen2.5-vl-7b-instruct",
        )
    )
    chunks, response = drain(model(server).stream(request()))
    deltas = [c for c in chunks if isinstance(c, Delta)]
    assert [d.kind for d in deltas] == sorted(
        (d.kind for d in deltas), key=["reasoning", "text", "tool_arguments"].index
    )
    assert "".join(d.text for d in deltas if d.kind == "text") == "I will pick it."
    assert "".join(d.text for d in deltas if d.kind == "reasoning") == (
        "The cube is left of the tray."
    )
    arguments = [d for d in deltas if d.kind == "tool_arguments"]
    assert len(arguments) > 1 and {d.tool_call_id for d in arguments} == {"call_7"}
    assert response.text == "I will pick it."
    assert response.tool_calls == [
        ToolCall(id="call_7", name="pick", arguments={"ref": "red_cube_1"})
    ]
    assert response.reasoning == [
        ReasoningBlock(text="The cube is left of the tray.", provider="openai:reasoning_content")
    ]
    assert response.stop_reason == "tool_use" and response.model == "qwen2.5-vl-7b-instruct"
    usage = response.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (200, 1000, 40)
    assert usage.prompt_tokens == 1200 and usage.requests == 1


def test_interleaved_fragments_of_several_calls_assemble_separately(server: WireServer) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return None, json.dumps(
            {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [choice],
            }
        )

    def fragment(index: int, **function: str) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, "function": function}]}

    events = [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "a",
                        "type": "function",
                        "function": {"name": "pick", "arguments": '{"ref": '},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "b",
                        "type": "function",
                        "function": {"name": "place", "arguments": '{"on"'},
                    }
                ]
            }
        ),
        chunk(fragment(0, arguments='"cube"}')),
        chunk(fragment(1, arguments=': "tray"}')),
        chunk({}, "tool_calls"),
        (None, "[DONE]"),
    ]
    server.reply(Reply(events=events))
    _, response = drain(model(server).stream(request()))
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("a", "pick", {"ref": "cube"}),
        ("b", "place", {"on": "tray"}),
    ]
    assert response.usage.requests == 1 and response.usage.prompt_tokens == 0  # not reported


@pytest.mark.parametrize(
    ("arguments", "parsed", "raw"),
    [
        ('{"ref": "cube"', {}, '{"ref": "cube"'),
        ('["cube"]', {}, '["cube"]'),
        (json.dumps(json.dumps({"ref": "cube"})), {"ref": "cube"}, None),
        ("", {}, None),
    ],
)
def test_tool_argument_text_that_is_not_an_object_is_kept_raw(
    server: WireServer, arguments: str, parsed: dict[str, Any], raw: str | None
) -> None:
    server.reply(openai_stream(tool_calls=[("c", "pick", arguments)]))
    _, response = drain(model(server).stream(request()))
    assert response.tool_calls[0].arguments == parsed
    assert response.tool_calls[0].raw_arguments == raw


def test_non_streaming_mode(server: WireServer) -> None:
    server.reply(
        openai_completion(
            "Picking.",
            tool_calls=[("call_1", "pick", {"ref": "x"})],
            reasoning="thinking aloud",
            reasoning_field="reasoning",
            usage=openai_usage(500, 20, cached=100),
        )
    )
    chunks, response = drain(model(server, stream=False).stream(request()))
    assert len(chunks) == 1
    assert "stream" not in server.requests[0].body
    assert response.tool_calls[0].arguments == {"ref": "x"}
    assert response.reasoning[0].provider == "openai:reasoning"
    assert (response.usage.input_tokens, response.usage.cache_read_tokens) == (400, 100)


def test_cancel_mid_stream_stops_without_a_final(server: WireServer) -> None:
    server.reply(openai_stream("a long answer that keeps going and going", piece=2))
    seen: list[Chunk] = []
    for chunk in model(server).stream(request(), cancelled=lambda: len(seen) >= 3):
        seen.append(chunk)
    assert len(seen) == 3 and not any(isinstance(c, Final) for c in seen)


# --------------------------------------------------------------------------- reasoning


@pytest.mark.parametrize("wire_field", ["reasoning_content", "reasoning"])
def test_reasoning_goes_back_on_tool_call_turns_in_its_own_field(
    server: WireServer, wire_field: str
) -> None:
    server.reply(
        openai_stream(
            reasoning="left of tray",
            tool_calls=[("c1", "pick", {"ref": "a"})],
            reasoning_field=wire_field,
        )
    )
    adapter = model(server)
    _, response = drain(adapter.stream(request()))
    items = [
        InstructionItem(text="go"),
        AssistantItem(reasoning=response.reasoning, tool_calls=response.tool_calls),
        ToolResultItem(call_id="c1", name="pick", text="ok"),
        AssistantItem(
            text="done",
            reasoning=[ReasoningBlock(text="final thoughts", provider=f"openai:{wire_field}")],
        ),
        InstructionItem(text="next task"),
    ]
    server.reply(openai_stream("ok"))
    drain(adapter.stream(request(items=items)))
    assistants = [m for m in server.requests[1].body["messages"] if m["role"] == "assistant"]
    assert assistants[0][wire_field] == "left of tray"
    assert set(assistants[0]) == {"role", "content", "tool_calls", wire_field}
    assert wire_field not in assistants[1]  # not a tool-call turn


def test_reasoning_from_another_provider_is_not_sent(server: WireServer) -> None:
    items = [
        InstructionItem(text="go"),
        AssistantItem(
            reasoning=[ReasoningBlock(text="t", signature="sig", provider="anthropic")],
            tool_calls=[ToolCall(id="c1", name="pick", arguments={"ref": "a"})],
        ),
        ToolResultItem(call_id="c1", name="pick", text="ok"),
    ]
    server.reply(openai_stream("ok"))
    drain(model(server).stream(request(items=items)))
    assistant = next(m for m in server.requests[0].body["messages"] if m["role"] == "assistant")
    assert "reasoning_content" not in assistant and "reasoning" not in assistant


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("reply", "error_type", "status"),
    [
        (openai_error(400, "too long", code="context_length_exceeded"), ContextOverflowError, 400),
        (
            openai_error(
                400,
                "This model's maximum context length is 4096 tokens. However, you "
                "requested 5000 tokens",
                type="BadRequestError",
            ),
            ContextOverflowError,
            400,
        ),
        (
            Reply(
                400,
                {
                    "error": {
                        "code": 400,
                        "type": "exceed_context_size_error",
                        "message": "the request exceeds the available context size",
                    }
                },
            ),
            ContextOverflowError,
            400,
        ),
        (Reply(413, {"error": {"message": "Payload Too Large"}}), ContextOverflowError, 413),
        (openai_error(401, "Incorrect API key provided"), AuthenticationError, 401),
        (openai_error(403, "not allowed"), AuthenticationError, 403),
        (openai_error(400, "Invalid value for 'tools'"), BadRequestError, 400),
        (openai_error(404, "The model `nope` does not exist"), BadRequestError, 404),
        (
            openai_error(
                429,
                "You exceeded your current quota",
                code="insufficient_quota",
                type="insufficient_quota",
            ),
            RateLimitError,
            429,
        ),
    ],
    ids=[
        "overflow-code",
        "overflow-vllm",
        "overflow-llamacpp",
        "413",
        "401",
        "403",
        "400",
        "404",
        "quota",
    ],
)
def test_errors_map_to_named_errors_without_retrying(
    server: WireServer, reply: Reply, error_type: type[Exception], status: int
) -> None:
    server.reply(reply)
    with pytest.raises(error_type) as caught:
        list(model(server).stream(request()))
    assert caught.value.status_code == status  # type: ignore[attr-defined]
    assert type(caught.value) is error_type
    assert len(server.requests) == 1


def test_404_and_missing_key_errors_say_what_to_check(server: WireServer) -> None:
    server.reply(openai_error(404, "no such model"), openai_error(401, "key required"))
    with pytest.raises(BadRequestError, match=r"check model\.name and model\.base_url"):
        list(model(server).stream(request()))
    with pytest.raises(AuthenticationError, match=r"no API key was sent: set model\.api_key_env"):
        list(model(server).stream(request()))


def test_rate_limit_honours_retry_after_seconds(server: WireServer) -> None:
    server.reply(
        openai_error(429, "Rate limit reached", type="requests", headers={"retry-after": "0.05"}),
        openai_stream("ok"),
    )
    chunks, response = drain(model(server).stream(request()))
    notices = [c for c in chunks if isinstance(c, RetryNotice)]
    assert notices == [
        RetryNotice(attempt=1, error_kind="rate_limit", message=notices[0].message, wait_s=0.05)
    ]
    assert "openai HTTP 429: Rate limit reached" in notices[0].message
    assert response.text == "ok"


def test_rate_limit_asking_for_too_long_a_wait_fails_at_once(server: WireServer) -> None:
    server.reply(openai_error(429, "slow", headers={"retry-after": "600"}))
    with pytest.raises(RateLimitError, match="asks to wait 600 s"):
        list(model(server).stream(request()))
    assert len(server.requests) == 1


def test_server_error_then_success_is_retried_with_backoff(server: WireServer) -> None:
    server.reply(openai_error(503, "overloaded", type="server_error"), openai_stream("ok"))
    chunks, response = drain(model(server).stream(request()))
    notice = next(c for c in chunks if isinstance(c, RetryNotice))
    assert notice.error_kind == "transient" and 0 <= notice.wait_s <= 0.001
    assert response.text == "ok" and len(server.requests) == 2


def test_timeout_then_success(server: WireServer) -> None:
    server.reply(Reply(delay_s=30.0, body={}), openai_stream("ok"))
    chunks, response = drain(model(server, timeout_s=0.5).stream(request()))
    notice = next(c for c in chunks if isinstance(c, RetryNotice))
    assert notice.error_kind == "transient" and "no response within 0.5 s" in notice.message
    assert response.text == "ok"


def test_dropped_connection_is_transient(server: WireServer) -> None:
    server.reply(Reply(drop=True), openai_stream("ok"))
    chunks, response = drain(model(server).stream(request()))
    assert any(isinstance(c, RetryNotice) and "cannot reach" in c.message for c in chunks)
    assert response.text == "ok"


def test_error_inside_a_stream_is_mapped(server: WireServer) -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error"}}
    server.reply(
        Reply(events=[(None, json.dumps(error))]),
        Reply(
            events=[(None, json.dumps({"error": {"message": "maximum context length is 8192"}}))]
        ),
    )
    with pytest.raises(ContextOverflowError):
        list(model(server).stream(request()))
    assert len(server.requests) == 2  # the first was retried as transient


def test_connection_refused_gives_up_after_max_retries() -> None:
    with WireServer() as wire:
        url = wire.openai_url
    adapter = OpenAIChatModel(
        ModelConfig(
            provider="openai",
            name="m",
            base_url=url,
            context_window=1000,
            max_retries=2,
            options={"retry_base_s": 0.001, "retry_max_s": 0.002},
        )
    )
    notices: list[Chunk] = []
    with pytest.raises(TransientModelError, match="gave up after 2 retries") as caught:
        for chunk in adapter.stream(request()):
            notices.append(chunk)
    assert len(notices) == 2 and url in str(caught.value)


# --------------------------------------------------------------------------- config


def test_hosted_openai_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as caught:
        OpenAIChatModel(ModelConfig(provider="openai", name="gpt-4.1-mini"))
    assert caught.value.key == "model.api_key_env"
    assert "OPENAI_API_KEY" in str(caught.value) and "model.api_key_env" in str(caught.value)


def test_local_server_with_a_named_key_variable_needs_it(
    monkeypatch: pytest.MonkeyPatch, server: WireServer
) -> None:
    monkeypatch.delenv("MY_VLLM_KEY", raising=False)
    with pytest.raises(ConfigError, match="MY_VLLM_KEY"):
        model(server, api_key_env="MY_VLLM_KEY")
    monkeypatch.setenv("MY_VLLM_KEY", "local-secret-123456")
    server.reply(openai_stream("ok"))
    drain(model(server, api_key_env="MY_VLLM_KEY").stream(request()))
    assert server.requests[0].headers["authorization"] == "Bearer local-secret-123456"


def test_unknown_option_and_misplaced_thinking_budget_are_config_errors(
    server: WireServer,
) -> None:
    with pytest.raises(ConfigError) as caught:
        model(server, options={"retry_base": 1})
    assert caught.value.key == "model.options.retry_base"
    with pytest.raises(ConfigError) as caught:
        model(server, thinking_budget_tokens=2048)
    assert caught.value.key == "model.thinking_budget_tokens"


# --------------------------------------------------------------------------- incomplete answers


def _tool_stream() -> Reply:
    return openai_stream(tool_calls=[("call_1", "pick", {"ref": "red_cube_1"})], piece=4)


def _index_of(reply: Reply, needle: str) -> int:
    assert reply.events is not None
    return next(i for i, (_, data) in enumerate(reply.events) if needle in data)


@pytest.mark.parametrize(
    ("label", "cut"),
    [
        ("text cut mid-sentence", lambda: cut_stream(openai_stream("Placed the cube in"), keep=3)),
        (
            "tool call cut after its name",
            lambda: cut_stream(_tool_stream(), keep=_index_of(_tool_stream(), '"name"') + 1),
        ),
        (
            "tool call cut mid-arguments",
            lambda: cut_stream(_tool_stream(), keep=_index_of(_tool_stream(), '"name"') + 3),
        ),
        ("no finish_reason, no [DONE]", lambda: cut_stream(openai_stream("hello"), keep=-3)),
        ("empty 200 body", lambda: empty_body()),
    ],
)
def test_an_incomplete_answer_is_an_error_never_a_final(
    server: WireServer, label: str, cut: Any
) -> None:
    server.responder = lambda recorded: cut()
    error = drain_incomplete(model(server, max_retries=2).stream(request()), retries=2)
    assert "gave up after 2 retries" in str(error)
    assert "incomplete response" in str(error) or "malformed" in str(error), label


def test_a_body_broken_off_by_the_transport_is_incomplete(server: WireServer) -> None:
    """Content-Length promises more than arrives: the SDK's read fails mid-body."""
    body = sse_bytes(openai_stream("a sentence that never ends").events or [])
    broken = Reply(
        raw=body[: len(body) // 2],
        headers={"Content-Type": "text/event-stream", "Content-Length": str(len(body))},
    )
    server.reply(broken)
    with pytest.raises(IncompleteResponseError):
        list(model(server, max_retries=0).stream(request()))


def test_a_complete_stream_without_usage_says_usage_was_not_reported(server: WireServer) -> None:
    events = openai_stream("done").events or []
    finish = _index_of(Reply(events=events), '"finish_reason": "stop"')
    server.reply(Reply(events=[*events[: finish + 1], (None, "[DONE]")]))
    chunks = list(model(server).stream(request()))
    final = chunks[-1]
    assert isinstance(final, Final) and final.response.text == "done"
    assert final.usage_reported is False and final.response.usage.prompt_tokens == 0
    server.reply(openai_stream("done"))
    final = list(model(server).stream(request()))[-1]
    assert isinstance(final, Final) and final.usage_reported is True


def test_an_empty_final_answer_is_retried_once_then_fails(server: WireServer) -> None:
    server.responder = lambda recorded: openai_stream("", finish_reason="stop")
    with pytest.raises(EmptyResponseError, match="neither text nor a tool call") as caught:
        list(model(server, max_retries=3).stream(request()))
    assert len(server.requests) == 2  # one retry, whatever model.max_retries says
    assert "retried once at most" in str(caught.value)
    server.responder = None
    server.reply(openai_stream("  \n", finish_reason="stop"), openai_stream("Done."))
    _, response = drain(model(server).stream(request()))
    assert response.text == "Done."


def test_a_stream_that_carried_nothing_is_asked_again_unstreamed(server: WireServer) -> None:
    """llama.cpp answers a streamed request it cannot serve with an empty 200 stream."""
    server.reply(Reply(events=[]), openai_completion("Placed."))
    _, response = drain(model(server).stream(request(tools=[])))
    assert response.text == "Placed."
    assert [r.body.get("stream") for r in server.requests] == [True, None]
    assert "stream_options" not in server.requests[1].body


def test_a_server_that_cannot_stream_tool_requests_is_remembered(server: WireServer) -> None:
    adapter = model(server)
    server.reply(Reply(events=[]), openai_completion(tool_calls=[("c1", "pick", {"ref": "a"})]))
    _, response = drain(adapter.stream(request()))
    assert response.tool_calls[0].arguments == {"ref": "a"}
    assert adapter.streams_tool_requests is False
    server.reply(openai_completion(tool_calls=[("c2", "pick", {"ref": "b"})]), openai_stream("ok"))
    drain(adapter.stream(request()))
    drain(adapter.stream(request(tools=[])))  # tool-less requests still stream
    assert [r.body.get("stream") for r in server.requests] == [True, None, None, True]


def test_a_refusal_to_stream_with_tools_falls_back_and_is_remembered(server: WireServer) -> None:
    """Builds that report the refusal as an error rather than an empty stream."""
    refusal = openai_error(
        500, "Automatic streaming tool choice is not supported", type="internal_server_error"
    )
    adapter = model(server)
    server.reply(refusal, openai_completion(tool_calls=[("c1", "pick", {"ref": "a"})]))
    _, response = drain(adapter.stream(request()))
    assert response.tool_calls and adapter.streams_tool_requests is False
    assert [r.body.get("stream") for r in server.requests] == [True, None]


def test_tool_choice_is_auto_with_tools_and_absent_without(server: WireServer) -> None:
    server.reply(openai_stream("ok"), openai_stream("ok"))
    drain(model(server).stream(request()))
    drain(model(server).stream(request(tools=[])))
    with_tools, without = (r.body for r in server.requests)
    assert with_tools["tool_choice"] == "auto"
    assert "tool_choice" not in without and "tools" not in without


def test_assistant_tool_turns_without_text_send_an_empty_string(server: WireServer) -> None:
    items = [
        InstructionItem(text="go"),
        AssistantItem(tool_calls=[ToolCall(id="c1", name="pick", arguments={"ref": "a"})]),
        ToolResultItem(call_id="c1", name="pick", text="ok"),
        AssistantItem(text="", tool_calls=[]),
    ]
    server.reply(openai_stream("ok"))
    drain(model(server).stream(request(items=items)))
    assistants = [m for m in server.requests[0].body["messages"] if m["role"] == "assistant"]
    assert [m["content"] for m in assistants] == ["", ""]
    assert all(m["content"] is not None for m in server.requests[0].body["messages"])


def test_overflow_states_the_servers_limit(server: WireServer) -> None:
    server.reply(
        openai_error(
            400,
            "This model's maximum context length is 5632 tokens. However, you requested "
            "6100 tokens (6080 in the messages, 20 in the completion).",
            code="context_length_exceeded",
        ),
        Reply(
            400,
            {
                "error": {
                    "code": 400,
                    "type": "exceed_context_size_error",
                    "message": "the request exceeds the available context size",
                    "n_prompt_tokens": 9001,
                    "n_ctx": 8192,
                }
            },
        ),
        openai_error(400, "too long", code="context_length_exceeded"),
    )
    sizes = []
    for _ in range(3):
        with pytest.raises(ContextOverflowError) as caught:
            list(model(server).stream(request()))
        sizes.append((caught.value.limit_tokens, caught.value.prompt_tokens))
    assert sizes == [(5632, 6080), (8192, 9001), (None, None)]
