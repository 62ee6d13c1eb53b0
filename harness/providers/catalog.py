"""Built-in knowledge about models and servers: context windows and local-server presets.

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

__all__ = [
    "KNOWN_CONTEXT_WINDOWS",
    "LOCAL_SERVERS",
    "LocalServer",
    "known_context_window",
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


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_BY_PREFIX: list[tuple[str, int]] = sorted(
    ((_normalise(prefix), window) for prefix, window in KNOWN_CONTEXT_WINDOWS.items()),
    key=lambda entry: len(entry[0]),
    reverse=True,
)


def known_context_window(name: str) -> int | None:
    """The window of a known model name (vendor prefixes like ``openai/`` are ignored)."""
    bare = _normalise(name.rsplit("/", 1)[-1])
    for prefix, window in _BY_PREFIX:
        if bare.startswith(prefix):
            return window
    return None


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
