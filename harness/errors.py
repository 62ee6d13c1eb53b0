"""Named errors of the harness.

Tool and model failures that the model can act on become tool results or events; these
exceptions are for what a control script must handle (bad configuration, a busy or closed
harness) and for the named terminal reasons a task ends with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.cancel import Cancelled

if TYPE_CHECKING:
    from harness.messages import ModelResponse, Usage

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "CloseError",
    "ConfigError",
    "ContextBudgetError",
    "ContextOverflowError",
    "EmptyResponseError",
    "HarnessBusyError",
    "HarnessClosedError",
    "HarnessError",
    "IncompleteResponseError",
    "ModelCancelledError",
    "ModelError",
    "OutputLimitError",
    "RateLimitError",
    "RunNotFoundError",
    "RunStoreDamagedError",
    "RunStoreError",
    "TransientModelError",
    "UnknownContextWindowError",
    "UsageError",
]


class HarnessError(Exception):
    """Base class of every error the harness raises on purpose."""


class ConfigError(HarnessError, ValueError):
    """A configuration value is missing, unknown or invalid.

    The message names the dotted key path, the bad value and what was expected, so the
    user can fix the YAML without reading code.
    """

    def __init__(self, message: str, *, key: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


class UnknownContextWindowError(ConfigError):
    """The model's context window is not configured and not in the built-in table.

    Every compaction threshold is derived from the window; guessing it would quietly
    corrupt all of them, so the harness refuses to start instead.
    """


class UsageError(HarnessError):
    """A command-line argument that parses but cannot work (``--gui`` without a display):
    the CLI prints one line naming the flag and exits with code 2."""


class HarnessBusyError(HarnessError):
    """A task is already running in this session (one Harness runs one task at a time)."""


class HarnessClosedError(HarnessError):
    """The harness was closed; create a new one for a new session."""


class CloseError(HarnessError):
    """One or more owned resources failed to close; every one was still attempted."""

    def __init__(self, errors: list[tuple[str, BaseException]]) -> None:
        self.errors = errors
        detail = "; ".join(f"{name}: {type(exc).__name__}: {exc}" for name, exc in errors)
        super().__init__(f"{len(errors)} resource(s) failed to close: {detail}")


class ContextBudgetError(HarnessError):
    """Nothing the compactor may do brings the request under the model's input budget."""


class ModelError(HarnessError):
    """A model call failed after the adapter's own retries.

    `kind` is a stable machine-readable name; `retryable` says whether waiting could help;
    `max_retries`, when set, caps the retries of this kind below ``model.max_retries``.
    """

    kind: str = "model_error"
    retryable: bool = False
    max_retries: int | None = None

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retry_after_s: float | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after_s = retry_after_s
        self.provider = provider
        self.usage: Usage | None = None
        """What the failed request cost when the server did answer it (an answer that was
        cut, empty or broke off after its usage arrived): never lost, the caller counts it.
        None when the server answered nothing (a refusal, a dropped connection)."""


class AuthenticationError(ModelError):
    """The API key is missing, invalid or not allowed to use the model."""

    kind = "authentication"


class RateLimitError(ModelError):
    """The provider asked us to slow down (HTTP 429)."""

    kind = "rate_limit"
    retryable = True


class TransientModelError(ModelError):
    """A server error, timeout or dropped connection; a later attempt may succeed."""

    kind = "transient"
    retryable = True


class IncompleteResponseError(ModelError):
    """The answer did not arrive whole: a stream that ended without its terminal marker
    (OpenAI ``finish_reason``, Anthropic ``message_stop``), an empty or unparseable body, a
    tool call cut off before its arguments were complete.

    Nothing of such an answer may be acted on (a tool call cut after its name would run
    with default arguments), so it is an error, retried like a dropped connection.
    """

    kind = "incomplete_response"
    retryable = True


class OutputLimitError(IncompleteResponseError):
    """The output limit (OpenAI ``finish_reason: length``, Anthropic ``max_tokens``) cut a
    tool call off before it was complete.

    Unlike a dropped connection this is not retried as it was: the same request would be
    cut the same way. The decide phase answers it by sending a changed request (more
    room, a notice), once; ``max_output_tokens`` is the limit the cut request asked for.
    """

    kind = "output_limit"
    retryable = False

    def __init__(
        self,
        message: str,
        *,
        max_output_tokens: int | None = None,
        response: ModelResponse | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(message, **kw)
        self.max_output_tokens = max_output_tokens
        self.response = response
        """What arrived before the cut: its text, the cut call (``cut``, its name and the
        partial arguments as text in ``raw_arguments``), the stop reason and the usage."""
        if response is not None:
            self.usage = response.usage


class EmptyResponseError(ModelError):
    """A well-formed answer with neither text nor a tool call.

    It cannot be a task report; some local servers produce one now and then, so it is
    retried once, then the call fails.
    """

    kind = "empty_response"
    retryable = True
    max_retries = 1


class ContextOverflowError(ModelError):
    """The provider rejected the request as larger than the model's context window.

    ``limit_tokens`` is the window the server says it has ("maximum context length is
    5632 tokens"), ``prompt_tokens`` the size it counted for the prompt (without the output
    it was asked for); each is None when the server did not say. A configured window larger
    than ``limit_tokens`` is wrong for this server, and the rest of the session should
    budget with the stated limit.
    """

    kind = "context_overflow"

    def __init__(
        self,
        message: str,
        *,
        limit_tokens: int | None = None,
        prompt_tokens: int | None = None,
        **common: Any,
    ) -> None:
        super().__init__(message, **common)
        self.limit_tokens = limit_tokens
        self.prompt_tokens = prompt_tokens


class BadRequestError(ModelError):
    """The provider rejected the request as malformed; retrying the same request won't help."""

    kind = "bad_request"


class ModelCancelledError(Cancelled):
    """A model call was abandoned because the caller's ``cancelled`` callback said so.

    Raised by :func:`harness.providers.complete` (summaries, lessons, evaluations), whose
    callers need a return value: a cancel is not a model failure, so it is not a
    :class:`ModelError`, and no fallback should run in its place. It is a
    :class:`harness.cancel.Cancelled`, the one cancel every phase of the loop lets through.
    """


class RunStoreError(HarnessError):
    """The run store cannot be opened, read or resumed from (missing, newer schema, busy)."""


class RunNotFoundError(RunStoreError):
    """A RUN argument names no task or session in the store (the message lists close ones)."""


class RunStoreDamagedError(RunStoreError):
    """The run store is damaged: a file SQLite cannot read, an empty file, or rows that do
    not parse (:mod:`harness.store.damage`). Each line of ``lines`` names the store, the
    task when there is one, and what is damaged; the CLI prints them and exits 4."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(
            "; ".join(lines) if len(lines) < 4 else f"{lines[0]} (and {len(lines) - 1} more)"
        )
        self.lines = lines
