"""Anthropic Messages output -> deltas and one :class:`~harness.messages.ModelResponse`.

What the Messages API sends back, streamed event by event or as one ``Message``, assembled
the same way: text, thinking (with its signature) and redacted thinking, tool-use input
fragments, the stop reason and usage (cache reads and writes included). It says when an
answer is not whole (a stream without its ``message_stop``, a tool use the output limit cut
with no complete tool use before it). :mod:`harness.providers.anthropic` sends the
requests and reads the answers with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.messages import ModelResponse, ReasoningBlock, Usage, new_id
from harness.providers.anthropic_messages import PROVIDER_TAG
from harness.providers.base import Delta
from harness.providers.transcript import ToolNames, complete_before_cut, cut_last_call, tool_call

__all__ = ["MessageAssembler"]


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
        last_arguments = ""
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
                last_arguments = (
                    arguments if isinstance(arguments, str) else json.dumps(arguments or {})
                )
        if self.stop_reason == "max_tokens" and calls:
            calls = cut_last_call(calls, last_arguments)
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
