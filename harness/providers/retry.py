"""Retrying model calls in the adapter, so every wait is an event and can be cancelled.

The vendor SDKs can retry on their own, but they sleep silently inside the call. Adapters
build their SDK clients with ``max_retries=0`` and wrap each attempt in :func:`with_retries`
instead: before each wait it yields a :class:`RetryNotice` (the loop turns it into a
``model_retry`` event), and it polls ``cancelled`` while waiting, so an operator's stop
never waits out a rate-limit backoff.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness.errors import ModelError
from harness.providers.base import Chunk, Delta, RetryNotice, Spent

__all__ = [
    "CANCEL_POLL_S",
    "RetryPolicy",
    "never_cancelled",
    "wait_unless_cancelled",
    "with_retries",
]

CANCEL_POLL_S = 0.1
"""How often an in-flight model call or a retry wait checks for cancellation, whatever
the server is (or is not) sending."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter; ``retry-after`` from the server wins.

    Retry ``n`` (1-based) waits between half and all of ``min(max_s, base_s * 2**(n-1))``
    (the jitter keeps many clients from retrying in lockstep). A server's ``retry-after``
    is honoured exactly, unless it exceeds ``retry_after_max_s``: then the call fails at once
    with the wait in the message, rather than stalling a robot for minutes.
    """

    max_retries: int = 3
    base_s: float = 1.0
    max_s: float = 30.0
    retry_after_max_s: float = 120.0

    def wait_s(self, retry: int, error: ModelError, rng: random.Random) -> float | None:
        """Seconds to wait before retry number ``retry``; None when it must not happen."""
        if not error.retryable or retry > self.retries_for(error):
            return None
        if error.retry_after_s is not None:
            if error.retry_after_s > self.retry_after_max_s:
                return None
            return max(0.0, error.retry_after_s)
        ceiling = min(self.max_s, self.base_s * 2 ** (retry - 1))
        return ceiling / 2 + rng.uniform(0.0, ceiling / 2)

    def retries_for(self, error: ModelError) -> int:
        """How many retries ``error``'s kind gets (its own cap, if lower)."""
        if error.max_retries is None:
            return self.max_retries
        return min(self.max_retries, error.max_retries)


def never_cancelled() -> bool:
    """The ``cancelled`` callback used when the caller gives none."""
    return False


def wait_unless_cancelled(seconds: float, cancelled: Callable[[], bool]) -> bool:
    """Sleep ``seconds`` in short steps; return False as soon as ``cancelled()`` is true."""
    deadline = time.monotonic() + seconds
    while True:
        if cancelled():
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
        time.sleep(min(CANCEL_POLL_S, remaining))


def with_retries(
    attempt: Callable[[], Iterator[Chunk]],
    *,
    policy: RetryPolicy,
    cancelled: Callable[[], bool],
    rng: random.Random,
) -> Iterator[Chunk]:
    """Run ``attempt()`` until it finishes, retrying retryable :class:`ModelError`\\ s.

    ``attempt`` yields the chunks of one try and raises a mapped :class:`ModelError` on
    failure. A failure after some deltas were already yielded is retried too: the notice
    tells consumers the partial response was discarded, and a :class:`Spent` before it
    counts what the failed attempt's answer cost. Returns without a ``Final`` chunk when
    cancelled during a wait.
    """
    retry = 0
    while True:
        partial = False
        try:
            for chunk in attempt():
                partial = partial or isinstance(chunk, Delta)
                yield chunk
            return
        except ModelError as error:
            retry += 1
            wait = policy.wait_s(retry, error, rng)
            if wait is None:
                raise _final_error(error, retry, policy) from None
            if error.usage is not None:  # the server answered: what it cost still counts
                yield Spent(error.usage, f"an attempt that failed ({error.kind}) and is retried")
            message = str(error)
            if partial:
                message += " (the partial response streamed so far is discarded)"
            yield RetryNotice(
                attempt=retry, error_kind=error.kind, message=message, wait_s=round(wait, 3)
            )
            if not wait_unless_cancelled(wait, cancelled):
                return


def _final_error(error: ModelError, retry: int, policy: RetryPolicy) -> ModelError:
    """The error to raise, saying why it was not retried when that is not obvious."""
    if not error.retryable:
        return error
    if error.retry_after_s is not None and error.retry_after_s > policy.retry_after_max_s:
        why = (
            f"the provider asks to wait {error.retry_after_s:g} s, more than "
            f"model.options.retry_after_max_s={policy.retry_after_max_s:g}"
        )
    elif error.max_retries is not None and error.max_retries < policy.max_retries:
        why = f"gave up after {retry - 1} retries ({error.kind} is retried once at most)"
        if error.max_retries != 1:
            why = f"gave up after {retry - 1} retries ({error.kind}: {error.max_retries} at most)"
    else:
        why = f"gave up after {retry - 1} retries (model.max_retries={policy.max_retries})"
    final = copy.copy(error)
    final.args = (f"{error} ({why})",)
    return final
