"""The ordered set of tools a session (or a lane) offers, by name."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator

from harness.messages import ToolSpec
from harness.tools.tool import Tool

__all__ = ["ToolRegistry", "close_matches"]


def close_matches(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Names similar to ``name`` (for "did you mean" in error results)."""
    return difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)


class ToolRegistry:
    """An ordered set of tools by name. Order is stable so tool definitions stay
    byte-identical from turn to turn (provider prompt caches depend on it)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.add(item)

    def add(self, item: Tool, *, replace: bool = False) -> None:
        if not isinstance(item, Tool):
            raise TypeError(f"expected a Tool (use @tool on functions), got {item!r}")
        if item.name in self._tools and not replace:
            existing = self._tools[item.name]
            raise ValueError(
                f"tool name {item.name!r} is already registered (from {existing.source})"
            )
        self._tools[item.name] = item

    def remove(self, name: str) -> Tool | None:
        return self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def names(self, *, visible_only: bool = False) -> list[str]:
        return [t.name for t in self._tools.values() if not (visible_only and t.hidden)]

    def visible(self) -> list[Tool]:
        return [t for t in self._tools.values() if not t.hidden]

    def specs(self) -> list[ToolSpec]:
        return [t.spec() for t in self.visible()]
