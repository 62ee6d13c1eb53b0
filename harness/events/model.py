"""One model call as it streams: deltas, retries, the response, an answer discarded after a
cancel, and errors.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.events.base import EventBase
from harness.messages import Usage

__all__ = [
    "ModelDeltaEvent",
    "ModelDiscardedEvent",
    "ModelErrorEvent",
    "ModelResponseEvent",
    "ModelRetryEvent",
]


class ModelDeltaEvent(EventBase):
    """A fragment of a streaming model response."""

    type: Literal["model_delta"] = "model_delta"
    kind: Literal["text", "reasoning", "tool_arguments"]
    delta: str
    tool_call_id: str | None = None


class ModelRetryEvent(EventBase):
    """A model call failed in a way that may pass, and will be tried again after a wait."""

    type: Literal["model_retry"] = "model_retry"
    attempt: int
    error_kind: str
    message: str
    wait_s: float


class ModelResponseEvent(EventBase):
    type: Literal["model_response"] = "model_response"
    model: str = ""
    text: str = ""
    reasoning_chars: int = 0
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    stop_reason: str = ""
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0


class ModelDiscardedEvent(EventBase):
    """A model answer the harness did not act on: the operator cancelled while the call was
    in flight, or a limit cut the answer off. ``complete`` says whether the whole answer
    had arrived; ``text`` and ``tool_calls`` are what had (a cut call as its name and
    ``arguments_so_far``; nothing of it enters the context, and no call of it runs).
    ``usage`` is what the answer cost (counted in the task's usage; empty when the call
    was abandoned before the server reported any). Anything the abandoned call delivers
    later is dropped."""

    type: Literal["model_discarded"] = "model_discarded"
    reason: str
    complete: bool = False
    text: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0


class ModelErrorEvent(EventBase):
    type: Literal["model_error"] = "model_error"
    kind: str
    message: str
    status_code: int | None = None
    retryable: bool = False
