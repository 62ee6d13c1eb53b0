"""Retrying model calls in the adapter, so every wait is an event and can be cancelled.

The vendor SDKs can retry on their own, but they sleep silently inside the call. Adapters
build their SDK clients with ``max_retries=0`` and wrap each attempt in :func:`with_retries`
instead: before each wait it yields a :class:`RetryNotice` (the loop turns it into a
``model_retry`` event), and it polls ``cancelled`` while waiting, so an operator's stop
never waits out a rate-limit backoff.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness.errors import ModelError
from harness.providers.base import Chunk, Delta, RetryNotice

__all__ = ["RetryPolicy", "never_cancelled", "wait_unless_cancelled", "with_retries"]

POLL_INTERVAL_S = 0.05
"""How often a retry wait checks for cancellation."""


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
        if not error.retryable or retry > self.max_retries:
            return None
        if error.retry_after_s is not None:
            if error.retry_after_s > self.retry_after_max_s:
                return None
            return max(0.0, error.retry_after_s)
        ceiling = min(self.max_s, self.base_s * 2 ** (retry - 1))
        return ceiling / 2 + rng.uniform(0.0, ceiling / 2)


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
        time.sleep(min(POLL_INTERVAL_S, remaining))


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
    tells consumers the partial response was discarded. Returns without a ``Final`` chunk
    when cancelled during a wait.
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
    else:
        why = f"gave up after {retry - 1} retries (model.max_retries={policy.max_retries})"
    return type(error)(
        f"{error} ({why})",
        status_code=error.status_code,
        retry_after_s=error.retry_after_s,
        provider=error.provider,
    )
