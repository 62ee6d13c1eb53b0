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

Message conversion (items -> alternating messages and their blocks) lives in
:mod:`harness.providers.anthropic_messages`, and the assembly of what comes back (events ->
deltas and one response) in :mod:`harness.providers.anthropic_assembly`; this module
builds the rest of the request (tools, thinking, effort, cache breakpoints), owns the
client and maps its errors. :class:`Conversation` and :class:`MessageAssembler` are
re-exported here.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from harness.config import ModelConfig
from harness.errors import ConfigError, ContextOverflowError, ModelError
from harness.messages import ModelRequest, ModelResponse
from harness.providers.anthropic_assembly import MessageAssembler
from harness.providers.anthropic_messages import (
    Conversation,
    assistant_blocks,
    refreshed_blocks,
    text_block,
    tool_use_id,
)
from harness.providers.failures import Failure, classify_failure, timed_out, unreachable
from harness.providers.remote import RemoteModel
from harness.providers.settings import AdapterOptions, parse_options, resolve_api_key
from harness.providers.transcript import ToolNames, UserText, read_transcript

__all__ = [
    "MAX_CACHE_BREAKPOINTS",
    "AnthropicModel",
    "AnthropicOptions",
    "Conversation",
    "MessageAssembler",
    "from_config",
]

MAX_CACHE_BREAKPOINTS = 4
"""Anthropic rejects a request with more ``cache_control`` blocks than this."""
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
                conversation.add("user", [text_block(entry.text)], entry.index)
                continue
            conversation.add("assistant", assistant_blocks(entry, names), entry.index)
            for answer in entry.answers:
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": tool_use_id(answer.wire_id),
                    "content": answer.text(mark_error=False),
                }
                if answer.result is not None and answer.result.is_error:
                    result["is_error"] = True
                conversation.add("user", [result], answer.index)
        if request.refreshed is not None:
            blocks = refreshed_blocks(request.refreshed, images=self._sends_images())
            conversation.add("user", blocks, None)
        conversation.finish()
        return conversation

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


def _import_sdk() -> Any:
    import anthropic

    return anthropic


def from_config(config: ModelConfig) -> AnthropicModel:
    """``provider: anthropic``."""
    return AnthropicModel(config)
