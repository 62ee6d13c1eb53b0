"""Provider failures -> named harness errors.

Both adapters reduce a failed call to the same few facts (HTTP status, the provider's error
type or code, its message, the response headers) and :func:`classify_failure` turns them
into one of the named errors in :mod:`harness.errors`. The loop only ever sees those:
:class:`ContextOverflowError` makes it compact and resend once, the retryable ones were
already retried by the adapter, the rest end the task with a readable reason.

Overflow is recognised by status (413), by code (OpenAI ``context_length_exceeded``,
llama.cpp ``exceed_context_size_error``) and by the wording servers actually use, because
OpenAI-compatible servers report it in many ways (vLLM and llama.cpp as 400, older
llama.cpp builds as 500). When the server states its window ("maximum context length is
5632 tokens") and what it counted, :func:`overflow_sizes` reads both, and they travel on
the :class:`ContextOverflowError`.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harness.errors import (
    AuthenticationError,
    BadRequestError,
    ContextOverflowError,
    ModelError,
    RateLimitError,
    TransientModelError,
)

__all__ = [
    "OVERFLOW_CODES",
    "OVERFLOW_PHRASES",
    "Failure",
    "classify_failure",
    "looks_like_overflow",
    "overflow_sizes",
    "retry_after_s",
    "timed_out",
    "unreachable",
]

OVERFLOW_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"}
)
OVERFLOW_PHRASES = (
    "prompt is too long",  # Anthropic
    "exceed context limit",  # Anthropic: input length and max_tokens exceed context limit
    "maximum context length",  # OpenAI, vLLM
    "context_length_exceeded",
    "context length",  # LM Studio, TGI
    "context window",
    "exceeds the available context size",  # llama.cpp
    "exceed_context_size",
    "too many tokens",
    "input is too long",
    "request too large",
    "request_too_large",
    "`max_new_tokens` must be <=",  # TGI: `inputs` tokens + `max_new_tokens` must be <= 4096
)
LIMIT_PATTERNS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"maximum context length is (\d+)",  # OpenAI, vLLM, llama-cpp-python
        r"tokens > (\d+) maximum",  # Anthropic: prompt is too long: 210443 tokens > 200000
        r"context (?:window|length|size) of (?:only )?(\d+)",  # llama.cpp, LM Studio
        r"must be <= (\d+)",  # TGI: inputs tokens + max_new_tokens must be <= 4096
    )
)
PROMPT_PATTERNS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\((\d+) in the messages",  # OpenAI, vLLM, llama-cpp-python: (9024 in the messages,
        r"resulted in (\d+) tokens",  # OpenAI: your messages resulted in 130512 tokens
        r"prompt is too long: (\d+) tokens",  # Anthropic
        r"requested tokens \((\d+)\)",  # llama-cpp-python: Requested tokens (9000) exceed
        r"given: (\d+) `inputs` tokens",  # TGI
    )
)
"""Where a message states the prompt's size (never a total that includes the output)."""
AUTH_TYPES = frozenset({"authentication_error", "permission_error", "invalid_api_key"})
RATE_LIMIT_TYPES = frozenset({"rate_limit_error", "rate_limit_exceeded"})
TRANSIENT_TYPES = frozenset({"overloaded_error", "api_error", "server_error", "timeout_error"})
REQUEST_TYPES = frozenset({"invalid_request_error", "not_found_error", "invalid_request"})
NOT_RETRYABLE_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})


@dataclass(frozen=True)
class Failure:
    """What a failed call told us, already scrubbed of secrets."""

    provider: str
    message: str
    status: int | None = None
    """HTTP status; None for errors reported inside a stream or before any response."""
    error_type: str | None = None
    code: str | None = None
    headers: Mapping[str, str] | None = None
    limit_tokens: int | None = None
    """The window the server reported in a structured field (llama.cpp's ``n_ctx``)."""
    prompt_tokens: int | None = None
    """The prompt size it counted, from a structured field (``n_prompt_tokens``)."""


def looks_like_overflow(text: str) -> bool:
    lowered = text.lower()
    return any(phrase in lowered for phrase in OVERFLOW_PHRASES)


def overflow_sizes(text: str) -> tuple[int | None, int | None]:
    """(the window the message states, the prompt size it states); None for each one the
    message does not state."""
    return _first_number(LIMIT_PATTERNS, text), _first_number(PROMPT_PATTERNS, text)


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return None


def retry_after_s(
    headers: Mapping[str, str] | None, *, now: Callable[[], float] = time.time
) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, then ``retry-after`` (seconds
    or an HTTP date). None when absent or unreadable."""
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def classify_failure(failure: Failure) -> ModelError:
    """The named error for a failed call (see the module docstring for the rules)."""
    status = failure.status
    kinds = {k.lower() for k in (failure.error_type, failure.code) if k}
    head = f"{failure.provider}"
    if status is not None:
        head += f" HTTP {status}"
    message = f"{head}: {failure.message}" if failure.message else head
    common = {"status_code": status, "provider": failure.provider}

    auth = status in (401, 403) or bool(kinds & AUTH_TYPES)
    rate_limited = status == 429 or bool(kinds & RATE_LIMIT_TYPES)
    overflow = status == 413 or bool(kinds & OVERFLOW_CODES) or looks_like_overflow(failure.message)
    if rate_limited and "request too large" in failure.message.lower():
        # OpenAI: one request larger than the per-minute token limit. Waiting never
        # helps; a smaller request does, which is what overflow recovery produces. The
        # numbers in its message are a rate limit, not the window: none is reported.
        return ContextOverflowError(message, **common)
    if overflow and not auth and not rate_limited:
        limit, prompt = overflow_sizes(failure.message)
        return ContextOverflowError(
            message,
            limit_tokens=failure.limit_tokens or limit,
            prompt_tokens=failure.prompt_tokens or prompt,
            **common,
        )
    if auth:
        return AuthenticationError(message, **common)
    if rate_limited:
        error = RateLimitError(message, retry_after_s=retry_after_s(failure.headers), **common)
        if kinds & NOT_RETRYABLE_CODES:
            error.retryable = False  # a spent quota does not come back by waiting
        return error
    transient = (
        (status is None and not kinds & REQUEST_TYPES)
        or status in (408, 409)
        or (status is not None and status >= 500)
        or bool(kinds & TRANSIENT_TYPES)
    )
    if transient:
        return TransientModelError(message, retry_after_s=retry_after_s(failure.headers), **common)
    if status == 404:
        message += " (check model.name and model.base_url)"
    return BadRequestError(message, **common)


def timed_out(provider: str, where: str, timeout_s: float) -> TransientModelError:
    return TransientModelError(
        f"{provider}: no response within {timeout_s:g} s (model.timeout_s) from {where}",
        provider=provider,
    )


def unreachable(provider: str, where: str, detail: str) -> TransientModelError:
    return TransientModelError(f"{provider}: cannot reach {where}: {detail}", provider=provider)
