"""The decide phase: one model call, streamed, priced and recorded.

The request is Resident, then Accumulated, then Refreshed. The call streams its deltas as
events; a provider overflow gets one forced compaction and one resend; any other model
error, or a cancel while the call is in flight, ends the task (the cancel within
:data:`harness.cancel.POLL_S`, the answer discarded). The decision (text, at most one tool
call, or both) is recorded in Accumulated before anything acts on it.
"""

from __future__ import annotations

import time

from harness.cancel import Cancelled, stream_cancellable
from harness.config import PriceConfig
from harness.errors import ContextOverflowError, ModelError
from harness.events import (
    ModelDeltaEvent,
    ModelDiscardedEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    ModelRetryEvent,
    PromptSnapshotEvent,
)
from harness.messages import AssistantItem, ModelRequest, ModelResponse
from harness.providers.base import Delta, Final, RetryNotice
from harness.redact import RedactingStream
from harness.runtime.lane import Lane, Steps
from harness.runtime.refresh import compact
from harness.runtime.task import TaskEnding

__all__ = ["LATE_ANSWER_GRACE_S", "decide", "priced"]

LATE_ANSWER_GRACE_S = 0.05
"""After a cancel is seen, an answer that completes within this long is still recorded (its
call is answered "cancelled"); anything later is discarded."""


def decide(lane: Lane) -> Steps[ModelResponse | TaskEnding]:
    """The model's decision for this turn, or the ending that stopped it."""
    context = lane.context
    max_output = lane.model_config.max_output_tokens
    for attempt in (1, 2):
        request = context.build_request(max_output_tokens=max_output)
        yield snapshot_prompt(lane, request)
        started = time.monotonic()
        try:
            response = yield from call_model(lane, request)
        except ContextOverflowError as exc:
            yield lane.emit(model_error_event(exc))
            if attempt == 2:
                return TaskEnding(
                    "failed", f"context overflow again after a forced compaction: {exc}"
                )
            ending = yield from compact(lane, force=True, reason=f"provider overflow: {exc}")
            if ending is not None:
                return ending
            continue
        except ModelError as exc:
            yield lane.emit(model_error_event(exc))
            return TaskEnding("failed", f"model error ({exc.kind}): {exc}")
        if isinstance(response, TaskEnding):
            return response
        yield from record_decision(lane, response, duration_s=time.monotonic() - started)
        return response
    raise AssertionError("unreachable: the second attempt always returns")


def snapshot_prompt(lane: Lane, request: ModelRequest) -> PromptSnapshotEvent:
    context = lane.context
    sections = context.sections()
    lane.state.last_prompt_estimate = sum(sections.values())
    return lane.emit(  # type: ignore[return-value]
        PromptSnapshotEvent(
            sections=sections,
            total_tokens=lane.state.last_prompt_estimate,
            budget_tokens=context.budget.context_window,
            threshold_tokens=context.budget.threshold,
            items=len(request.items),
            images=len(request.refreshed.images) if request.refreshed else 0,
            resident_hash=context.resident_hash(),
        )
    )


def call_model(lane: Lane, request: ModelRequest) -> Steps[ModelResponse | TaskEnding]:
    """Stream one model call; the cancelled ending if the operator stopped it.

    The call runs on a worker thread watched from the loop's (:mod:`harness.cancel`), so a
    cancel is seen within ``POLL_S`` however long the provider blocks. An answer still in
    flight at the cancel is abandoned and recorded as discarded (a ``model_discarded``
    event; nothing of it enters the context or runs). An answer that was already complete
    is recorded as usual and the gates answer its call "cancelled, not executed".

    Deltas are redacted as streams (one per kind and tool call), not one by one: a delta
    carries only text that can no longer turn out to be part of a secret, so a key split
    across deltas at any offset never leaves in fragments, and the joined deltas equal the
    redacted ``model_response``. An answer that ends without a response (an error, a
    cancel) releases nothing it held back: that tail could be half a key; the discarded
    event shows what the deltas carried.
    """
    final: ModelResponse | None = None
    model = lane.model
    started = time.monotonic()
    streams: dict[tuple[str, str | None], RedactingStream] = {}
    text: list[str] = []
    arguments: list[str] = []
    chunks = stream_cancellable(
        lambda cancelled: model.stream(request, cancelled=cancelled),
        cancelled=lane.should_cancel,
        what="the model call",
        grace_s=LATE_ANSWER_GRACE_S,
    )
    try:
        for chunk in chunks:
            if isinstance(chunk, Delta):
                key = (chunk.kind, chunk.tool_call_id)
                stream = streams.get(key)
                if stream is None:
                    stream = streams[key] = lane.session.redactor.stream()
                safe = stream.feed(chunk.text)
                if safe:
                    (text if chunk.kind == "text" else arguments).append(safe)
                    yield lane.emit(_delta(chunk.kind, safe, chunk.tool_call_id))
            elif isinstance(chunk, RetryNotice):
                streams.clear()  # the next attempt answers afresh; what was held goes
                text.clear()
                arguments.clear()
                yield lane.emit(
                    ModelRetryEvent(
                        attempt=chunk.attempt,
                        error_kind=chunk.error_kind,
                        message=chunk.message,
                        wait_s=chunk.wait_s,
                    )
                )
            elif isinstance(chunk, Final):
                final = chunk.response
                if not chunk.usage_reported:
                    final = _usage_unreported(final)
    except Cancelled:
        yield lane.emit(
            ModelDiscardedEvent(
                reason="cancelled by the operator while the model call was in flight; the "
                "call was abandoned and anything it answers later is dropped",
                complete=False,
                text="".join(text),
                tool_calls=[{"arguments_so_far": "".join(arguments)}] if arguments else [],
                duration_s=round(time.monotonic() - started, 4),
            )
        )
        return TaskEnding("cancelled", "cancelled by the operator during the model call")
    finally:
        chunks.close()
    if final is None and lane.should_cancel():
        # The adapter stopped early (cancelled during a retry wait or between chunks).
        return TaskEnding("cancelled", "cancelled by the operator during the model call")
    if final is None:
        raise ModelError(f"model {model.name!r} returned no response")
    for (kind, call_id), stream in streams.items():
        rest = stream.finish()
        if rest:
            yield lane.emit(_delta(kind, rest, call_id))
    return final


def _delta(kind: str, text: str, tool_call_id: str | None) -> ModelDeltaEvent:
    return ModelDeltaEvent(kind=kind, delta=text, tool_call_id=tool_call_id)  # type: ignore[arg-type]


def record_decision(lane: Lane, response: ModelResponse, *, duration_s: float) -> Steps[None]:
    """Transient images leave, usage is counted, the decision enters Accumulated."""
    context = lane.context
    state = lane.state
    context.consume_transient()
    response = priced(response, lane.model_config.prices)
    state.add_usage(response.usage)
    reported = response.usage.prompt_tokens
    if reported:
        context.estimator.observe_usage(
            estimated_prompt=state.last_prompt_estimate, reported_prompt=reported
        )
    lane.record(
        AssistantItem(
            text=response.text,
            reasoning=response.reasoning,
            tool_calls=response.tool_calls,
            model=response.model,
        )
    )
    if response.text:
        state.last_text = response.text
    yield lane.emit(
        ModelResponseEvent(
            model=response.model,
            text=response.text,
            reasoning_chars=sum(len(r.text) for r in response.reasoning),
            tool_calls=[
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
            ],
            stop_reason=response.stop_reason,
            usage=response.usage,
            duration_s=round(duration_s, 4),
        )
    )


def priced(response: ModelResponse, prices: PriceConfig | None) -> ModelResponse:
    """The response with its cost filled in from the configured prices (per million)."""
    if prices is None or response.usage.cost_usd is not None:
        return response
    usage = response.usage
    cache_read = prices.cache_read if prices.cache_read is not None else prices.input * 0.1
    cache_write = prices.cache_write if prices.cache_write is not None else prices.input * 1.25
    cost = (
        usage.input_tokens * prices.input
        + usage.output_tokens * prices.output
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
    ) / 1e6
    return response.model_copy(update={"usage": usage.model_copy(update={"cost_usd": cost})})


def model_error_event(exc: ModelError) -> ModelErrorEvent:
    return ModelErrorEvent(
        kind=exc.kind, message=str(exc), status_code=exc.status_code, retryable=exc.retryable
    )


def _usage_unreported(response: ModelResponse) -> ModelResponse:
    """The provider sent no usage: one request whose tokens are unknown (never 0/0)."""
    usage = response.usage.model_copy(
        update={"requests": max(1, response.usage.requests), "unreported_requests": 1}
    )
    return response.model_copy(update={"usage": usage})
