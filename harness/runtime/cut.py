"""Answers the output limit cut off: never a report, never resent unchanged.

A text answer that stopped at the output limit (OpenAI ``finish_reason: length``, Anthropic
``max_tokens``) is part of an answer: taken as the report, a truncated text would end the
task ``completed``. A tool call the limit cut is :class:`~harness.errors.OutputLimitError`
(the adapter keeps an answer whose first call arrived whole, see
:func:`~harness.providers.transcript.complete_before_cut`).

Both are answered the same way: the cut answer is discarded (a ``model_discarded`` event),
a notice tells the model what happened and how much room it has, and the request is sent
again with more room for the answer when the window has it. The resend always differs from
the cut request (the notice, and the room when there is any). A second cut ends the task
``failed`` with the reason.
"""

from __future__ import annotations

from harness.config import ModelConfig, chose
from harness.context import Context
from harness.messages import ModelResponse

__all__ = ["CUT_RESENDS", "cut_notice", "is_cut_report", "more_room"]

CUT_RESENDS = 1
"""How many changed resends a cut answer earns before the task fails."""
ROOM_MARGIN = 0.05
"""Share of the window left free when the answer limit is raised (the estimate is rough)."""


def is_cut_report(response: ModelResponse) -> bool:
    """A text answer without a tool call that the output limit stopped."""
    return not response.tool_calls and response.stop_reason in ("max_tokens", "length")


def more_room(model: ModelConfig, context: Context, *, limit: int, prompt_tokens: int) -> int:
    """The answer limit for the resend: twice ``limit`` when the window has room for it after
    the prompt, else what room there is (never less than ``limit``). A limit the user set
    (``model.max_output_tokens`` written in the config) is kept: it is theirs to raise."""
    if chose(model, "max_output_tokens"):
        return limit
    window = context.budget.context_window
    room = window - prompt_tokens - int(window * ROOM_MARGIN)
    return max(limit, min(2 * limit, room))


def cut_notice(limit: int, roomier: int, *, what: str) -> str:
    """What the model is told before the resend."""
    text = (
        f"Your previous answer was cut off by the output limit of {limit} tokens ({what}) "
        "and was discarded: nothing of it was used or run."
    )
    if roomier > limit:
        text += f" This answer may be up to {roomier} tokens."
    return text + (
        " Answer more briefly: a short report, or one tool call with compact arguments "
        "(put long content in several smaller steps)."
    )
