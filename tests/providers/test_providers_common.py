"""Provider plumbing shared by both adapters: model specs and presets, the window table,
failure classification, the retry policy, and wire-shape invariants (hypothesis)."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig
from harness.config import ModelConfig
from harness.errors import (
    AuthenticationError,
    BadRequestError,
    ContextOverflowError,
    ModelCancelledError,
    ModelError,
    RateLimitError,
    TransientModelError,
    UnknownContextWindowError,
)
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    CheckpointSource,
    InstructionItem,
    Item,
    ModelRequest,
    ReasoningBlock,
    RefreshedBlock,
    SystemBlock,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
    ToolSpec,
)
from harness.providers import PROVIDERS, build_model, complete, parse_model_spec
from harness.providers.anthropic import MAX_CACHE_BREAKPOINTS, AnthropicModel
from harness.providers.base import Chunk, Final, Model, RetryNotice
from harness.providers.catalog import LOCAL_SERVERS, known_context_window
from harness.providers.failures import Failure, classify_failure, retry_after_s
from harness.providers.openai import OpenAIChatModel
from harness.providers.retry import RetryPolicy, with_retries
from harness.providers.transcript import parse_arguments
from harness.tokens import TokenEstimator
from tests.tiers import examples

# --------------------------------------------------------------------------- specs


def test_model_specs_and_local_server_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = parse_model_spec("openai:qwen2.5-vl@http://10.0.0.5:8000/v1")
    assert (spec.provider, spec.name, spec.base_url) == (
        "openai",
        "qwen2.5-vl",
        "http://10.0.0.5:8000/v1",
    )
    ollama = build_model(parse_model_spec("ollama:qwen2.5vl:7b"))
    assert isinstance(ollama, OpenAIChatModel)
    assert (ollama.name, ollama.base_url) == ("qwen2.5vl:7b", "http://127.0.0.1:11434/v1")
    assert ollama.context_window == 32_768 and ollama.api_key.value is None
    assert ollama.image_cost == "generic"
    for name, server in LOCAL_SERVERS.items():
        adapter = build_model(parse_model_spec(f"{name}:some-model@http://gpu-box:9000/v1"))
        assert isinstance(adapter, OpenAIChatModel) and adapter.base_url == "http://gpu-box:9000/v1"
        assert server.base_url.startswith("http://127.0.0.1:")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-000000000000000000000")
    claude = build_model(parse_model_spec("anthropic:claude-opus-4-8"))
    assert isinstance(claude, AnthropicModel) and claude.context_window == 200_000
    assert isinstance(claude, Model) and isinstance(ollama, Model)  # the loop's protocol
    assert {"openai", "anthropic", "ollama", "vllm", "llamacpp", "lmstudio"} <= set(PROVIDERS)


def test_a_spec_keeps_settings_of_the_same_provider() -> None:
    base = ModelConfig(provider="openai", name="gpt-4o", base_url="http://h:1/v1", timeout_s=5)
    spec = parse_model_spec("openai:gpt-4o-mini", base)
    assert spec.base_url == "http://h:1/v1" and spec.timeout_s == 5


def test_importing_the_registry_does_not_import_the_sdks() -> None:
    import subprocess
    import sys

    code = (
        "import sys, harness.providers, harness.runtime.harness; "
        "print('anthropic' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# --------------------------------------------------------------------------- windows


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("gpt-4.1-mini-2025-04-14", 1_047_576),
        ("gpt-4o-mini", 128_000),
        ("gpt-5.4-mini", 400_000),
        ("gpt-5-chat-latest", 128_000),
        ("o1-mini", 128_000),
        ("o3", 200_000),
        ("claude-sonnet-4-6", 200_000),
        ("claude-haiku-4-5-20251001", 200_000),
        ("Qwen/Qwen2.5-VL-7B-Instruct", 32_768),
        ("qwen2.5vl:7b", 32_768),
        ("llama3.2-vision:11b", 131_072),
        ("openai/gpt-oss-20b", 131_072),
        ("some-private-model", None),
    ],
)
def test_known_context_windows(name: str, window: int | None) -> None:
    assert known_context_window(name) == window


def test_unknown_window_is_refused_naming_the_setting(config: HarnessConfig) -> None:
    config.model = ModelConfig(provider="ollama", name="my-finetune:latest")
    with pytest.raises(UnknownContextWindowError) as caught:
        Harness.from_config(config)
    assert caught.value.key == "model.context_window"
    config.model = ModelConfig(provider="ollama", name="my-finetune:latest", context_window=32768)
    with Harness.from_config(config) as harness:
        assert harness.context.budget.context_window == 32768
        assert harness.model.context_window == 32768


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (Failure("p", "x", 413), ContextOverflowError),
        (Failure("p", "x", 400, code="context_length_exceeded"), ContextOverflowError),
        (Failure("p", "prompt is too long: 5 > 4", 400), ContextOverflowError),
        (Failure("p", "the request exceeds the available context size", 500), ContextOverflowError),
        (Failure("p", "maximum context length exceeded", None), ContextOverflowError),
        (Failure("p", "Request too large for gpt-4o on tokens per min", 429), ContextOverflowError),
        (Failure("p", "bad key", 401), AuthenticationError),
        (Failure("p", "x", None, error_type="authentication_error"), AuthenticationError),
        (Failure("p", "slow down", 429), RateLimitError),
        (Failure("p", "x", None, error_type="rate_limit_error"), RateLimitError),
        (Failure("p", "x", 500), TransientModelError),
        (Failure("p", "x", 529), TransientModelError),
        (Failure("p", "x", 408), TransientModelError),
        (Failure("p", "x", None, error_type="overloaded_error"), TransientModelError),
        (Failure("p", "x", None), TransientModelError),
        (Failure("p", "x", None, error_type="invalid_request_error"), BadRequestError),
        (Failure("p", "x", 400), BadRequestError),
        (Failure("p", "x", 422), BadRequestError),
    ],
)
def test_failure_classification(failure: Failure, expected: type[ModelError]) -> None:
    error = classify_failure(failure)
    assert type(error) is expected
    assert error.provider == "p" and error.status_code == failure.status


def test_spent_quota_is_a_rate_limit_that_is_not_retried() -> None:
    error = classify_failure(Failure("p", "quota", 429, code="insufficient_quota"))
    assert isinstance(error, RateLimitError) and not error.retryable
    assert RetryPolicy().wait_s(1, error, random.Random(0)) is None


def test_retry_after_headers() -> None:
    assert retry_after_s({"Retry-After-Ms": "250"}) == 0.25
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None
    date = "Wed, 21 Oct 2015 07:28:30 GMT"
    assert retry_after_s({"retry-after": date}, now=lambda: 1445412500.0) == 10.0
    assert retry_after_s({"retry-after": date}, now=lambda: 1445412600.0) == 0.0


# --------------------------------------------------------------------------- retry policy


@given(retry=st.integers(1, 12), base=st.floats(0.01, 5.0), cap=st.floats(0.01, 60.0))
def test_backoff_is_bounded_exponential_with_jitter(retry: int, base: float, cap: float) -> None:
    policy = RetryPolicy(max_retries=12, base_s=base, max_s=cap)
    ceiling = min(cap, base * 2 ** (retry - 1))
    wait = policy.wait_s(retry, TransientModelError("x"), random.Random(retry))
    assert wait is not None and ceiling / 2 <= wait <= ceiling


def test_retry_after_is_honoured_within_its_cap() -> None:
    policy = RetryPolicy(max_retries=3, retry_after_max_s=10)
    rng = random.Random(0)
    assert policy.wait_s(1, RateLimitError("x", retry_after_s=7.5), rng) == 7.5
    assert policy.wait_s(1, RateLimitError("x", retry_after_s=11), rng) is None
    assert policy.wait_s(4, RateLimitError("x", retry_after_s=1), rng) is None
    assert policy.wait_s(1, BadRequestError("x"), rng) is None


def test_cancel_during_a_retry_wait_stops_at_once() -> None:
    attempts: list[int] = []
    polls: list[int] = []

    def attempt() -> Iterator[Chunk]:
        attempts.append(1)
        raise TransientModelError("down")
        yield  # pragma: no cover

    def cancelled() -> bool:
        polls.append(1)
        return len(polls) > 1  # trips on the second poll, inside a 60 s wait

    policy = RetryPolicy(max_retries=5, base_s=60.0, max_s=60.0)
    chunks = list(with_retries(attempt, policy=policy, cancelled=cancelled, rng=random.Random(0)))
    assert len(attempts) == 1
    assert len(chunks) == 1 and isinstance(chunks[0], RetryNotice) and chunks[0].wait_s >= 30
    assert not any(isinstance(c, Final) for c in chunks)


# --------------------------------------------------------------------------- arguments


@given(st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=4))
def test_argument_objects_round_trip(arguments: dict[str, Any]) -> None:
    assert parse_arguments(json.dumps(arguments)) == (arguments, None)


# --------------------------------------------------------------------------- wire invariants


class _Offline:
    """Stands in for the SDK client: payloads are built without any network."""

    def close(self) -> None: ...


@pytest.fixture(scope="module")
def adapters() -> tuple[OpenAIChatModel, AnthropicModel]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_TEST_KEY", "test-key-0123456789")
        openai = OpenAIChatModel(
            ModelConfig(provider="openai", name="m", base_url="http://127.0.0.1:9/v1"),
            client=_Offline(),
        )
        anthropic = AnthropicModel(
            ModelConfig(
                provider="anthropic",
                name="claude-sonnet-4-6",
                api_key_env="HARNESS_TEST_KEY",
                thinking_budget_tokens=1024,
            ),
            client=_Offline(),
        )
    return openai, anthropic


CALL_IDS = st.sampled_from(["call_0", "call_1", "call_0_2", "toolu.x", "c/9"])


@st.composite
def items(draw: st.DrawFn) -> list[Item]:
    out: list[Item] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["instruction", "notes", "assistant", "result", "checkpoint"]))
        if kind == "instruction":
            out.append(InstructionItem(text=draw(st.sampled_from(["go", "stop", ""]))))
        elif kind == "notes":
            out.append(TaskNotesItem(text="notes", version=1))
        elif kind == "checkpoint":
            source = CheckpointSource(
                first_turn=1,
                last_turn=2,
                task_ids=[],
                items_folded=2,
                rounds=1,
                model="m",
                mode="deterministic",
            )
            out.append(CheckpointItem(text="summary", source=source))
        elif kind == "assistant":
            calls = [
                ToolCall(id=draw(CALL_IDS), name="pick", arguments={"n": n})
                for n in range(draw(st.integers(0, 3)))
            ]
            reasoning = draw(
                st.sampled_from(
                    [
                        [],
                        [ReasoningBlock(text="t", signature="s", provider="anthropic")],
                        [ReasoningBlock(text="r", provider="openai:reasoning_content")],
                    ]
                )
            )
            text = draw(st.sampled_from(["", "ok"]))
            out.append(AssistantItem(text=text, tool_calls=calls, reasoning=reasoning))
        else:
            out.append(ToolResultItem(call_id=draw(CALL_IDS), name="pick", text="done"))
    return out


def _request(history: list[Item], stable: int, refreshed: bool, tools: bool) -> ModelRequest:
    return ModelRequest(
        system=[SystemBlock(name="system", text="s")],
        tools=[ToolSpec(name="pick", description="d", parameters={"type": "object"})]
        if tools
        else [],
        items=history,
        refreshed=RefreshedBlock(brief="scene") if refreshed else None,
        stable_items=min(stable, len(history)),
    )


@settings(max_examples=examples(150), deadline=None)
@given(history=items(), stable=st.integers(0, 14), refreshed=st.booleans(), tools=st.booleans())
def test_openai_history_always_answers_every_call_right_after_it(
    adapters: tuple[OpenAIChatModel, AnthropicModel],
    history: list[Item],
    stable: int,
    refreshed: bool,
    tools: bool,
) -> None:
    messages = adapters[0].build_messages(_request(history, stable, refreshed, tools))
    if not tools:  # no tool definitions: no tool-call history either
        assert not any(m["role"] == "tool" or m.get("tool_calls") for m in messages)
    seen_ids: set[str] = set()
    pending: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert pending and message["tool_call_id"] == pending.pop(0)
            continue
        assert not pending, "a call was not answered before the next message"
        if message["role"] == "assistant":
            ids = [call["id"] for call in message.get("tool_calls", [])]
            assert not seen_ids & set(ids) and len(set(ids)) == len(ids)
            seen_ids |= set(ids)
            pending = ids
            assert message["content"] is not None or ids
    assert not pending


@settings(max_examples=examples(150), deadline=None)
@given(history=items(), stable=st.integers(0, 14), refreshed=st.booleans(), tools=st.booleans())
def test_anthropic_messages_alternate_pair_results_and_limit_breakpoints(
    adapters: tuple[OpenAIChatModel, AnthropicModel],
    history: list[Item],
    stable: int,
    refreshed: bool,
    tools: bool,
) -> None:
    payload = adapters[1].build_payload(_request(history, stable, refreshed, tools))
    messages = payload["messages"]
    if not tools:  # no tool definitions: no tool blocks either
        kinds = {b["type"] for m in messages for b in m["content"]}
        assert not kinds & {"tool_use", "tool_result"} and "tools" not in payload
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and roles[-1] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        content = message["content"]
        assert content
        for block in content:
            assert block["type"] != "text" or block["text"]
        uses = [b["id"] for b in content if b["type"] == "tool_use"]
        for call_id in uses:
            assert re.fullmatch(r"[A-Za-z0-9_-]+", call_id) and call_id not in seen_ids
            seen_ids.add(call_id)
        if uses:
            following = messages[index + 1]["content"]
            assert [b.get("tool_use_id") for b in following[: len(uses)]] == uses
        results = [i for i, b in enumerate(content) if b["type"] == "tool_result"]
        if results:
            previous = messages[index - 1]["content"]
            answered = [b["tool_use_id"] for b in content if b["type"] == "tool_result"]
            assert results == list(range(len(results)))  # tool results come first
            assert answered == [b["id"] for b in previous if b["type"] == "tool_use"]
    last_assistant = next(
        (m["content"] for m in reversed(messages) if m["role"] == "assistant"), []
    )
    if any(b["type"] == "tool_use" for b in last_assistant):  # a tool-use continuation
        starts_thinking = last_assistant[0]["type"] == "thinking"
        assert starts_thinking or payload["thinking"] == {"type": "disabled"}
    blocks = [b for m in messages for b in m["content"]]
    offered = payload.get("tools", [])
    marked = [b for b in [*payload["system"], *offered, *blocks] if "cache_control" in b]
    assert len(marked) <= MAX_CACHE_BREAKPOINTS
    assert not any(b.get("type") in ("thinking", "redacted_thinking") for b in marked)


# --------------------------------------------------------------------------- usage guard


def test_usage_guard_ignores_implausible_reports_and_calibrates_on_plausible() -> None:
    estimator = TokenEstimator()
    assert not estimator.observe_usage(estimated_prompt=1000, reported_prompt=9000)
    assert estimator.ignored_reports == 1 and estimator.calibration == 1.0
    assert estimator.observe_usage(estimated_prompt=1000, reported_prompt=1300)
    assert estimator.calibration == pytest.approx(1.3)


@pytest.mark.parametrize(
    ("message", "sizes"),
    [
        (
            "This model's maximum context length is 8192 tokens. However, you requested 9044 "
            "tokens (9024 in the messages, 20 in the completion). Please reduce the length.",
            (8192, 9024),
        ),
        (
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130512 tokens.",
            (128000, 130512),
        ),
        ("prompt is too long: 210443 tokens > 200000 maximum", (200000, 210443)),
        ("Requested tokens (9000) exceed context window of 8192", (8192, 9000)),
        (
            "Trying to keep the first 6000 tokens when context the overflows. However, the "
            "model is loaded with context length of only 4096 tokens",
            (4096, None),
        ),
        (
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
            "Given: 4000 `inputs` tokens and 200 `max_new_tokens`",
            (4096, 4000),
        ),
        (
            "This model's maximum context length is 4096 tokens. However, you requested 5000 "
            "tokens",
            (4096, None),
        ),  # a total with the output in it is not the prompt
        ("the request exceeds the available context size", (None, None)),
    ],
)
def test_overflow_messages_state_the_window_and_the_prompt(
    message: str, sizes: tuple[int | None, int | None]
) -> None:
    error = classify_failure(Failure(provider="p", message=message, status=400))
    assert isinstance(error, ContextOverflowError)
    assert (error.limit_tokens, error.prompt_tokens) == sizes


# ---------------------------------------------------------------- complete() and a cancel
# (the loopback-server cancel tests, which wait on purpose, are in test_providers_cancel.py)


def _cancel_request() -> ModelRequest:
    return ModelRequest(
        system=[SystemBlock(name="system", text="You drive a robot.")],
        items=[InstructionItem(text="tidy the table")],
        refreshed=RefreshedBlock(brief="Scene: red_cube_1"),
    )


def test_complete_drops_an_answer_that_comes_after_the_cancel() -> None:
    from harness.providers import ScriptedModel, reply

    flag = {"cancelled": False}

    def answer_then_cancel(req: ModelRequest) -> Any:
        flag["cancelled"] = True  # the cancel lands while the answer is being produced
        return reply("late")

    model = ScriptedModel([answer_then_cancel])
    with pytest.raises(ModelCancelledError):
        complete(model, _cancel_request(), cancelled=lambda: flag["cancelled"])
