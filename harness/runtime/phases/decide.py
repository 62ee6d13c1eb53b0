"""The decide phase: one model call, streamed, priced and recorded.

The request is Resident, then Accumulated, then Refreshed. The call streams its deltas as
events. A provider overflow climbs a recovery ladder, one step per rejected request
(:mod:`~harness.runtime.phases.overflow_ladder`); when the provider states its limit
(``ContextOverflowError.limit_tokens``), the session's working budget is lowered to it
first. Any other model error, or a cancel while the call is in flight, ends the task (the
cancel within :data:`harness.cancel.POLL_S`, the answer discarded). An answer the output
limit cut off is discarded and the request resent changed, once, with no more room for the
answer than the window has left (:mod:`harness.runtime.phases.cut`). Every request the server
answered is counted in the task's usage, whether its answer is used, cut, retried or
rejected (the adapter's ``Spent`` chunks and ``ModelError.usage``;
:mod:`~harness.runtime.phases.pricing`). The decision (text, at
most one tool call, or both) is recorded in Accumulated before anything acts on it.
"""

from __future__ import annotations

import time
from typing import Any

from harness.cancel import Cancelled, stream_cancellable
from harness.config import ModelConfig, chose
from harness.context import Budget
from harness.errors import ContextOverflowError, ModelError, OutputLimitError
from harness.events import (
    ModelDeltaEvent,
    ModelDiscardedEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    ModelRetryEvent,
    PromptSnapshotEvent,
)
from harness.messages import (
    AssistantItem,
    ModelRequest,
    ModelResponse,
    NoticeItem,
    ToolCall,
    Usage,
)
from harness.providers.base import Delta, Final, RetryNotice, Spent
from harness.redact import RedactingStream
from harness.runtime.lane import Lane, Steps
from harness.runtime.phases.cut import (
    CUT_RESENDS,
    MIN_ANSWER_TOKENS,
    Cut,
    cut_notice,
    is_cut_report,
    resend_limit,
)
from harness.runtime.phases.overflow_ladder import lower_budget, recover
from harness.runtime.phases.pricing import count_spent, priced, usage_unreported
from harness.runtime.phases.refresh import compact
from harness.runtime.task import TaskEnding

__all__ = ["LATE_ANSWER_GRACE_S", "decide"]

LATE_ANSWER_GRACE_S = 0.05
"""After a cancel is seen, an answer that completes within this long is still recorded (its
call is answered "cancelled"); anything later is discarded."""


def decide(lane: Lane) -> Steps[ModelResponse | TaskEnding]:
    """The model's decision for this turn, or the ending that stopped it."""
    context = lane.context
    max_output = answer_limit(lane.model_config, context.budget)
    rejected: list[int] = []
    """Estimated size of every request the provider rejected as too large."""
    cuts: list[Cut] = []
    """Every answer a limit cut off (discarded), with the limit that did."""
    while True:
        request = context.build_request(max_output_tokens=max_output)
        yield snapshot_prompt(lane, request)
        started = time.monotonic()
        try:
            response = yield from call_model(lane, request)
        except ContextOverflowError as exc:
            count_spent(lane, exc.usage)
            yield lane.emit(model_error_event(exc))
            rejected.append(lane.state.last_prompt_estimate)
            ending = yield from recover(lane, exc, rejected, max_output=max_output)
            if ending is not None:
                return ending
            continue
        except OutputLimitError as exc:
            yield lane.emit(model_error_event(exc))
            cut_off = exc.response or ModelResponse(
                stop_reason="max_tokens",
                usage=exc.usage or Usage(requests=1, unreported_requests=1),
            )
            cuts.append(
                (
                    yield from discard_cut(
                        lane, cut_off, limit=max_output, duration_s=time.monotonic() - started
                    )
                )
            )
        except ModelError as exc:
            count_spent(lane, exc.usage)
            yield lane.emit(model_error_event(exc))
            return TaskEnding("failed", f"model error ({exc.kind}): {exc}")
        else:
            if isinstance(response, TaskEnding):
                return response
            if not is_cut_report(response):
                yield from record_decision(lane, response, duration_s=time.monotonic() - started)
                return response
            cuts.append(
                (
                    yield from discard_cut(
                        lane, response, limit=max_output, duration_s=time.monotonic() - started
                    )
                )
            )
        if len(cuts) > CUT_RESENDS:
            return TaskEnding(
                "failed",
                f"a limit cut the model's answer off {len(cuts)} times "
                f"({'; '.join(cut.describe() for cut in cuts)}); a cut answer is never a "
                "report or a call: " + cut_remedy(cuts[-1]),
            )
        resend = yield from room_for_resend(lane, cuts[-1])
        if isinstance(resend, TaskEnding):
            return resend
        if resend < min(cuts[-1].limit, MIN_ANSWER_TOKENS):
            return TaskEnding(
                "failed",
                f"{cuts[-1].describe()}, and the prompt leaves room for only "
                f"{max(0, resend)} tokens of answer in the {context.budget.context_window}-"
                "token window (after a forced compaction); a cut answer is never a report "
                "or a call: " + cut_remedy(cuts[-1]),
            )
        lane.record(NoticeItem(text=cut_notice(cuts[-1], resend)))
        max_output = resend


def cut_remedy(cut: Cut) -> str:
    """What a user can do about answers cut off by ``cut``'s limit."""
    if cut.by_window:
        return (
            "the server's context window is full: give the model a larger window (the "
            "server's context size) or lower model.context_window to what the server has"
        )
    return "raise model.max_output_tokens or ask for a shorter answer"


def room_for_resend(lane: Lane, cut: Cut) -> Steps[int | TaskEnding]:
    """The answer limit for the resend after ``cut``: the room the window has after the
    prompt as the server counted it (plus the notice about to be added), from the
    server's own window when that is what stopped the answer. When that is less than the
    cut limit, a compaction is forced first to make room (the operator's cancel during it
    ends the task)."""
    context = lane.context
    server_window = cut.server_window
    if server_window is not None and server_window < context.budget.context_window * 0.99:
        # The server's window ended before the configured one: budget with the real one.
        lower_budget(context, server_window, max_output=None)
    resend = _resend(lane, cut)
    if resend < cut.limit:
        ending = yield from compact(
            lane,
            force=True,
            reason=f"{cut.describe()}; making room for the answer in the window",
        )
        if ending is not None and ending.status == "cancelled":
            return ending
        # A compaction that found nothing to fold leaves the room as it was: the resend
        # asks for what there is (or the task ends naming the window, in decide).
        resend = _resend(lane, cut)
    return resend


def _resend(lane: Lane, cut: Cut) -> int:
    context = lane.context
    notice = context.estimator.calibrated(context.estimator.text(cut_notice(cut, cut.limit)))
    prompt = context.total_tokens() + notice
    if cut.prompt_tokens is not None:
        # The server's count of the cut prompt is the best number there is; Accumulated
        # changed since only by what a compaction removed, which the estimate sees.
        counted = cut.prompt_tokens + notice
        if context.total_tokens() >= lane.state.last_prompt_estimate:
            prompt = max(prompt, counted)
    return resend_limit(
        lane.model_config,
        limit=cut.limit,
        window=context.budget.context_window,
        prompt_tokens=prompt,
    )


def discard_cut(
    lane: Lane, response: ModelResponse, *, limit: int, duration_s: float
) -> Steps[Cut]:
    """An answer a limit cut (a text, or a tool call whose arguments never completed): its
    tokens count and calibrate the estimate, nothing of it is used. Returns which limit
    cut it."""
    context = lane.context
    context.consume_transient()
    usage = priced(response, lane.model_config.prices).usage
    lane.state.add_usage(usage)
    reported = usage.prompt_tokens if usage.unreported_requests == 0 else 0
    if reported:
        context.estimator.observe_usage(
            estimated_prompt=lane.state.last_prompt_estimate, reported_prompt=reported
        )
    calls = [call for call in response.tool_calls if call.cut]
    cut = Cut(
        what=f"a tool call ({calls[0].name or 'unnamed'})" if calls else "a text answer",
        limit=limit,
        window=context.budget.context_window,
        prompt_tokens=reported or None,
        output_tokens=usage.output_tokens if reported else None,
    )
    yield lane.emit(
        ModelDiscardedEvent(
            reason=f"{cut.describe()} (stop reason {response.stop_reason!r}); a cut answer "
            "is never a report or a call",
            complete=False,
            text=response.text,
            tool_calls=[
                {"id": c.id, "name": c.name, "arguments_so_far": c.raw_arguments or ""}
                for c in calls
            ],
            usage=usage,
            duration_s=round(duration_s, 4),
        )
    )
    return cut


def answer_limit(model: ModelConfig, budget: Budget) -> int:
    """``model.max_output_tokens`` as configured; left at its default, at most the reserve,
    so a small window (8192 tokens, reserve 2048) never asks for more than it has room
    for (:func:`harness.config.chose`, the rule ``reserve_tokens`` follows too)."""
    if chose(model, "max_output_tokens"):
        return model.max_output_tokens
    return max(1, min(model.max_output_tokens, budget.reserve_tokens))


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
            elif isinstance(chunk, Spent):
                count_spent(lane, chunk.usage)
            elif isinstance(chunk, Final):
                final = chunk.response
                if not chunk.usage_reported:
                    final = usage_unreported(final)
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
            tool_calls=[call_summary(c) for c in response.tool_calls],
            stop_reason=response.stop_reason,
            usage=response.usage,
            duration_s=round(duration_s, 4),
        )
    )


def call_summary(call: ToolCall) -> dict[str, Any]:
    """A call as the ``model_response`` event shows it; a cut call with what arrived."""
    if call.cut:
        return {
            "id": call.id,
            "name": call.name,
            "cut": True,
            "arguments_so_far": call.raw_arguments or "",
        }
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def model_error_event(exc: ModelError) -> ModelErrorEvent:
    return ModelErrorEvent(
        kind=exc.kind, message=str(exc), status_code=exc.status_code, retryable=exc.retryable
    )
