"""Model providers behind one small protocol, chosen from config by an explicit registry.

Vendor SDKs are imported only when their provider is built (``anthropic`` alone takes
about a second to import).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from harness.config import ModelConfig
from harness.errors import ConfigError
from harness.messages import ModelRequest, ModelResponse, ToolCall, Usage
from harness.providers.base import Chunk, Delta, Final, Model, RetryNotice, complete
from harness.providers.catalog import LOCAL_SERVERS
from harness.providers.scripted import ScriptedModel, call, reply

__all__ = [
    "PROVIDERS",
    "Chunk",
    "Delta",
    "Final",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "RetryNotice",
    "ScriptedModel",
    "ToolCall",
    "Usage",
    "build_model",
    "call",
    "complete",
    "parse_model_spec",
    "register_provider",
    "reply",
]

ProviderFactory = Callable[[ModelConfig], Model]

PROVIDERS: dict[str, str | ProviderFactory] = {
    # name -> "module:function" (imported lazily) or a factory
    "scripted": "harness.providers.scripted:from_config",
    "planner": "harness.providers.planner:from_config",
    "openai": "harness.providers.openai:from_config",
    "anthropic": "harness.providers.anthropic:from_config",
    # OpenAI-compatible local servers: `ollama:qwen2.5vl:7b` uses the preset's base_url
    **{name: "harness.providers.openai:from_config" for name in LOCAL_SERVERS},
}


def register_provider(name: str, factory: str | ProviderFactory) -> None:
    """Add a provider (a factory, or a lazy ``module:function`` path)."""
    PROVIDERS[name] = factory


def build_model(config: ModelConfig) -> Model:
    """Build the model a config section describes."""
    entry = PROVIDERS.get(config.provider)
    if entry is None:
        known = ", ".join(sorted(PROVIDERS))
        raise ConfigError(
            f"model.provider: got {config.provider!r}; expected one of {known}",
            key="model.provider",
            value=config.provider,
        )
    if isinstance(entry, str):
        module_name, _, attr = entry.partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
    else:
        factory = entry
    return factory(config)


def parse_model_spec(spec: str, base: ModelConfig | None = None) -> ModelConfig:
    """``openai:gpt-4.1-mini``, ``anthropic:claude-sonnet-4-6``,
    ``openai:qwen2.5-vl@http://127.0.0.1:8000/v1`` or ``planner`` -> a model config.

    Local-server presets name the server instead of ``openai``: ``ollama:qwen2.5vl:7b``,
    ``vllm:Qwen/Qwen2.5-VL-7B-Instruct``, ``llamacpp:NAME``, ``lmstudio:NAME`` (their usual
    ``base_url`` unless ``@URL`` is given). Only the first ``:`` separates the provider, so
    model names with tags keep them.

    Settings of ``base`` that the spec does not name (window, prices, timeouts) are kept
    when the provider is unchanged.
    """
    spec = spec.strip()
    if not spec:
        raise ConfigError("--model: empty model spec", key="model", value=spec)
    provider, _, rest = spec.partition(":")
    name, _, url = rest.partition("@")
    if provider not in PROVIDERS:
        known = ", ".join(sorted(PROVIDERS))
        raise ConfigError(
            f"--model {spec!r}: unknown provider {provider!r}; expected one of {known}",
            key="model.provider",
            value=provider,
        )
    data = base.model_dump() if base is not None and base.provider == provider else {}
    data["provider"] = provider
    if name:
        data["name"] = name
        if base is not None and base.name != name:
            data.pop("context_window", None)
    elif not data.get("name"):
        data["name"] = provider
    if url:
        data["base_url"] = url
    return ModelConfig.model_validate(data)
