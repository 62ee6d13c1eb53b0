"""Redaction of secrets before anything is stored, exported or summarised.

API keys and bearer tokens are recognised by shape; a deployment adds its own patterns
(``run.secret_patterns``) and the values of the API-key environment variables it uses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "SECRET_KEY_PATTERN", "Redactor"]

REDACTED = "[REDACTED]"

SECRET_KEY_PATTERN = re.compile(
    r"(?:^|[_\-])(?:api[_\-]?key|key|token|secret|password|passwd|authorization|auth|"
    r"credentials?|cookie)$",
    re.IGNORECASE,
)
"""Mapping keys whose values are secrets whatever they look like (``Authorization``,
``ROS_TOKEN``, ``api_key``); ``api_key_env`` or ``reserve_tokens`` do not match."""

_BUILTIN_PATTERNS = (
    r"sk-ant-[A-Za-z0-9_\-]{16,}",  # Anthropic keys
    r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}",  # OpenAI keys
    r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*",  # Authorization: Bearer ...
    r"(?i:api[_-]?key|x-api-key|access[_-]?token|secret)[\"']?\s*[:=]\s*[\"']?"
    r"[A-Za-z0-9._\-]{12,}",
    r"AKIA[0-9A-Z]{16}",  # AWS access key ids
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
)


class Redactor:
    """Replaces secrets in text (and in nested JSON-like values) with ``[REDACTED]``."""

    def __init__(self, patterns: Iterable[str] = (), *, env_vars: Iterable[str] = ()) -> None:
        sources = [*_BUILTIN_PATTERNS, *patterns]
        for name in env_vars:
            value = os.environ.get(name)
            if value and len(value) >= 8:
                sources.append(re.escape(value))
        self._pattern = re.compile("|".join(f"(?:{p})" for p in sources))
        # Every built-in shape and every env value is at least 8 characters long, so
        # shorter strings (most ids and names in an event) need no regex pass; a custom
        # pattern might match anything, so then every string is checked.
        self._min_length = 1 if patterns else 8

    def text(self, text: str) -> str:
        if len(text) < self._min_length:
            return text
        return self._pattern.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """Redact strings anywhere inside dicts, lists and tuples."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(item) for item in value)
        return value

    def config(self, value: Any) -> Any:
        """Like :meth:`value`, and also masks whole values under secret-looking keys.

        Configuration carries secrets in places no pattern recognises: an MCP server's
        ``env`` and ``headers``, provider ``options``. Their keys give them away.
        """
        if isinstance(value, dict):
            return {
                key: REDACTED
                if isinstance(key, str) and SECRET_KEY_PATTERN.search(key) and item
                else self.config(item)
                for key, item in value.items()
            }
        if isinstance(value, (list, tuple)):
            return type(value)(self.config(item) for item in value)
        return self.value(value)
