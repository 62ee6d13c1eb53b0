"""Bounding text that enters the context or the store: the beginning and end kept, with a
marker saying how much was cut and where the exact original can be read back, and the
store's redactor applied before any cut.

Re-exported by :mod:`harness.context.model` and :mod:`harness.context`, where the rest of
the harness imports them from.
"""

from __future__ import annotations

__all__ = ["bounded_text", "redacted_by"]


def redacted_by(store: object, text: str) -> str:
    """``text`` redacted with ``store``'s redactor (when it has one): what every bound that
    stores its result runs first, so a cut never keeps half a secret that a redactor
    matching the whole one would then miss."""
    from harness.redact import Redactor

    redactor = getattr(store, "redactor", None)
    return redactor.text(text) if isinstance(redactor, Redactor) else text


def bounded_text(text: str, max_chars: int, *, address: str | None) -> tuple[str, bool]:
    """Keep the beginning and end of ``text`` within ``max_chars``.

    The marker in the middle says how much was cut and where the exact original can be
    read back (``recall``), so a bounded result is never a silent loss.
    """
    if len(text) <= max_chars:
        return text, False
    where = f"; exact original: recall(address={address!r})" if address else ""
    marker_budget = 120 + len(where)
    keep = max(0, max_chars - marker_budget)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    marker = f"\n[... {cut} of {len(text)} characters cut{where} ...]\n"
    return text[:head] + marker + (text[-tail:] if tail else ""), True
