"""Known context windows (tokens) of common models, by name prefix.

Thresholds are derived from the window, so a model that is neither configured
(``model.context_window``) nor listed here is refused at start. Prefixes are matched
longest first, so ``gpt-4.1-mini`` and ``gpt-4.1`` can differ where vendors make them differ.
"""

from __future__ import annotations

__all__ = ["KNOWN_CONTEXT_WINDOWS", "known_context_window"]

KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-5": 400_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    # Anthropic
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    # Open-weight models commonly served locally (their default served window)
    "qwen2.5-vl": 32_768,
    "qwen3": 32_768,
    "llama3.2-vision": 131_072,
    "llama-3.1": 131_072,
    "gemma3": 131_072,
    # Built-in offline models
    "tabletop-planner": 200_000,
    "scripted": 200_000,
}


def known_context_window(name: str) -> int | None:
    """The window of a known model name (vendor prefixes like ``openai/`` are ignored)."""
    bare = name.rsplit("/", 1)[-1].lower()
    for prefix in sorted(KNOWN_CONTEXT_WINDOWS, key=len, reverse=True):
        if bare.startswith(prefix):
            return KNOWN_CONTEXT_WINDOWS[prefix]
    return None
