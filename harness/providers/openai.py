"""OpenAI Chat Completions, and every server that speaks it (vLLM, Ollama, llama.cpp, LM
Studio...), behind the :class:`~harness.providers.base.Model` protocol.

This module only translates: provider-neutral request -> Chat Completions payload, and
streamed chunks -> deltas and one :class:`ModelResponse`. What differs between the official
API and compatible servers is decided from ``base_url`` here and nowhere else:

- hosted OpenAI needs a key (``OPENAI_API_KEY`` unless ``model.api_key_env`` says
  otherwise); a local server gets no key unless ``model.api_key_env`` names one;
- hosted OpenAI takes ``max_completion_tokens``; compatible servers get ``max_tokens``;
- reasoning models (o-series, gpt-5) reject ``temperature``, so it is not sent to them;
- compatible servers may stream reasoning as ``reasoning_content`` or ``reasoning``; it is
  kept with the assistant turn and sent back in the same field on tool-call turns;
- an assistant turn without text is sent with ``"content": ""``, never ``null`` (llama.cpp's
  server rejects ``null`` with HTTP 500; every other server takes ``""``);
- a request that offers tools says ``tool_choice: "auto"`` (llama.cpp's function-calling
  chat formats leave the tools out of the prompt without it; for the rest it is the
  default); a tool-less request (summaries, memory) never carries it;
- a stream that carries nothing at all (llama.cpp's answer to a streamed tool request, or
  to a streamed request over its window) is asked again at once without streaming, which
  gets the real answer or the real error; when that worked for a tool request, this
  server's tool requests are not streamed again;
- a model that neither ``model.vision`` nor the built-in table describes is probed once
  (:mod:`harness.providers.vision`) before its first image is sent;
- a stream without usage (many local servers ignore ``stream_options``) is reported as
  such (``Final.usage_reported``), not as a call that cost nothing;
- llama.cpp's server renders and tokenizes prompts itself (``/apply-template``,
  ``/tokenize``), so it counts a prompt in the model's own tokens on request
  (:meth:`OpenAIChatModel.count_prompt_tokens`); another local server is asked once
  (``GET /props``) whether it is one, a hosted API never.

The SDK is imported when the first model is built (``import openai`` costs ~0.35 s).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlparse

from harness.config import ModelConfig
from harness.errors import (
    AuthenticationError,
    ConfigError,
    ContextOverflowError,
    ModelError,
    TransientModelError,
)
from harness.messages import (
    AssistantItem,
    ModelRequest,
    RefreshedBlock,
    ToolSpec,
    Usage,
)
from harness.providers.catalog import LOCAL_SERVERS
from harness.providers.chat_assembly import REASONING_FIELDS, ChatAssembler, usage_from_openai
from harness.providers.failures import Failure, classify_failure, timed_out, unreachable
from harness.providers.remote import IMAGE_NOT_SENT, Assembler, RemoteModel
from harness.providers.settings import AdapterOptions, parse_options, resolve_api_key
from harness.providers.tls import shared_tls_context
from harness.providers.transcript import (
    AssistantTurn,
    ToolNames,
    UserText,
    arguments_json,
    image_caption,
    read_transcript,
)
from harness.providers.vision import PROBE_TEXT, ProbeAnswer, judge, probe_images

__all__ = ["ChatAssembler", "OpenAIChatModel", "OpenAIOptions", "from_config", "usage_from_openai"]

log = logging.getLogger("harness")

OPENAI_HOST = "api.openai.com"
REASONING_FAMILIES = ("o1", "o3", "o4", "gpt-5")
"""Hosted models that only accept the default temperature."""
STREAMED_TOOLS_REFUSED = "streaming tool choice is not supported"
"""How a llama.cpp build that reports it says it cannot stream a tool request."""
COUNT_TIMEOUT_S = 30.0
"""How long a prompt count may take at most (it renders and tokenizes, no model runs; a
busy CPU can still take seconds), ``model.timeout_s`` when that is shorter."""


class OpenAIOptions(AdapterOptions):
    """``model.options`` for ``provider: openai`` and the local-server presets."""

    stream_usage: bool = True
    """Ask for token usage at the end of a stream (``stream_options.include_usage``)."""
    parallel_tool_calls: bool = False
    """False sends ``parallel_tool_calls: false`` (one tool per turn); True omits it, for
    servers that reject the field."""
    send_reasoning: Literal["tool_calls", "all", "none"] = "tool_calls"
    """Which assistant turns get their reasoning sent back (servers that return it expect it
    on tool-call continuations)."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None
    """Override the output-limit field (default: by server, see the module docstring)."""


class OpenAIChatModel(RemoteModel):
    """A chat model on the OpenAI Chat Completions API (hosted or compatible).

    Args:
        config: The model section of the config.
        client: An ``openai.OpenAI`` client to use instead of building one (tests).
        rng: Random source for backoff jitter (seed it for reproducible waits).
    """

    options: OpenAIOptions

    def __init__(
        self,
        config: ModelConfig,
        *,
        client: Any | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if config.thinking_budget_tokens is not None:
            raise ConfigError(
                f"model.thinking_budget_tokens: got {config.thinking_budget_tokens}; it applies "
                f"to Anthropic models only (provider {config.provider!r}); use "
                "model.reasoning_effort, or model.options.extra_body for a local server",
                key="model.thinking_budget_tokens",
                value=config.thinking_budget_tokens,
            )
        preset = LOCAL_SERVERS.get(config.provider)
        self.base_url = config.base_url or (preset.base_url if preset else None)
        self.hosted = self.base_url is None or urlparse(self.base_url).hostname == OPENAI_HOST
        self._sdk = _import_sdk()
        super().__init__(
            config,
            options=parse_options(config, OpenAIOptions),
            api_key=resolve_api_key(
                config, default_env="OPENAI_API_KEY" if self.hosted else None, required=self.hosted
            ),
            image_cost="openai" if self.hosted else "generic",
            client=client,
            rng=rng,
        )
        self.streams_tool_requests = True
        """False once this server has shown it cannot stream a request that offers tools."""
        self.counts_prompts: bool | None = None if not self.hosted else False
        """Whether the server counts prompts (:meth:`count_prompt_tokens`); None: not
        asked yet."""
        self.vision_reason = "" if self.vision is None else "model.vision or the built-in table"

    def _build_client(self) -> Any:
        return self._sdk.OpenAI(
            # The SDK requires some key; local servers ignore it.
            api_key=self.api_key.value or "no-key",
            base_url=self.base_url,
            timeout=self.config.timeout_s,
            max_retries=0,  # retries happen in with_retries, visibly
            http_client=self._http_client(),
        )

    def _where(self) -> str:
        return self.base_url or f"https://{OPENAI_HOST}/v1"

    def _create(self, payload: dict[str, Any], *, bare: bool = False) -> Any:
        return self._client.chat.completions.create(**payload, **self._extras(bare=bare))

    def _assembler(self, names: ToolNames) -> ChatAssembler:
        return ChatAssembler(self.name, names)

    # ------------------------------------------------------------------ request

    def _payload(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        """The Chat Completions body (``build_payload`` is the public view)."""
        config = self.config
        payload: dict[str, Any] = {
            "model": self.name,
            "messages": self.build_messages(request, names),
        }
        if request.tools:
            payload["tools"] = [_tool(spec, names) for spec in request.tools]
            payload["tool_choice"] = "auto"
            if not self.options.parallel_tool_calls:
                payload["parallel_tool_calls"] = False
        payload[self._limit_field()] = request.max_output_tokens or config.max_output_tokens
        if config.temperature is not None and not self._fixed_temperature():
            payload["temperature"] = config.temperature
        if config.reasoning_effort is not None:
            payload["reasoning_effort"] = config.reasoning_effort
        if config.stream and (self.streams_tool_requests or not request.tools):
            payload["stream"] = True
            if self.options.stream_usage:
                payload["stream_options"] = {"include_usage": True}
        return payload

    def _limit_field(self) -> str:
        return self.options.max_tokens_field or (
            "max_completion_tokens" if self.hosted else "max_tokens"
        )

    def _fixed_temperature(self) -> bool:
        return self.hosted and self.name.lower().startswith(REASONING_FAMILIES)

    def build_messages(
        self, request: ModelRequest, names: ToolNames | None = None
    ) -> list[dict[str, Any]]:
        """System, then the transcript (each call answered by a tool message), then the
        Refreshed evidence as the last user message."""
        names = names or ToolNames(spec.name for spec in request.tools)
        messages: list[dict[str, Any]] = []
        system = request.system_text()
        if system:
            messages.append({"role": "system", "content": system})
        for entry in read_transcript(request.items, tools_offered=bool(request.tools)):
            if isinstance(entry, UserText):
                messages.append({"role": "user", "content": entry.text})
                continue
            messages.append(self._assistant_message(entry, names))
            for answer in entry.answers:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": answer.wire_id,
                        "content": answer.text(mark_error=True),
                    }
                )
        if request.refreshed is not None:
            content = self._refreshed_content(request.refreshed)
            if content:
                messages.append({"role": "user", "content": content})
        return messages

    def _assistant_message(self, turn: AssistantTurn, names: ToolNames) -> dict[str, Any]:
        item = turn.item
        message: dict[str, Any] = {"role": "assistant", "content": item.text}
        if turn.answers:
            message["tool_calls"] = [
                {
                    "id": answer.wire_id,
                    "type": "function",
                    "function": {
                        "name": names.wire(answer.call.name),
                        "arguments": arguments_json(answer.call),
                    },
                }
                for answer in turn.answers
            ]
        wire_field, text = self._reasoning_to_send(item, tool_turn=bool(turn.answers))
        if wire_field:
            message[wire_field] = text
        return message

    def _reasoning_to_send(self, item: AssistantItem, *, tool_turn: bool) -> tuple[str, str]:
        mode = self.options.send_reasoning
        if mode == "none" or (mode == "tool_calls" and not tool_turn):
            return "", ""
        blocks = [r for r in item.reasoning if r.provider.startswith("openai") and r.text]
        if not blocks:
            return "", ""
        wire_field = blocks[0].provider.partition(":")[2]
        if wire_field not in REASONING_FIELDS:
            wire_field = REASONING_FIELDS[0]
        return wire_field, "".join(block.text for block in blocks)

    def _refreshed_content(self, refreshed: RefreshedBlock) -> str | list[dict[str, Any]]:
        text = refreshed.text()
        if not refreshed.images:
            return text
        if not self._sends_images():
            captions = [f"{image_caption(image)} {IMAGE_NOT_SENT}" for image in refreshed.images]
            return "\n".join([text, *captions] if text else captions)
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"type": "text", "text": text})
        for image in refreshed.images:
            parts.append({"type": "text", "text": image_caption(image)})
            parts.append(
                {
                    "type": "image_url",
                    "image_url": {
                        "url": f"data:{image.media_type};base64,{image.base64}",
                        "detail": self.config.image_detail,
                    },
                }
            )
        return parts

    # ------------------------------------------------------------------ errors

    def _error(self, exc: Exception) -> ModelError:
        """An SDK exception -> a named harness error, with secrets scrubbed."""
        sdk = self._sdk
        where = self.base_url or f"https://{OPENAI_HOST}/v1"
        if isinstance(exc, sdk.APITimeoutError):
            return timed_out(self.provider, where, self.config.timeout_s)
        if isinstance(exc, sdk.APIConnectionError):
            return unreachable(self.provider, where, self._scrub(str(exc.__cause__ or exc)))
        status = exc.status_code if isinstance(exc, sdk.APIStatusError) else None
        headers = dict(exc.response.headers) if isinstance(exc, sdk.APIStatusError) else None
        body = getattr(exc, "body", None)
        message, error_type, code = str(exc), None, None
        if isinstance(body, dict):
            message = str(body.get("message") or body)
            error_type = _text_or_none(body.get("type"))
            code = _text_or_none(body.get("code"))
        elif isinstance(body, str) and body.strip():
            message = body
        if STREAMED_TOOLS_REFUSED in message.lower() and self.streams_tool_requests:
            self.streams_tool_requests = False
            log.info("%s at %s cannot stream tool requests", self.name, where)
            return TransientModelError(
                f"{self.provider}: the server cannot stream a request with tools "
                f"({self._scrub(message)}); retrying without streaming",
                status_code=status,
                provider=self.provider,
            )
        error = classify_failure(
            Failure(
                provider=self.provider,
                message=self._scrub(message),
                status=status,
                error_type=error_type,
                code=code,
                headers=headers,
                limit_tokens=_int_or_none(body, "n_ctx"),
                prompt_tokens=_int_or_none(body, "n_prompt_tokens"),
            )
        )
        if isinstance(error, AuthenticationError) and self.api_key.value is None:
            error = AuthenticationError(
                f"{error} (no API key was sent: set model.api_key_env to the variable that "
                "holds this server's key)",
                status_code=error.status_code,
                provider=self.provider,
            )
        return error

    # ------------------------------------------------------------------ learning the server

    def count_prompt_tokens(self, request: ModelRequest) -> int | None:
        """The server's own count of the prompt ``request`` becomes (its chat template and
        tokenizer: what ``usage.prompt_tokens`` would say), where the server offers it:
        llama.cpp's server (its ``/props`` says so) renders with ``/apply-template`` and
        counts with ``/tokenize``, beside ``/v1``. None anywhere else (a server that is not
        llama.cpp is asked once, a hosted API never) or when it cannot be reached now."""
        if self.counts_prompts is False or not self.base_url:
            return None
        names = ToolNames(spec.name for spec in request.tools)
        body: dict[str, Any] = {"messages": self.build_messages(request, names)}
        if request.tools:
            body["tools"] = [_tool(spec, names) for spec in request.tools]
            body["tool_choice"] = "auto"
        origin = _server_origin(self.base_url)
        headers = dict(self.options.extra_headers or {})
        if self.api_key.value:
            headers["Authorization"] = f"Bearer {self.api_key.value}"
        verify = shared_tls_context(self._sdk.DefaultHttpxClient)
        try:
            with self._sdk.DefaultHttpxClient(
                timeout=min(COUNT_TIMEOUT_S, self.config.timeout_s),
                headers=headers,
                **({"verify": verify} if verify is not None else {}),
            ) as http:
                if self.counts_prompts is None:
                    self.counts_prompts = _is_llama_cpp(http.get(f"{origin}/props"))
                    log.info(
                        "%s at %s %s prompts",
                        self.name,
                        self._where(),
                        "counts" if self.counts_prompts else "does not count",
                    )
                    if not self.counts_prompts:
                        return None
                rendered = http.post(f"{origin}/apply-template", json=body)
                rendered.raise_for_status()
                tokens = http.post(
                    f"{origin}/tokenize",
                    json={
                        "content": rendered.json()["prompt"],
                        "add_special": True,
                        "parse_special": True,
                    },
                )
                tokens.raise_for_status()
                return len(tokens.json()["tokens"])
        except Exception as exc:  # unreachable, a garbled answer: no count this time
            log.info("%s at %s did not count a prompt: %s", self.name, self._where(), exc)
            return None

    def _unstreamed_retry(
        self, request: ModelRequest, payload: dict[str, Any], assembler: Assembler
    ) -> dict[str, Any] | None:
        """A stream that carried no chunk at all is asked again without streaming."""
        if assembler.events:
            return None
        log.info("%s at %s sent an empty stream; asking again unstreamed", self.name, self._where())
        return {k: v for k, v in payload.items() if k not in ("stream", "stream_options")}

    def _unstreamed_answered(self, request: ModelRequest) -> None:
        if request.tools and self.streams_tool_requests:
            self.streams_tool_requests = False
            log.info(
                "%s at %s answers tool requests only unstreamed; not streaming them again",
                self.name,
                self._where(),
            )

    def _learn_vision(self, cancelled: Callable[[], bool]) -> bool:
        """Probe once (:mod:`harness.providers.vision`); the verdict holds for the session."""
        flat, noisy = probe_images()
        text_only = self._probe(None, cancelled)
        verdict = judge(text_only, self._probe(flat, cancelled), self._probe(noisy, cancelled))
        self.vision_reason = f"probed: {verdict.reason}"
        log.log(
            logging.INFO if verdict.decided else logging.WARNING,
            "%s at %s: images %s (%s)",
            self.name,
            self._where(),
            "sent" if verdict.vision else "not sent",
            verdict.reason,
        )
        return verdict.vision

    def _probe(self, image_url: str | None, cancelled: Callable[[], bool]) -> ProbeAnswer:
        """One probe request (``image_url`` None: the text alone, whose errors are raised)."""
        content: list[dict[str, Any]] = [{"type": "text", "text": PROBE_TEXT}]
        if image_url is not None:
            content.append({"type": "image_url", "image_url": {"url": image_url}})
        payload = {"model": self.name, "messages": [{"role": "user", "content": content}]}
        payload[self._limit_field()] = 1
        try:
            completion = self._call_once(payload, cancelled, bare=True)
        except ContextOverflowError:
            if image_url is None:
                raise
            return ProbeAnswer(overflow=True)
        except ModelError as exc:
            if image_url is None or exc.status_code is None:
                raise
            return ProbeAnswer(rejected=str(exc))
        usage = getattr(completion, "usage", None)
        spent = usage_from_openai(usage) if usage is not None else Usage(unreported_requests=1)
        self._note_spent(spent.model_copy(update={"requests": 1}), "a vision probe")
        tokens = getattr(usage, "prompt_tokens", None) if usage is not None else None
        return ProbeAnswer(prompt_tokens=tokens if isinstance(tokens, int) else None)


def _tool(spec: ToolSpec, names: ToolNames) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": names.wire(spec.name),
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def _is_llama_cpp(props: Any) -> bool:
    """Whether a ``GET /props`` answer is llama.cpp's server's (it names its chat
    template's capabilities and its build)."""
    if props.status_code != 200:
        return False
    try:
        data = props.json()
    except ValueError:
        return False
    return isinstance(data, dict) and "chat_template_caps" in data and "build_info" in data


def _server_origin(base_url: str) -> str:
    """The server's root, where llama.cpp serves its own endpoints (``base_url`` less a
    trailing ``/v1``)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _int_or_none(body: Any, key: str) -> int | None:
    value = body.get(key) if isinstance(body, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _import_sdk() -> Any:
    import openai

    return openai


def from_config(config: ModelConfig) -> OpenAIChatModel:
    """``provider: openai`` (and ``ollama``, ``vllm``, ``llamacpp``, ``lmstudio``)."""
    return OpenAIChatModel(config)
