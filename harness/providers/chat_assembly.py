"""Chat Completions output -> deltas and one :class:`~harness.messages.ModelResponse`.

What an OpenAI-compatible server sends back, streamed chunk by chunk or as one completion,
assembled the same way: text and refusals, reasoning (under whichever field the server
uses), tool-call fragments keyed by index (or call id), the finish reason and usage. It
says when an answer is not whole (a stream without its ``finish_reason``, a tool call the
output limit cut with no complete call before it). :mod:`harness.providers.openai` sends
the requests and reads the answers with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.messages import ModelResponse, ReasoningBlock, Usage, new_id
from harness.providers.base import Delta
from harness.providers.transcript import ToolNames, complete_before_cut, cut_last_call, tool_call

__all__ = ["REASONING_FIELDS", "STOP_REASONS", "ChatAssembler", "usage_from_openai"]

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where OpenAI-compatible servers put reasoning text (DeepSeek/vLLM, Ollama/OpenRouter)."""
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


class ChatAssembler:
    """Chat Completions output -> deltas as they arrive, then one :class:`ModelResponse`.

    Streamed tool-call fragments are keyed by their ``index`` (servers that omit it are
    matched by call id, else continue the last call), so interleaved fragments of several
    calls assemble correctly. A non-streamed completion fills the same slots at once.
    """

    def __init__(self, model: str, names: ToolNames) -> None:
        self.model = model
        self.names = names
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_field = ""
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.events = 0
        self.whole = False
        """A non-streamed completion arrived (a parsed body is whole by construction)."""

    def add(self, chunk: Any) -> Iterator[Delta]:
        """One streamed ``ChatCompletionChunk``."""
        self.events += 1
        self._envelope(chunk)
        for choice in getattr(chunk, "choices", None) or []:
            if (getattr(choice, "index", 0) or 0) != 0:
                continue  # n > 1 is never requested
            delta = getattr(choice, "delta", None)
            if delta is not None:
                yield from self._prose(delta)
                yield from self._fragments(delta.tool_calls or [])
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason

    def add_whole(self, completion: Any) -> None:
        """A non-streamed ``ChatCompletion``."""
        self._envelope(completion)
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise ValueError("the server returned no choices")
        message = choices[0].message
        for _ in self._prose(message):
            pass
        for index, call in enumerate(message.tool_calls or []):
            function = getattr(call, "function", None)
            if function is not None:
                self.calls[index] = _PartialCall(
                    call.id or new_id("call"), function.name or "", [function.arguments or ""]
                )
        self.finish_reason = choices[0].finish_reason
        self.whole = True

    def incomplete(self) -> str | None:
        """Why the answer is not whole, or None: a stream must end with a
        ``finish_reason``; a tool call stopped by the output limit may be cut anywhere."""
        if not self.whole and self.finish_reason is None:
            if not self.events:
                return "the stream ended before its first chunk (an empty body)"
            return "the stream ended without a finish_reason (cut off)"
        if self.cut_by_output_limit():
            return "the output limit (max_tokens) cut the tool call off"
        return None

    def cut_by_output_limit(self) -> bool:
        """The output limit cut a tool call and no complete call precedes it."""
        if self.finish_reason != "length" or not self.calls:
            return False
        return not complete_before_cut(self.response().tool_calls)

    def usage_reported(self) -> bool:
        return self.usage is not None

    def _envelope(self, part: Any) -> None:
        if getattr(part, "model", None):
            self.model = part.model
        if getattr(part, "usage", None) is not None:
            self.usage = part.usage

    def _prose(self, message: Any) -> Iterator[Delta]:
        """Text (a refusal counts as text) and reasoning of a delta or a message."""
        for piece in (message.content, getattr(message, "refusal", None)):
            if piece:
                self.text.append(piece)
                yield Delta("text", piece)
        wire_field, value = _reasoning_of(message)
        if value:
            self.reasoning_field = self.reasoning_field or wire_field
            self.reasoning.append(value)
            yield Delta("reasoning", value)

    def _fragments(self, fragments: list[Any]) -> Iterator[Delta]:
        for fragment in fragments:
            call = self._slot(fragment)
            function = getattr(fragment, "function", None)
            if function is None:
                continue
            name = getattr(function, "name", None)
            if name and name != call.name:
                call.name = name if not call.name else call.name + name
            arguments = getattr(function, "arguments", None)
            if arguments:
                call.arguments.append(arguments)
                yield Delta("tool_arguments", arguments, call.id)

    def _slot(self, fragment: Any) -> _PartialCall:
        index = getattr(fragment, "index", None)
        fragment_id = getattr(fragment, "id", None)
        if index is None:
            known = next(
                (i for i, c in self.calls.items() if fragment_id and c.id == fragment_id), None
            )
            if known is not None:
                index = known
            elif fragment_id or not self.calls:
                index = len(self.calls)
            else:
                index = max(self.calls)
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _PartialCall(fragment_id or new_id("call"))
        return call

    def response(self) -> ModelResponse:
        ordered = [call for _, call in sorted(self.calls.items())]
        calls = [
            tool_call(call.id, self.names.original(call.name), "".join(call.arguments))
            for call in ordered
        ]
        if self.finish_reason == "length" and ordered:
            calls = cut_last_call(calls, "".join(ordered[-1].arguments))
        reasoning = []
        if self.reasoning:
            reasoning.append(
                ReasoningBlock(
                    text="".join(self.reasoning), provider=f"openai:{self.reasoning_field}"
                )
            )
        return ModelResponse(
            text="".join(self.text),
            reasoning=reasoning,
            tool_calls=calls,
            usage=usage_from_openai(self.usage),
            stop_reason=_stop_reason(self.finish_reason, bool(calls)),
            model=self.model,
        )


@dataclass
class _PartialCall:
    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def usage_from_openai(usage: Any) -> Usage:
    """``prompt_tokens`` includes cached tokens; :class:`Usage` keeps them apart."""
    if usage is None:
        return Usage(requests=1)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    written = (getattr(details, "cache_write_tokens", 0) or 0) if details is not None else 0
    return Usage(
        input_tokens=max(0, prompt - cached - written),
        output_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        requests=1,
    )


def _reasoning_of(message: Any) -> tuple[str, str]:
    for wire_field in REASONING_FIELDS:
        value = getattr(message, wire_field, None)
        if isinstance(value, str) and value:
            return wire_field, value
    return "", ""


def _stop_reason(finish_reason: str | None, has_calls: bool) -> str:
    if finish_reason == "length":
        return "max_tokens"
    if has_calls:
        return "tool_use"  # some servers say "stop" even when they called a tool
    if finish_reason is None:
        return "end_turn"
    return STOP_REASONS.get(finish_reason, finish_reason)
