"""What a Harness must release when it closes: MCP subprocesses, the driver, the store,
the control log. Each is closed once, in the reverse order it was taken, and every one is
attempted however many fail before it (the failures are returned together)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["OwnedResources", "close_all"]

Closer = tuple[str, Callable[[], None]]
"""A resource's name (for the error) and how to close it."""


class OwnedResources:
    """The resources a Harness owns, closed in reverse order by :meth:`close`."""

    def __init__(self) -> None:
        self._closers: list[Closer] = []

    def add(self, resource: Any) -> None:
        """Own ``resource``: a ``(name, closer)`` pair, an object with ``close()`` or a
        callable; anything else is a ``TypeError``."""
        if isinstance(resource, tuple) and len(resource) == 2 and callable(resource[1]):
            self._closers.append(resource)
        elif callable(getattr(resource, "close", None)):
            self._closers.append((type(resource).__name__, resource.close))
        elif callable(resource):
            self._closers.append((getattr(resource, "__name__", "resource"), resource))
        else:
            raise TypeError(f"owned resource {resource!r} has no close() and is not callable")

    def close(self) -> list[tuple[str, BaseException]]:
        """Close everything owned (newest first) and own nothing more; the failures."""
        closers, self._closers = self._closers, []
        return close_all(list(reversed(closers)))


def close_all(closers: list[Closer]) -> list[tuple[str, BaseException]]:
    """Call every closer in order; the ones that raised, with what they raised."""
    errors: list[tuple[str, BaseException]] = []
    for name, closer in closers:
        try:
            closer()
        except Exception as exc:
            errors.append((name, exc))
    return errors
