"""What the HTTP adapters share: one call = visible retries around abortable SDK attempts.

:class:`RemoteModel` implements the :class:`~harness.providers.base.Model` protocol once:
it builds the wire payload (with the tool names mapped to a wire-safe form), runs each
attempt through :func:`~harness.providers.retry.with_retries`, runs the SDK call itself
through :func:`~harness.providers.inflight.run_abortable` (so a cancel is noticed within
about 100 ms and a deadline bounds the whole response, whatever the server sends), feeds
the SDK's streamed events (or its whole response) to an :class:`Assembler`, passes the
configured ``extra_body`` / ``extra_headers`` to the SDK, and scrubs secrets from
anything an error says.

Nothing the server answered is lost from the accounts: a request whose answer is not used
(a probe, a retried attempt, an empty stream asked again) is reported as a
:class:`~harness.providers.base.Spent` chunk, and the error a call ends with carries the
usage of the answer it rejected (``ModelError.usage``).

An answer is used only when it arrived whole. The assembler says when it did not (a
stream without its terminal marker, a tool call cut by the output limit) and the attempt
fails with :class:`IncompleteResponseError`; an answer with neither text nor a tool call
fails with :class:`EmptyResponseError`. Both are retried, so a cut-off tool call is never
handed to the loop, which would execute it. A tool call the output limit cut is
:class:`OutputLimitError` and is not retried here: the same request would be cut the same
way, so the decide phase sends a changed one. When complete calls precede the cut one, the
answer is used (the first call runs; the rest are answered "not executed").

A subclass supplies only what differs per provider: the SDK client and call, the payload,
the assembler, the error mapping, and (optionally) how it learns whether the model sees
images and what to do with a stream that carried nothing.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from harness.config import ModelConfig
from harness.errors import (
    EmptyResponseError,
    IncompleteResponseError,
    ModelError,
    OutputLimitError,
)
from harness.messages import ModelRequest, ModelResponse, RefreshedBlock, Usage
from harness.providers.base import Chunk, Delta, Final, Spent
from harness.providers.catalog import known_context_window, known_vision
from harness.providers.failures import timed_out
from harness.providers.inflight import (
    Abort,
    Cancelled,
    DeadlineExceeded,
    abortable_http_client,
    run_abortable,
)
from harness.providers.retry import never_cancelled, with_retries
from harness.providers.settings import AdapterOptions, ApiKey
from harness.providers.transcript import ToolNames
from harness.redact import Redactor
from harness.tokens import ImageCostModel

__all__ = ["IMAGE_NOT_SENT", "MESSAGE_MAX_CHARS", "Assembler", "RemoteModel", "answered_usage"]

log = logging.getLogger("harness")

MESSAGE_MAX_CHARS = 2000
"""Provider error messages are cut to this length (some servers echo the whole request)."""
IMAGE_NOT_SENT = "(image not shown: this model does not take images; the Brief describes it)"
"""Follows an image's caption when ``vision`` is off, so the model knows one was taken."""


class Assembler(Protocol):
    """Turns one provider response into deltas (while streaming) and a ModelResponse."""

    events: int
    """Streamed events received so far (0 after an empty stream)."""

    def add(self, event: Any) -> Iterator[Delta]:
        """One streamed event; yields the deltas it carries."""
        ...

    def add_whole(self, result: Any) -> None:
        """A complete non-streamed response; ValueError when it holds no answer."""
        ...

    def incomplete(self) -> str | None:
        """Why the answer is not whole (no terminal marker, a cut tool call); None if it is."""
        ...

    def cut_by_output_limit(self) -> bool:
        """The output limit cut a tool call off (and no complete call precedes it)."""
        ...

    def usage_reported(self) -> bool: ...

    def response(self) -> ModelResponse: ...


class RemoteModel:
    """Base of the adapters that call a provider over HTTP with its official SDK.

    A subclass sets ``self._sdk`` (the imported SDK module) before calling
    ``super().__init__`` and implements the methods under "subclass parts".

    ``vision`` is whether images are sent: from ``model.vision``, else the built-in table,
    else None until :meth:`_learn_vision` decides (on the first request with images).
    """

    _sdk: Any

    def __init__(
        self,
        config: ModelConfig,
        *,
        options: AdapterOptions,
        api_key: ApiKey,
        image_cost: ImageCostModel,
        client: Any | None,
        rng: random.Random | None,
    ) -> None:
        self.config = config
        self.options = options
        self.api_key = api_key
        self.provider = config.provider
        self.name = config.name
        self.context_window: int | None = config.context_window or known_context_window(config.name)
        self.image_cost: ImageCostModel = image_cost
        self.vision: bool | None = (
            known_vision(config.name) if config.vision == "auto" else bool(config.vision)
        )
        self.policy = options.retry_policy(config)
        self._rng = rng or random.Random()
        self._redactor = Redactor(env_vars=[api_key.env_var] if api_key.env_var else [])
        self._spent: list[tuple[Usage, str]] = []
        self._client = client if client is not None else self._build_client()

    # ------------------------------------------------------------------ subclass parts

    def _build_client(self) -> Any:
        raise NotImplementedError

    def _payload(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        raise NotImplementedError

    def _create(self, payload: dict[str, Any], *, bare: bool = False) -> Any:
        """The SDK call: a stream when ``payload`` asks for one, else the whole response.
        ``bare``: without ``model.extra_body`` (a probe of the harness's own, whose body the
        deployment's extras were never written for); headers still go."""
        raise NotImplementedError

    def _assembler(self, names: ToolNames) -> Assembler:
        raise NotImplementedError

    def _error(self, exc: Exception) -> ModelError:
        """An SDK exception -> a named harness error (scrubbed with :meth:`_scrub`)."""
        raise NotImplementedError

    def _where(self) -> str:
        """The server, as error messages name it."""
        raise NotImplementedError

    def _checked(self, response: ModelResponse) -> ModelResponse:
        """A last look at a whole response: one with neither text nor a tool call cannot be
        a decision or a report. Subclasses add their own checks and call this."""
        if not response.tool_calls and not response.text.strip():
            raise EmptyResponseError(
                f"{self.provider}: the model answered with neither text nor a tool call "
                f"(stop reason {response.stop_reason!r})",
                provider=self.provider,
            )
        return response

    def _learn_vision(self, cancelled: Callable[[], bool]) -> bool:
        """Whether the model sees images, when neither config nor table says (once)."""
        return True

    def decide_vision(self, cancelled: Callable[[], bool] | None = None) -> bool:
        """Settle ``vision`` now if it is still open (the probe, once), so a caller can
        price a request's images by what will be sent. Raises what the probe raises (a
        :class:`ModelError`; ``Cancelled`` when ``cancelled()`` turned true)."""
        if self.vision is None:
            self.vision = self._learn_vision(cancelled or never_cancelled)
        return self.vision

    def _unstreamed_retry(
        self, request: ModelRequest, payload: dict[str, Any], assembler: Assembler
    ) -> dict[str, Any] | None:
        """A payload to re-send at once without streaming after ``assembler``'s stream
        ended unfinished, or None to fail the attempt (the default)."""
        return None

    def _unstreamed_answered(self, request: ModelRequest) -> None:
        """The unstreamed re-send of :meth:`_unstreamed_retry` got a whole answer."""

    # ------------------------------------------------------------------ the protocol

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]:
        """Deltas and retry notices as they happen, then one ``Final``.

        ``cancelled`` is polled about every 100 ms while an attempt is in flight (whether
        or not the server sends anything) and during retry waits; on cancellation the
        HTTP request is aborted and the stream ends without a ``Final``. Each attempt's
        whole response is bounded by ``model.timeout_s``.
        """
        is_cancelled = cancelled or never_cancelled
        names = ToolNames(spec.name for spec in request.tools)

        def attempt() -> Iterator[Chunk]:
            return self._attempt(request, names, is_cancelled)

        yield from with_retries(attempt, policy=self.policy, cancelled=is_cancelled, rng=self._rng)

    def _attempt(
        self, request: ModelRequest, names: ToolNames, cancelled: Callable[[], bool]
    ) -> Iterator[Chunk]:
        """One try: deltas as they arrive, then the Final (nothing if cancelled). What the
        server answered and this try does not use goes out as :class:`Spent`, or on the
        error it raises (``ModelError.usage``)."""
        try:
            yield from self._side_requests()
            if self.vision is None and _has_images(request.refreshed):
                self.vision = self._learn_vision(cancelled)
                yield from self._side_requests()
            payload = self._payload(request, names)
            assembler = yield from self._exchange(payload, names, cancelled)
            reason = assembler.incomplete()
            if reason is not None and payload.get("stream"):
                unstreamed = self._unstreamed_retry(request, payload, assembler)
                if unstreamed is not None:
                    yield Spent(answered_usage(assembler), "a stream that carried nothing")
                    assembler = yield from self._exchange(unstreamed, names, cancelled)
                    reason = assembler.incomplete()
                    if reason is None:
                        self._unstreamed_answered(request)
        except Cancelled:
            return
        if reason is not None and assembler.cut_by_output_limit():
            raise OutputLimitError(
                f"{self.provider}: the output limit of {payload_limit(payload)} tokens cut "
                f"the tool call off ({self._where()})",
                max_output_tokens=payload_limit(payload),
                response=assembler.response().model_copy(
                    update={"usage": answered_usage(assembler)}
                ),
                provider=self.provider,
            )
        if reason is not None:
            error = IncompleteResponseError(
                f"{self.provider}: incomplete response from {self._where()}: {reason}",
                provider=self.provider,
            )
            error.usage = answered_usage(assembler)
            raise error
        response = assembler.response()
        try:
            response = self._checked(response)
        except ModelError as error:
            error.usage = error.usage or answered_usage(assembler)
            raise
        yield Final(response, usage_reported=assembler.usage_reported())

    def _side_requests(self) -> Iterator[Spent]:
        """The usage of requests made outside a call (vision probes), reported with the
        next call."""
        spent, self._spent = self._spent, []
        for usage, what in spent:
            yield Spent(usage, what)

    def _note_spent(self, usage: Usage, what: str) -> None:
        """A request of the adapter's own (a probe) that the server answered."""
        self._spent.append((usage, what))

    def _exchange(
        self, payload: dict[str, Any], names: ToolNames, cancelled: Callable[[], bool]
    ) -> Iterator[Chunk]:
        """Send ``payload`` and feed the answer to a new assembler (returned). Raises
        :class:`Cancelled` when cancelled, a :class:`ModelError` on failure (with the usage
        of what the server had answered when it broke off)."""
        streaming = bool(payload.get("stream"))
        assembler = self._assembler(names)
        try:
            for event in self._abortable(lambda abort: self._events(payload, abort), cancelled):
                if streaming:
                    yield from assembler.add(event)
                    continue
                try:
                    assembler.add_whole(event)
                except ValueError as exc:
                    raise self._malformed(exc) from None
        except ModelError as error:
            if assembler.events and error.usage is None:
                error.usage = answered_usage(assembler)
            raise
        return assembler

    def _call_once(
        self, payload: dict[str, Any], cancelled: Callable[[], bool], *, bare: bool = False
    ) -> Any:
        """One non-streamed SDK call, abortable like any other; the SDK's response
        (``bare``: see :meth:`_create`)."""

        def produce(abort: Abort) -> Iterator[Any]:
            yield self._create(payload, bare=bare)

        results = list(self._abortable(produce, cancelled))
        return results[0]

    def _abortable(
        self, produce: Callable[[Abort], Iterator[Any]], cancelled: Callable[[], bool]
    ) -> Iterator[Any]:
        """What ``produce`` yields in a worker thread, with every failure mapped to a named
        error; :class:`Cancelled` passes through."""
        events = run_abortable(produce, cancelled=cancelled, deadline_s=self.config.timeout_s)
        try:
            yield from events
        except DeadlineExceeded:
            raise timed_out(self.provider, self._where(), self.config.timeout_s) from None
        except self._sdk.APIError as exc:
            raise self._error(exc) from None
        except ValueError as exc:
            raise self._malformed(exc) from None

    def _events(self, payload: dict[str, Any], abort: Abort) -> Iterator[Any]:
        """The SDK's events for ``payload`` (or its one whole response); runs in the
        worker thread of :func:`run_abortable`."""
        result = self._create(payload)
        if not payload.get("stream"):
            yield result
            return
        abort.add_closer(result.close)
        abort.add_socket_of(getattr(result, "response", None))
        with result as stream:
            try:
                yield from stream
            except self._sdk.APITimeoutError:
                raise
            except self._sdk.APIConnectionError as exc:  # the body broke off
                raise self._broke_off(exc) from None
            except (self._sdk.APIError, ValueError):  # an error event; a garbled line
                raise
            except Exception as exc:  # a transport error the SDK let through
                raise self._broke_off(exc) from None

    def _broke_off(self, exc: Exception) -> IncompleteResponseError:
        cause = exc.__cause__ or exc
        return IncompleteResponseError(
            f"{self.provider}: the response from {self._where()} broke off: "
            f"{self._scrub(str(cause) or type(cause).__name__)}",
            provider=self.provider,
        )

    def build_payload(self, request: ModelRequest) -> dict[str, Any]:
        """The request body the SDK will send for ``request`` (without the SDK extras)."""
        return self._payload(request, ToolNames(spec.name for spec in request.tools))

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    # ------------------------------------------------------------------ helpers

    def _http_client(self) -> Any:
        """The httpx client for the SDK: its default, abortable by a cancel."""
        return abortable_http_client(self._sdk)

    def _extras(self, *, bare: bool = False) -> dict[str, Any]:
        """``extra_body`` / ``extra_headers`` keyword arguments for the SDK call (``bare``:
        the headers only)."""
        extras: dict[str, Any] = {}
        if self.options.extra_body and not bare:
            extras["extra_body"] = self.options.extra_body
        if self.options.extra_headers:
            extras["extra_headers"] = self.options.extra_headers
        return extras

    def _sends_images(self) -> bool:
        return self.vision is not False

    def _scrub(self, text: str) -> str:
        """Error text with API keys redacted, bounded."""
        return self._redactor.text(text)[:MESSAGE_MAX_CHARS]

    def _malformed(self, exc: Exception) -> IncompleteResponseError:
        """A response the SDK could not parse: an empty body, a truncated or garbled
        event line."""
        return IncompleteResponseError(
            f"{self.provider}: malformed or cut-off response from {self._where()}: "
            f"{self._scrub(str(exc))}",
            provider=self.provider,
        )


def answered_usage(assembler: Assembler) -> Usage:
    """What one answered request cost: the server's report, or one request whose tokens
    are unknown (never zero) when it sent none."""
    if assembler.usage_reported():
        return assembler.response().usage
    return Usage(requests=1, unreported_requests=1)


def payload_limit(payload: dict[str, Any]) -> int | None:
    """The output limit a wire payload asked for (whichever field the provider takes)."""
    for key in ("max_tokens", "max_completion_tokens"):
        value = payload.get(key)
        if isinstance(value, int):
            return value
    return None


def _has_images(refreshed: RefreshedBlock | None) -> bool:
    return refreshed is not None and bool(refreshed.images)
