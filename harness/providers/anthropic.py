"""Anthropic Messages behind the :class:`~harness.providers.base.Model` protocol.

This module only translates: provider-neutral request -> Messages payload, and streamed
events -> deltas and one :class:`ModelResponse`. The Messages API is stricter than Chat
Completions, and every rule it enforces is kept here:

- roles alternate, the first and last messages are the user's; consecutive user content is
  merged into one message, and every ``tool_result`` block comes first in the user message
  right after its ``tool_use`` (:mod:`harness.providers.transcript` pairs them);
- thinking blocks are sent back unchanged, signature included, ahead of the text and tool
  use of their turn: a tool-use continuation whose thinking block was dropped is rejected.
  If the last tool-use turn has no signed thinking block (it came from another model, or
  was stored without one), that one request is sent with budgeted thinking disabled;
- ``model.thinking_budget_tokens`` turns on extended thinking (``model.options.thinking:
  adaptive`` lets newer models decide) and ``model.reasoning_effort`` maps to
  ``output_config.effort``. The Messages API of the supported SDK (2.x) has no sampling
  parameters, so ``model.temperature`` is not sent;
- a response that stopped because the context window filled up is raised as
  :class:`ContextOverflowError` (compact and resend), not taken as the final answer;
- a stream is whole only with its ``message_stop``; a tool use stopped by ``max_tokens`` may
  be cut anywhere; either is an incomplete response (see :mod:`harness.providers.remote`);
- prompt caching: ``cache_control`` breakpoints on the last tool definition, the last
  system block, the last Accumulated item unchanged since the previous request
  (``ModelRequest.stable_items``) and the last Accumulated item, which is what the next
  request reads back. That is four, Anthropic's limit; thinking blocks never carry one.

The SDK is imported when the first model is built (``import anthropic`` costs ~1 s).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.config import ModelConfig
from harness.errors import ConfigError, ContextOverflowError, ModelError
from harness.messages import (
    AssistantItem,
    ModelRequest,
    ModelResponse,
    ReasoningBlock,
    RefreshedBlock,
    Usage,
    new_id,
)
from harness.providers.base import Delta
from harness.providers.failures import Failure, classify_failure, timed_out, unreachable
from harness.providers.remote import IMAGE_NOT_SENT, RemoteModel
from harness.providers.settings import AdapterOptions, parse_options, resolve_api_key
from harness.providers.transcript import (
    AssistantTurn,
    ToolNames,
    UserText,
    complete_before_cut,
    image_caption,
    read_transcript,
    tool_call,
)

__all__ = ["MAX_CACHE_BREAKPOINTS", "AnthropicModel", "AnthropicOptions", "from_config"]

MAX_CACHE_BREAKPOINTS = 4
"""Anthropic rejects a request with more ``cache_control`` blocks than this."""
PROVIDER_TAG = "anthropic"
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
CONTINUE_TEXT = "Continue."
WINDOW_EXCEEDED = "model_context_window_exceeded"


class AnthropicOptions(AdapterOptions):
    """``model.options`` for ``provider: anthropic``."""

    prompt_caching: bool = True
    """Place ``cache_control`` breakpoints (see the module docstring)."""
    cache_ttl: Literal["5m", "1h"] = "5m"
    """Cache lifetime; ``1h`` writes cost more but survive long robot actions."""
    thinking: Literal["budget", "adaptive"] = "budget"
    """``budget``: extended thinking when ``model.thinking_budget_tokens`` is set;
    ``adaptive``: the model decides when and how much to think (newer models)."""


class AnthropicModel(RemoteModel):
    """A Claude model on the Anthropic Messages API.

    Args:
        config: The model section of the config.
        client: An ``anthropic.Anthropic`` client to use instead of building one (tests).
        rng: Random source for backoff jitter (seed it for reproducible waits).
    """

    options: AnthropicOptions

    def __init__(
        self,
        config: ModelConfig,
        *,
        client: Any | None = None,
        rng: random.Random | None = None,
    ) -> None:
        budget = config.thinking_budget_tokens
        if budget is not None and budget >= config.max_output_tokens:
            raise ConfigError(
                f"model.thinking_budget_tokens: got {budget}; expected less than "
                f"model.max_output_tokens ({config.max_output_tokens}), which includes it",
                key="model.thinking_budget_tokens",
                value=budget,
            )
        self._sdk = _import_sdk()
        super().__init__(
            config,
            options=parse_options(config, AnthropicOptions),
            api_key=resolve_api_key(config, default_env="ANTHROPIC_API_KEY", required=True),
            image_cost="anthropic",
            client=client,
            rng=rng,
        )

    def _build_client(self) -> Any:
        return self._sdk.Anthropic(
            api_key=self.api_key.value,
            base_url=self.config.base_url,
            timeout=self.config.timeout_s,
            max_retries=0,  # retries happen in with_retries, visibly
            http_client=self._http_client(),
        )

    def _where(self) -> str:
        return self.config.base_url or "the Anthropic API"

    def _create(self, payload: dict[str, Any], *, bare: bool = False) -> Any:
        return self._client.messages.create(**payload, **self._extras(bare=bare))

    def _assembler(self, names: ToolNames) -> MessageAssembler:
        return MessageAssembler(self.name, names)

    def _checked(self, response: ModelResponse) -> ModelResponse:
        """A response cut off because the window filled up is an overflow, not an answer:
        its text would otherwise end the task as a truncated report."""
        if response.stop_reason == WINDOW_EXCEEDED:
            raise ContextOverflowError(
                f"{self.provider}: the response stopped at the model's context window "
                f"({WINDOW_EXCEEDED})",
                provider=self.provider,
            )
        return super()._checked(response)

    # ------------------------------------------------------------------ request

    def _payload(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        """The Messages body (``build_payload`` is the public view)."""
        config = self.config
        max_tokens = request.max_output_tokens or config.max_output_tokens
        conversation = self.build_messages(request, names)
        payload: dict[str, Any] = {
            "model": self.name,
            "max_tokens": max_tokens,
            "messages": conversation.messages,
        }
        system = [{"type": "text", "text": block.text} for block in request.system if block.text]
        if system:
            payload["system"] = system
        if request.tools:
            payload["tools"] = [
                {
                    "name": names.wire(spec.name),
                    "description": spec.description,
                    "input_schema": spec.parameters,
                }
                for spec in request.tools
            ]
            payload["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        thinking = self._thinking(max_tokens)
        if thinking is not None:
            if thinking["type"] == "enabled" and not conversation.thinking_allowed():
                thinking = {"type": "disabled"}
            payload["thinking"] = thinking
        if config.reasoning_effort is not None:
            payload["output_config"] = {"effort": config.reasoning_effort}
        if self.options.prompt_caching:
            self._place_cache_breakpoints(payload, conversation, request)
        if config.stream:
            payload["stream"] = True
        return payload

    def _thinking(self, max_tokens: int) -> dict[str, Any] | None:
        if self.options.thinking == "adaptive":
            return {"type": "adaptive"}
        budget = self.config.thinking_budget_tokens
        if budget is None:
            return None
        if budget >= max_tokens:  # a small summarizer request: no room to think
            return {"type": "disabled"}
        return {"type": "enabled", "budget_tokens": budget}

    def build_messages(self, request: ModelRequest, names: ToolNames | None = None) -> Conversation:
        """The alternating user/assistant messages (see the module docstring)."""
        names = names or ToolNames(spec.name for spec in request.tools)
        conversation = Conversation()
        for entry in read_transcript(request.items, tools_offered=bool(request.tools)):
            if isinstance(entry, UserText):
                conversation.add("user", [_text(entry.text)], entry.index)
                continue
            conversation.add("assistant", self._assistant_blocks(entry, names), entry.index)
            for answer in entry.answers:
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": _tool_use_id(answer.wire_id),
                    "content": answer.text(mark_error=False),
                }
                if answer.result is not None and answer.result.is_error:
                    result["is_error"] = True
                conversation.add("user", [result], answer.index)
        if request.refreshed is not None:
            blocks = _refreshed_blocks(request.refreshed, images=self._sends_images())
            conversation.add("user", blocks, None)
        conversation.finish()
        return conversation

    def _assistant_blocks(self, turn: AssistantTurn, names: ToolNames) -> list[dict[str, Any]]:
        blocks = _thinking_blocks(turn.item)
        if turn.item.text:
            blocks.append(_text(turn.item.text))
        for answer in turn.answers:
            arguments = answer.call.arguments if answer.call.raw_arguments is None else {}
            blocks.append(
                {
                    "type": "tool_use",
                    "id": _tool_use_id(answer.wire_id),
                    "name": names.wire(answer.call.name),
                    "input": arguments,
                }
            )
        if not any(block["type"] not in THINKING_TYPES for block in blocks):
            blocks.append(_text("(no text)"))
        return blocks

    def _place_cache_breakpoints(
        self, payload: dict[str, Any], conversation: Conversation, request: ModelRequest
    ) -> None:
        marker: dict[str, Any] = {"type": "ephemeral"}
        if self.options.cache_ttl != "5m":
            marker["ttl"] = self.options.cache_ttl
        targets: list[dict[str, Any]] = []
        if payload.get("tools"):
            targets.append(payload["tools"][-1])
        if payload.get("system"):
            targets.append(payload["system"][-1])
        for position in (request.stable_items - 1, len(request.items) - 1):
            block = conversation.anchor_at_or_before(position)
            if block is not None and all(block is not target for target in targets):
                targets.append(block)
        for block in targets[:MAX_CACHE_BREAKPOINTS]:
            block["cache_control"] = dict(marker)

    # ------------------------------------------------------------------ errors

    def _error(self, exc: Exception) -> ModelError:
        """An SDK exception -> a named harness error, with secrets scrubbed."""
        sdk = self._sdk
        where = self._where()
        if isinstance(exc, sdk.APITimeoutError):
            return timed_out(self.provider, where, self.config.timeout_s)
        if isinstance(exc, sdk.APIConnectionError):
            return unreachable(self.provider, where, self._scrub(str(exc.__cause__ or exc)))
        status: int | None = None
        headers: dict[str, str] | None = None
        error_type: str | None = None
        message = getattr(exc, "message", None) or str(exc)
        if isinstance(exc, sdk.APIStatusError):
            # An error event inside a 200 stream carries the stream's status: not an HTTP one.
            status = exc.status_code if exc.status_code >= 400 else None
            headers = dict(exc.response.headers)
            error_type = exc.type
            message = exc.api_message or message
        return classify_failure(
            Failure(
                provider=self.provider,
                message=self._scrub(str(message)),
                status=status,
                error_type=error_type,
                headers=headers,
            )
        )


@dataclass
class Conversation:
    """Messages under construction, plus the block each item ended in (for caching)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    anchors: dict[int, dict[str, Any]] = field(default_factory=dict)

    def add(self, role: str, blocks: list[dict[str, Any]], index: int | None) -> None:
        if not blocks:
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == role == "user":
            last["content"].extend(blocks)
        else:
            if last is not None and last["role"] == role == "assistant":
                self.messages.append({"role": "user", "content": [_text(CONTINUE_TEXT)]})
            self.messages.append({"role": role, "content": list(blocks)})
        if index is not None:
            for block in blocks:
                if block["type"] not in THINKING_TYPES:
                    self.anchors[index] = block

    def finish(self) -> None:
        """The first and the last message must be the user's."""
        if not self.messages or self.messages[0]["role"] != "user":
            self.messages.insert(0, {"role": "user", "content": [_text(CONTINUE_TEXT)]})
        if self.messages[-1]["role"] != "user":
            self.messages.append({"role": "user", "content": [_text(CONTINUE_TEXT)]})

    def anchor_at_or_before(self, position: int) -> dict[str, Any] | None:
        candidates = [index for index in self.anchors if index <= position]
        return self.anchors[max(candidates)] if candidates else None

    def thinking_allowed(self) -> bool:
        """False when the last assistant turn used a tool without a thinking block first:
        the API rejects such a continuation while thinking is on."""
        for message in reversed(self.messages):
            if message["role"] != "assistant":
                continue
            content = message["content"]
            uses_tool = any(block["type"] == "tool_use" for block in content)
            return not uses_tool or content[0]["type"] in THINKING_TYPES
        return True


@dataclass
class _Block:
    type: str
    text: str = ""
    thinking: str = ""
    signature: str = ""
    data: str | None = None
    id: str | None = None
    name: str = ""
    input: Any = None
    json_parts: list[str] = field(default_factory=list)


class MessageAssembler:
    """Messages output -> deltas as they arrive (streamed events), then one response."""

    def __init__(self, model: str, names: ToolNames) -> None:
        self.model = model
        self.names = names
        self.blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None
        self.usage: dict[str, int] = {}
        self.events = 0
        self.stopped = False
        """``message_stop`` arrived, or a whole non-streamed message."""

    def add(self, event: Any) -> Iterator[Delta]:
        self.events += 1
        kind = getattr(event, "type", "")
        if kind == "message_stop":
            self.stopped = True
        elif kind == "message_start":
            self.model = getattr(event.message, "model", None) or self.model
            self._usage(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            block = self._start(event.index, event.content_block)
            if block.text:
                yield Delta("text", block.text)
        elif kind == "content_block_delta":
            yield from self._delta(event.index, event.delta)
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
            self._usage(getattr(event, "usage", None))

    def add_whole(self, message: Any) -> None:
        """A non-streamed ``Message``: the same blocks, all at once."""
        self.model = getattr(message, "model", None) or self.model
        for index, block in enumerate(message.content or []):
            self._start(index, block)
        self.stop_reason = message.stop_reason
        self._usage(message.usage)
        self.stopped = True

    def incomplete(self) -> str | None:
        """Why the answer is not whole, or None (see the module docstring)."""
        if not self.stopped:
            if not self.events:
                return "the stream ended before its first event (an empty body)"
            return "the stream ended without message_stop (cut off)"
        if self.cut_by_output_limit():
            return "the output limit (max_tokens) cut the tool use off"
        return None

    def cut_by_output_limit(self) -> bool:
        """The output limit cut a tool use and no complete tool use precedes it."""
        if self.stop_reason != "max_tokens" or not any(
            block.type == "tool_use" for block in self.blocks.values()
        ):
            return False
        return not complete_before_cut(self.response().tool_calls)

    def usage_reported(self) -> bool:
        return bool(self.usage)

    def _start(self, index: int, block: Any) -> _Block:
        slot = _Block(
            type=getattr(block, "type", ""),
            text=getattr(block, "text", None) or "",
            thinking=getattr(block, "thinking", None) or "",
            signature=getattr(block, "signature", None) or "",
            data=getattr(block, "data", None),
            id=getattr(block, "id", None),
            name=getattr(block, "name", None) or "",
            input=getattr(block, "input", None),
        )
        self.blocks[index] = slot
        return slot

    def _delta(self, index: int, delta: Any) -> Iterator[Delta]:
        block = self.blocks.setdefault(index, _Block(type="text"))
        kind = getattr(delta, "type", "")
        if kind == "text_delta" and delta.text:
            block.text += delta.text
            yield Delta("text", delta.text)
        elif kind == "thinking_delta" and delta.thinking:
            block.thinking += delta.thinking
            yield Delta("reasoning", delta.thinking)
        elif kind == "signature_delta":
            block.signature += delta.signature or ""
        elif kind == "input_json_delta" and delta.partial_json:
            block.json_parts.append(delta.partial_json)
            if block.id is None:
                block.id = new_id("toolu")
            yield Delta("tool_arguments", delta.partial_json, block.id)

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ):
            value = getattr(usage, name, None)
            if value is not None:
                self.usage[name] = value

    def response(self) -> ModelResponse:
        ordered = [self.blocks[index] for index in sorted(self.blocks)]
        reasoning = []
        calls = []
        for block in ordered:
            if block.type == "thinking":
                reasoning.append(
                    ReasoningBlock(
                        text=block.thinking,
                        signature=block.signature or None,
                        provider=PROVIDER_TAG,
                    )
                )
            elif block.type == "redacted_thinking" and block.data:
                reasoning.append(ReasoningBlock(redacted=block.data, provider=PROVIDER_TAG))
            elif block.type == "tool_use":
                arguments = "".join(block.json_parts) if block.json_parts else block.input
                calls.append(tool_call(block.id, self.names.original(block.name), arguments))
        usage = self.usage
        return ModelResponse(
            text="".join(block.text for block in ordered if block.type == "text"),
            reasoning=reasoning,
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
                cache_read_tokens=usage.get("cache_read_input_tokens", 0),
                cache_write_tokens=usage.get("cache_creation_input_tokens", 0),
                requests=1,
            ),
            stop_reason=self.stop_reason or ("tool_use" if calls else "end_turn"),
            model=self.model,
        )


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_use_id(wire_id: str) -> str:
    """Anthropic accepts ids of letters, digits, ``_`` and ``-`` only (ids from another
    provider, or a resumed session, may carry others)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", wire_id)


def _thinking_blocks(item: AssistantItem) -> list[dict[str, Any]]:
    """Signed thinking and redacted thinking from Anthropic, unchanged; reasoning from any
    other provider cannot be verified by the API and is not sent."""
    blocks: list[dict[str, Any]] = []
    for block in item.reasoning:
        if block.provider != PROVIDER_TAG:
            continue
        if block.redacted:
            blocks.append({"type": "redacted_thinking", "data": block.redacted})
        elif block.signature:
            blocks.append(
                {"type": "thinking", "thinking": block.text, "signature": block.signature}
            )
    return blocks


def _refreshed_blocks(refreshed: RefreshedBlock, *, images: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = refreshed.text()
    if text:
        blocks.append(_text(text))
    for image in refreshed.images:
        if not images:
            blocks.append(_text(f"{image_caption(image)} {IMAGE_NOT_SENT}"))
            continue
        blocks.append(_text(image_caption(image)))
        blocks.append(
            {
                "type": "image",
                "source": {"type": "base64", "media_type": image.media_type, "data": image.base64},
            }
        )
    return blocks


def _import_sdk() -> Any:
    import anthropic

    return anthropic


def from_config(config: ModelConfig) -> AnthropicModel:
    """``provider: anthropic``."""
    return AnthropicModel(config)
