"""Answers a limit cut off: never a report, never resent unchanged, never resent too big.

A text answer that stopped at a limit (OpenAI ``finish_reason: length``, Anthropic
``max_tokens``) is part of an answer: taken as the report, a truncated text would end the
task ``completed``. A tool call the limit cut is :class:`~harness.errors.OutputLimitError`
(the adapter keeps an answer whose first call arrived whole, see
:func:`~harness.providers.transcript.complete_before_cut`).

Two limits can stop an answer, and the server's usage report says which: the output
limit the request asked for, or the end of the server's context window (a local server
stops generating there, with the same stop reason, before the output limit: the prompt
and the answer then fill the window). A :class:`Cut` names the one that did, with the
server's own counts.

Both kinds of cut are answered the same way: the cut answer is discarded (a
``model_discarded`` event; its tokens count), a notice tells the model what happened and
how much room it has, and the request is sent again with the room the window has left
after the prompt as the server counted it (:func:`resend_limit`): more than before when
there is more, never more than there is. The resend always differs from the cut request
(the notice, and the room when there is any). A second cut ends the task ``failed`` with
the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.config import ModelConfig, chose
from harness.messages import ModelResponse

__all__ = [
    "CUT_RESENDS",
    "MIN_ANSWER_TOKENS",
    "ROOM_MARGIN",
    "Cut",
    "cut_notice",
    "is_cut_report",
    "resend_limit",
]

CUT_RESENDS = 1
"""How many changed resends a cut answer earns before the task fails."""
ROOM_MARGIN = 0.02
"""Share of the window left free when the answer limit is set from the room left (the
room is computed from the server's count of the cut prompt plus an estimate of the
notice, so only the notice's estimate is uncertain)."""
MIN_ANSWER_TOKENS = 64
"""Less room than this for an answer (or than the cut limit, when that was smaller) is no
room: the task ends naming the window."""


def is_cut_report(response: ModelResponse) -> bool:
    """A text answer without a tool call that the output limit stopped."""
    return not response.tool_calls and response.stop_reason in ("max_tokens", "length")


@dataclass(frozen=True)
class Cut:
    """One answer a limit cut off, and which limit did, by the server's counts."""

    what: str
    """What was cut: "a text answer", "a tool call (move_to)"."""
    limit: int
    """The output limit the cut request asked for."""
    window: int
    """The context window the request was budgeted against."""
    prompt_tokens: int | None = None
    """The prompt as the server counted it (None: it reported no usage)."""
    output_tokens: int | None = None
    """What the server generated before it stopped (None: no usage)."""

    @property
    def by_window(self) -> bool:
        """The server stopped before the output limit: its context window ended first."""
        return self.output_tokens is not None and self.output_tokens < self.limit

    @property
    def server_window(self) -> int | None:
        """The window the server stopped at (prompt + answer), when it was the window."""
        if not self.by_window or self.prompt_tokens is None or self.output_tokens is None:
            return None
        return self.prompt_tokens + self.output_tokens

    def describe(self) -> str:
        """The limit that cut the answer, in the server's numbers."""
        if self.by_window:
            counted = (
                f" (the prompt took {self.prompt_tokens} tokens)" if self.prompt_tokens else ""
            )
            return (
                f"the end of the server's context window cut {self.what} off after "
                f"{self.output_tokens} tokens, before the output limit of {self.limit}"
                f"{counted}"
            )
        return f"the output limit of {self.limit} tokens cut {self.what} off"


def resend_limit(model: ModelConfig, *, limit: int, window: int, prompt_tokens: int) -> int:
    """The answer limit for the resend: the room the window has left after a prompt of
    ``prompt_tokens`` (less :data:`ROOM_MARGIN`), capped at twice ``limit`` (or at
    ``limit`` itself when the user chose it: it is theirs to raise). Never more than the
    room: a value below :data:`MIN_ANSWER_TOKENS` (and below ``limit``) means there is
    none."""
    room = window - prompt_tokens - int(window * ROOM_MARGIN)
    wanted = limit if chose(model, "max_output_tokens") else 2 * limit
    return min(wanted, room)


def cut_notice(cut: Cut, resend: int) -> str:
    """What the model is told before the resend."""
    which = "the end of the context window" if cut.by_window else "the output limit"
    text = (
        f"Your previous answer was cut off by {which} ({cut.describe()}) and was "
        "discarded: nothing of it was used or run."
    )
    if resend > cut.limit:
        text += f" This answer may be up to {resend} tokens."
    elif resend < cut.limit:
        text += f" The window has room for at most {resend} tokens of answer now."
    return text + (
        " Answer more briefly: a short report, or one tool call with compact arguments "
        "(put long content in several smaller steps)."
    )
