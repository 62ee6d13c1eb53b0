"""The two wire formats behind one small test interface, so loop tests run against both.

A dialect builds a model config pointing at a :class:`~tests.wire_server.WireServer`,
programs replies in its provider's shape, and reads a recorded request body back as a
provider-neutral list of turns for assertions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from harness.config import ModelConfig
from harness.errors import IncompleteResponseError
from harness.messages import ModelResponse
from harness.providers.base import Chunk, Final, RetryNotice
from tests.wire_server import (
    Recorded,
    Reply,
    Responder,
    WireServer,
    anthropic_error,
    anthropic_stream,
    anthropic_usage,
    openai_error,
    openai_stream,
    openai_usage,
    text_block,
    tool_use_block,
)

__all__ = ["ANTHROPIC", "DIALECTS", "OPENAI", "Dialect", "Turn", "drain", "drain_incomplete"]

FAST_RETRIES = {"retry_base_s": 0.001, "retry_max_s": 0.002}
"""Backoff small enough that retry tests take milliseconds."""

OPENAI_KEY_ENV = "HARNESS_TEST_OPENAI_KEY"
ANTHROPIC_KEY_ENV = "HARNESS_TEST_ANTHROPIC_KEY"
ANTHROPIC_TEST_KEY = "sk-ant-test-0123456789abcdefghijklmnop"


def drain(chunks: Iterator[Chunk]) -> tuple[list[Chunk], ModelResponse]:
    """Consume a model stream; check it ends with exactly one Final and return both."""
    seen = list(chunks)
    finals = [c for c in seen if isinstance(c, Final)]
    assert len(finals) == 1 and seen[-1] is finals[0]
    return seen, finals[0].response


def drain_incomplete(chunks: Iterator[Chunk], *, retries: int) -> IncompleteResponseError:
    """Consume a model stream that must fail as an incomplete response after ``retries``
    visible retries, handing over no Final on the way; return the error."""
    seen: list[Chunk] = []
    with pytest.raises(IncompleteResponseError) as caught:
        for chunk in chunks:
            assert not isinstance(chunk, Final), seen
            seen.append(chunk)
    assert caught.value.kind == "incomplete_response"
    notices = [c for c in seen if isinstance(c, RetryNotice)]
    assert [n.error_kind for n in notices] == ["incomplete_response"] * retries
    return caught.value


@dataclass(frozen=True)
class Turn:
    """One message read back from a request: role, text, calls, or the call it answers."""

    role: str
    text: str = ""
    calls: tuple[tuple[str, str, str], ...] = ()
    answers: str = ""
    images: int = 0


def asked_limit(request: Recorded) -> int:
    """The output limit a recorded request asked for (either field)."""
    body = request.body
    return int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)


class Dialect:
    name: str

    def config(self, server: WireServer, **overrides: Any) -> ModelConfig:
        raise NotImplementedError

    def prepare(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Set what the provider needs in the environment (its API key)."""

    def text(self, text: str, *, usage: tuple[int, int, int] | None = None) -> Reply:
        raise NotImplementedError

    def tools(self, *calls: tuple[str, str, dict[str, Any]], text: str = "") -> Reply:
        raise NotImplementedError

    def cut_text(self, text: str) -> Responder:
        """A text answer the output limit stopped (``length`` / ``max_tokens``), having
        generated exactly the limit the request asked for (as a real server reports it)."""
        raise NotImplementedError

    def cut_tools(self, *calls: tuple[str, str, dict[str, Any]], cut_json: str) -> Responder:
        """Whole ``calls``, then a last call (``move_to``) whose argument text the output
        limit cut to ``cut_json``; the usage says the whole limit was generated."""
        raise NotImplementedError

    def overflow(self) -> Reply:
        raise NotImplementedError

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        raise NotImplementedError

    def turns(self, body: dict[str, Any]) -> list[Turn]:
        raise NotImplementedError


class OpenAIDialect(Dialect):
    name = "openai"

    def config(self, server: WireServer, **overrides: Any) -> ModelConfig:
        data: dict[str, Any] = {
            "provider": "openai",
            "name": "gpt-4o-mini",
            "base_url": server.openai_url,
            "timeout_s": 10.0,
            "options": dict(FAST_RETRIES),
        }
        data.update(overrides)
        return ModelConfig.model_validate(data)

    def text(self, text: str, *, usage: tuple[int, int, int] | None = None) -> Reply:
        prompt, completion, cached = usage or (100, 10, 0)
        return openai_stream(text, usage=openai_usage(prompt, completion, cached=cached))

    def tools(self, *calls: tuple[str, str, dict[str, Any]], text: str = "") -> Reply:
        return openai_stream(text, tool_calls=calls)

    def cut_text(self, text: str) -> Responder:
        return lambda request: openai_stream(
            text, finish_reason="length", usage=openai_usage(100, asked_limit(request))
        )

    def cut_tools(self, *calls: tuple[str, str, dict[str, Any]], cut_json: str) -> Responder:
        return lambda request: openai_stream(
            tool_calls=[*calls, ("call_cut", "move_to", cut_json)],
            finish_reason="length",
            usage=openai_usage(100, asked_limit(request)),
        )

    def overflow(self) -> Reply:
        return openai_error(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130512 tokens.",
            code="context_length_exceeded",
        )

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        kind = {401: "invalid_request_error", 429: "requests", 500: "server_error"}
        return openai_error(status, message, type=kind.get(status, "api_error"), headers=headers)

    def turns(self, body: dict[str, Any]) -> list[Turn]:
        turns = []
        for message in body["messages"]:
            content = message.get("content")
            images = 0
            if isinstance(content, list):
                images = sum(1 for part in content if part["type"] == "image_url")
                content = "\n".join(p["text"] for p in content if p["type"] == "text")
            calls = tuple(
                (c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in message.get("tool_calls") or []
            )
            turns.append(
                Turn(
                    role=message["role"],
                    text=content or "",
                    calls=calls,
                    answers=message.get("tool_call_id", ""),
                    images=images,
                )
            )
        return turns


class AnthropicDialect(Dialect):
    name = "anthropic"

    def config(self, server: WireServer, **overrides: Any) -> ModelConfig:
        data: dict[str, Any] = {
            "provider": "anthropic",
            "name": "claude-sonnet-4-6",
            "base_url": server.anthropic_url,
            "api_key_env": ANTHROPIC_KEY_ENV,
            "timeout_s": 10.0,
            "options": dict(FAST_RETRIES),
        }
        data.update(overrides)
        return ModelConfig.model_validate(data)

    def prepare(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(ANTHROPIC_KEY_ENV, ANTHROPIC_TEST_KEY)

    def text(self, text: str, *, usage: tuple[int, int, int] | None = None) -> Reply:
        prompt, completion, cached = usage or (100, 10, 0)
        return anthropic_stream(
            [text_block(text)],
            usage=anthropic_usage(prompt - cached, completion, cache_read=cached),
        )

    def tools(self, *calls: tuple[str, str, dict[str, Any]], text: str = "") -> Reply:
        blocks = [text_block(text)] if text else []
        blocks += [tool_use_block(call_id, name, args) for call_id, name, args in calls]
        return anthropic_stream(blocks)

    def cut_text(self, text: str) -> Responder:
        return lambda request: anthropic_stream(
            [text_block(text)],
            stop_reason="max_tokens",
            usage=anthropic_usage(100, asked_limit(request)),
        )

    def cut_tools(self, *calls: tuple[str, str, dict[str, Any]], cut_json: str) -> Responder:
        blocks = [tool_use_block(call_id, name, args) for call_id, name, args in calls]
        blocks.append(dict(tool_use_block("toolu_cut", "move_to", {}), raw_json=cut_json))
        return lambda request: anthropic_stream(
            blocks, stop_reason="max_tokens", usage=anthropic_usage(100, asked_limit(request))
        )

    def overflow(self) -> Reply:
        return anthropic_error(
            400, "invalid_request_error", "prompt is too long: 210443 tokens > 200000 maximum"
        )

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        kind = {
            401: "authentication_error",
            429: "rate_limit_error",
            500: "api_error",
            529: "overloaded_error",
        }
        return anthropic_error(status, kind.get(status, "api_error"), message, headers=headers)

    def turns(self, body: dict[str, Any]) -> list[Turn]:
        turns: list[Turn] = []
        system = body.get("system") or []
        if system:
            turns.append(Turn(role="system", text="\n\n".join(b["text"] for b in system)))
        for message in body["messages"]:
            texts: list[str] = []
            calls: list[tuple[str, str, str]] = []
            images = 0
            for block in message["content"]:
                if block["type"] == "tool_result":
                    turns.append(
                        Turn(role="tool", text=block["content"], answers=block["tool_use_id"])
                    )
                elif block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "image":
                    images += 1
                elif block["type"] == "tool_use":
                    calls.append((block["id"], block["name"], json.dumps(block["input"])))
            if texts or calls or images:
                turns.append(
                    Turn(
                        role=message["role"],
                        text="\n".join(texts),
                        calls=tuple(calls),
                        images=images,
                    )
                )
        return turns


OPENAI = OpenAIDialect()
ANTHROPIC = AnthropicDialect()
DIALECTS = [OPENAI, ANTHROPIC]
