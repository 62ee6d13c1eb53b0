"""The model protocol: a provider-neutral request in, a stream of chunks out.

Every model is driven through ``stream()``, which yields text and reasoning deltas,
tool-argument fragments and retry notices as they happen, and ends with exactly one
:class:`Final` chunk carrying the assembled :class:`ModelResponse`. A model that cannot
stream simply yields its ``Final``. This keeps retries and partial text visible to the
operator as events without any background thread: the loop iterates the stream in the
caller's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from harness.errors import HarnessError, ModelCancelledError
from harness.messages import ModelRequest, ModelResponse, Usage
from harness.tokens import ImageCostModel

__all__ = [
    "Chunk",
    "Delta",
    "Final",
    "Model",
    "RetryNotice",
    "Spent",
    "can_summarize",
    "complete",
]


@dataclass(frozen=True)
class Delta:
    """A fragment of the response as it streams."""

    kind: Literal["text", "reasoning", "tool_arguments"]
    text: str
    tool_call_id: str | None = None


@dataclass(frozen=True)
class RetryNotice:
    """The adapter will retry after ``wait_s`` (rate limit, 5xx, timeout)."""

    attempt: int
    error_kind: str
    message: str
    wait_s: float


@dataclass(frozen=True)
class Spent:
    """A request the server answered whose answer is not this call's response: a vision
    probe, an attempt that was retried (cut, empty, broken off), an empty stream asked
    again unstreamed. Its ``usage`` counts like any other (nothing the server answered is
    lost); ``what`` says which request it was."""

    usage: Usage
    what: str


@dataclass(frozen=True)
class Final:
    """The complete response; a model yields it only for an answer that arrived whole.

    ``usage_reported`` is False when the provider sent no token usage (many local servers
    stream none): ``response.usage`` then holds zeros that mean "unknown", not "free", and
    the harness's own estimate is the better number.
    """

    response: ModelResponse
    usage_reported: bool = True


Chunk = Delta | RetryNotice | Spent | Final


@runtime_checkable
class Model(Protocol):
    """What the loop needs from a model.

    ``name`` identifies it in events; ``context_window`` (None when unknown) and
    ``image_cost`` let the harness size budgets. ``cancelled`` is polled while the call is
    in flight (about every 100 ms in the HTTP adapters, whether or not the server sends
    anything) and during retry waits; once it is true the stream ends without a
    :class:`Final`, so an operator's stop never waits for a slow provider.

    A model that cannot write prose (summaries, lessons) sets the optional class attribute
    ``supports_summaries = False``; :func:`can_summarize` is how callers read it.
    """

    name: str
    context_window: int | None
    image_cost: ImageCostModel

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]: ...


def complete(
    model: Model, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
) -> ModelResponse:
    """Run a model call to completion and return the response (deltas are dropped).

    For callers that need a value (summaries, lessons, evaluations). ``cancelled`` is
    passed to the model, which abandons the call once it is true; this then raises
    :class:`~harness.errors.ModelCancelledError` rather than return a partial or late
    answer. A late answer that arrives although ``cancelled()`` is already true is dropped
    the same way. The response's usage includes what the call's :class:`Spent` requests
    cost (probes, retried attempts).
    """
    final: ModelResponse | None = None
    spent = Usage()
    for chunk in model.stream(request, cancelled=cancelled):
        if isinstance(chunk, Final):
            final = chunk.response
        elif isinstance(chunk, Spent):
            spent = spent + chunk.usage
    if cancelled is not None and cancelled():
        raise ModelCancelledError(f"a call to model {model.name!r}")
    if final is None:
        raise HarnessError(f"model {model.name!r} ended its stream without a final response")
    if spent.requests:
        # The caller counts the response's usage: the requests spent on the way are in it.
        final = final.model_copy(update={"usage": final.usage + spent})
    return final


def can_summarize(model: object | None) -> bool:
    """True unless there is no model or it declares ``supports_summaries = False``.

    Compaction and memory consolidation then use their deterministic fallbacks instead of
    asking a model (the offline planner, for one, plans actions and writes no prose).
    """
    return model is not None and bool(getattr(model, "supports_summaries", True))
