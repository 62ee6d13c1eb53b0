"""Built-in knowledge about models and servers: context windows, which models take images,
and local-server presets.

Thresholds are derived from the window, so a model that is neither configured
(``model.context_window``) nor listed here is refused at start. Names are compared after
lower-casing and dropping punctuation, so ``Qwen/Qwen2.5-VL-7B-Instruct`` (vLLM),
``qwen2.5vl:7b`` (Ollama) and ``qwen2.5-vl`` all find the same entry; the longest matching
prefix wins, so ``gpt-4o-mini`` and ``gpt-4o`` can differ where vendors make them differ.

Open-weight entries give the window the model is usually *served* with. A local server may
be started with a smaller one (Ollama's ``num_ctx``, llama.cpp's ``--ctx-size``); set
``model.context_window`` to match it. If the server rejects an oversized request anyway,
the harness compacts and resends once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

__all__ = [
    "KNOWN_CONTEXT_WINDOWS",
    "KNOWN_VISION",
    "LOCAL_SERVERS",
    "LocalServer",
    "known_context_window",
    "known_vision",
]

KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    # Anthropic
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-haiku": 200_000,
    # Open-weight models commonly served locally (their default served window)
    "qwen2.5-vl": 32_768,
    "qwen2.5": 32_768,
    "qwen3-vl": 262_144,
    "qwen3": 32_768,
    "llama3.2-vision": 131_072,
    "llama-3.2": 131_072,
    "llama-3.1": 131_072,
    "llama-3.3": 131_072,
    "llama-4": 131_072,
    "gemma3": 131_072,
    "mistral-small": 131_072,
    "pixtral": 131_072,
    "deepseek-r1": 131_072,
    "deepseek-v3": 131_072,
    "gpt-oss": 131_072,
    # Built-in offline models
    "tabletop-planner": 200_000,
    "scripted": 200_000,
}


KNOWN_VISION: dict[str, bool] = {
    # OpenAI
    "gpt-5": True,
    "gpt-4.1": True,
    "gpt-4o": True,
    "gpt-4-turbo": True,
    "o1": True,
    "o1-mini": False,
    "o1-preview": False,
    "o3": True,
    "o3-mini": False,
    "o4-mini": True,
    # Anthropic
    "claude-opus-4": True,
    "claude-sonnet-4": True,
    "claude-haiku-4": True,
    "claude-3-7-sonnet": True,
    "claude-3-5-sonnet": True,
    "claude-3-opus": True,
    "claude-3-haiku": True,
    # Open-weight models
    "qwen2.5-vl": True,
    "qwen2.5": False,
    "qwen3-vl": True,
    "qwen3": False,
    "llama3.2-vision": True,
    "llama-3.1": False,
    "llama-3.3": False,
    "llama-4": True,
    "gemma3": True,
    "gemma-3-270m": False,
    "gemma-3-1b": False,
    "pixtral": True,
    "deepseek-r1": False,
    "deepseek-v3": False,
    "gpt-oss": False,
}
"""Whether a model takes images (``model.vision: auto`` reads it; absent: probe or assume)."""


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _by_longest_prefix(table: dict[str, T]) -> list[tuple[str, T]]:
    return sorted(
        ((_normalise(prefix), value) for prefix, value in table.items()),
        key=lambda entry: len(entry[0]),
        reverse=True,
    )


def _lookup(table: list[tuple[str, T]], name: str) -> T | None:
    bare = _normalise(name.rsplit("/", 1)[-1])
    for prefix, value in table:
        if bare.startswith(prefix):
            return value
    return None


_WINDOWS = _by_longest_prefix(KNOWN_CONTEXT_WINDOWS)
_VISION = _by_longest_prefix(KNOWN_VISION)


def known_context_window(name: str) -> int | None:
    """The window of a known model name (vendor prefixes like ``openai/`` are ignored)."""
    return _lookup(_WINDOWS, name)


def known_vision(name: str) -> bool | None:
    """Whether a known model takes images; None when the table does not say."""
    return _lookup(_VISION, name)


@dataclass(frozen=True)
class LocalServer:
    """A local server speaking the OpenAI Chat Completions API, with its usual address."""

    name: str
    base_url: str
    description: str


LOCAL_SERVERS: dict[str, LocalServer] = {
    server.name: server
    for server in (
        LocalServer("ollama", "http://127.0.0.1:11434/v1", "Ollama (`ollama serve`)"),
        LocalServer("vllm", "http://127.0.0.1:8000/v1", "vLLM (`vllm serve MODEL`)"),
        LocalServer("llamacpp", "http://127.0.0.1:8080/v1", "llama.cpp (`llama-server`)"),
        LocalServer("lmstudio", "http://127.0.0.1:1234/v1", "LM Studio (local server)"),
    )
}
"""``ollama:NAME`` etc.: OpenAI-compatible providers with a default ``base_url``."""
