"""What the HTTP adapters share: one call = visible retries around SDK attempts.

:class:`RemoteModel` implements the :class:`~harness.providers.base.Model` protocol once:
it builds the wire payload (with the tool names mapped to a wire-safe form), runs each
attempt through :func:`~harness.providers.retry.with_retries`, feeds the SDK's streamed
events (or its whole response) to an :class:`Assembler`, polls ``cancelled`` between
events, passes the configured ``extra_body`` / ``extra_headers`` to the SDK, and scrubs
secrets from anything an error says. A subclass supplies only what differs per provider:
the SDK client and call, the payload, the assembler and the error mapping.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from harness.config import ModelConfig
from harness.errors import ModelError, TransientModelError
from harness.messages import ModelRequest, ModelResponse
from harness.providers.base import Chunk, Delta, Final
from harness.providers.catalog import known_context_window
from harness.providers.retry import never_cancelled, with_retries
from harness.providers.settings import AdapterOptions, ApiKey
from harness.providers.transcript import ToolNames
from harness.redact import Redactor
from harness.tokens import ImageCostModel

__all__ = ["MESSAGE_MAX_CHARS", "Assembler", "RemoteModel"]

MESSAGE_MAX_CHARS = 2000
"""Provider error messages are cut to this length (some servers echo the whole request)."""


class Assembler(Protocol):
    """Turns one provider response into deltas (while streaming) and a ModelResponse."""

    def add(self, event: Any) -> Iterator[Delta]:
        """One streamed event; yields the deltas it carries."""
        ...

    def add_whole(self, result: Any) -> None:
        """A complete non-streamed response; ValueError when it holds no answer."""
        ...

    def response(self) -> ModelResponse: ...


class RemoteModel:
    """Base of the adapters that call a provider over HTTP with its official SDK.

    A subclass sets ``self._sdk`` (the imported SDK module) before calling
    ``super().__init__`` and implements the methods under "subclass parts".
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
        self.policy = options.retry_policy(config)
        self._rng = rng or random.Random()
        self._redactor = Redactor(env_vars=[api_key.env_var] if api_key.env_var else [])
        self._client = client if client is not None else self._build_client()

    # ------------------------------------------------------------------ subclass parts

    def _build_client(self) -> Any:
        raise NotImplementedError

    def _payload(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        raise NotImplementedError

    def _create(self, payload: dict[str, Any]) -> Any:
        """The SDK call: a stream when ``payload`` asks for one, else the whole response."""
        raise NotImplementedError

    def _assembler(self, names: ToolNames) -> Assembler:
        raise NotImplementedError

    def _error(self, exc: Exception) -> ModelError:
        """An SDK exception -> a named harness error (scrubbed with :meth:`_scrub`)."""
        raise NotImplementedError

    def _checked(self, response: ModelResponse) -> ModelResponse:
        """A last look at a complete response (may raise a :class:`ModelError`)."""
        return response

    # ------------------------------------------------------------------ the protocol

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]:
        """Deltas and retry notices as they happen, then one ``Final``.

        ``cancelled`` is polled between streamed events and during retry waits; on
        cancellation the stream ends without a ``Final``. Waiting for the server's first
        byte is not interruptible and is bounded by ``model.timeout_s``.
        """
        is_cancelled = cancelled or never_cancelled
        names = ToolNames(spec.name for spec in request.tools)
        payload = self._payload(request, names)

        def attempt() -> Iterator[Chunk]:
            if self.config.stream:
                return self._attempt_stream(payload, names, is_cancelled)
            return self._attempt_once(payload, names)

        yield from with_retries(attempt, policy=self.policy, cancelled=is_cancelled, rng=self._rng)

    def _attempt_stream(
        self, payload: dict[str, Any], names: ToolNames, cancelled: Callable[[], bool]
    ) -> Iterator[Chunk]:
        """One streamed try: deltas as they arrive, then the Final (nothing if cancelled)."""
        assembler = self._assembler(names)
        try:
            with self._create(payload) as stream:
                for event in stream:
                    yield from assembler.add(event)
                    if cancelled():
                        return
        except self._sdk.APIError as exc:
            raise self._error(exc) from None
        except ValueError as exc:
            raise self._malformed(exc) from None
        yield Final(self._checked(assembler.response()))

    def _attempt_once(self, payload: dict[str, Any], names: ToolNames) -> Iterator[Chunk]:
        """One non-streamed try: the Final only."""
        assembler = self._assembler(names)
        try:
            assembler.add_whole(self._create(payload))
        except self._sdk.APIError as exc:
            raise self._error(exc) from None
        except ValueError as exc:
            raise self._malformed(exc) from None
        yield Final(self._checked(assembler.response()))

    def build_payload(self, request: ModelRequest) -> dict[str, Any]:
        """The request body the SDK will send for ``request`` (without the SDK extras)."""
        return self._payload(request, ToolNames(spec.name for spec in request.tools))

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    # ------------------------------------------------------------------ helpers

    def _extras(self) -> dict[str, Any]:
        """``extra_body`` / ``extra_headers`` keyword arguments for the SDK call."""
        extras: dict[str, Any] = {}
        if self.options.extra_body:
            extras["extra_body"] = self.options.extra_body
        if self.options.extra_headers:
            extras["extra_headers"] = self.options.extra_headers
        return extras

    def _scrub(self, text: str) -> str:
        """Error text with API keys redacted, bounded."""
        return self._redactor.text(text)[:MESSAGE_MAX_CHARS]

    def _malformed(self, exc: Exception) -> TransientModelError:
        """A response the SDK could not parse (a truncated or garbled event line)."""
        return TransientModelError(
            f"{self.provider}: malformed response from the server: {self._scrub(str(exc))}",
            provider=self.provider,
        )
