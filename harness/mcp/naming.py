"""Which MCP tools are offered, under which names, and which of them are physical.

Names follow the tool-name rule every provider accepts (``^[A-Za-z0-9_.-]{1,64}$``). A
tool keeps its own name when that name is unique across the harness and every server;
otherwise it is offered as ``server.tool``. Names are sticky: once offered, a tool keeps
its name for the session even if another server later adds a tool with the same name
(that newcomer is namespaced), so the model's earlier calls stay meaningful.

Allow, deny and physical lists use the server's own tool names and accept shell-style
globs (``move_*``).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from embodiment.declarations import declaration_problems
from harness.config import MCPServerConfig
from harness.errors import ConfigError

__all__ = [
    "ToolNames",
    "check_physical",
    "declared_safety",
    "matches",
    "offered",
    "sanitize",
    "unclassified",
    "unmatched_physical",
]

MAX_NAME = 64
_INVALID = re.compile(r"[^A-Za-z0-9_.\-]")


def matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def offered(config: MCPServerConfig, name: str) -> bool:
    """Allowed (or no allow list) and not denied; deny wins."""
    if matches(name, config.deny):
        return False
    return config.allow is None or matches(name, config.allow)


def declared_safety(
    name: str, declarations: Mapping[str, Mapping[str, str]]
) -> dict[str, str] | None:
    """The safety kinds declared for a server tool: the first pattern that matches it
    (exact names before globs, so a specific declaration wins over a broad one). None
    when nothing is declared; ``{}`` (declared as ``tool: {}``) says it takes no arguments."""
    if name in declarations:
        return dict(declarations[name])
    for pattern, kinds in declarations.items():
        if fnmatchcase(name, pattern):
            return dict(kinds)
    return None


def unclassified(
    config: MCPServerConfig, name: str, schema: Mapping[str, object], *, index: int
) -> str | None:
    """Why a tool that appeared after startup (``tools/list_changed``, a restart) is not
    offered yet, or None when it may be: on a server with physical tools, a newcomer must
    be classified, as physical with a complete safety declaration or as ``non_physical``
    (a tool that moves hardware must never reach the model as one that does not)."""
    if not config.physical:
        return None
    key = f"mcp.servers.{index}"
    if matches(name, config.physical):
        kinds = declared_safety(name, config.safety)
        problems = declaration_problems(name, {}, kinds, schema)
        if not problems:
            return None
        return (
            f"appeared after startup and is physical ({key}.physical), but its safety "
            f"declaration is incomplete ({problems[0]}); declare every argument under "
            f"{key}.safety.{name}"
        )
    if matches(name, config.non_physical):
        return None
    return (
        f"appeared after startup on a server with physical tools and is not classified; "
        f"list it under {key}.physical (with {key}.safety.{name}) or {key}.non_physical"
    )


def unmatched_physical(config: MCPServerConfig, names: Sequence[str]) -> list[str]:
    """Physical patterns that match none of the server's tools (a typo here would let a
    tool that moves hardware skip the safety envelope)."""
    return [p for p in config.physical if not any(fnmatchcase(n, p) for n in names)]


def check_physical(config: MCPServerConfig, names: Sequence[str], *, index: int) -> None:
    """Raise :class:`ConfigError` naming ``mcp.servers.<index>.physical`` when a physical
    pattern matches none of the server's tools ``names``."""
    missing = unmatched_physical(config, names)
    if missing:
        available = ", ".join(names) or "none"
        raise ConfigError(
            f"mcp.servers.{index}.physical: {missing} match no tool of server "
            f"'{config.name}' (it offers: {available}); a misspelled physical tool "
            "would bypass the safety envelope",
            key=f"mcp.servers.{index}.physical",
            value=missing,
        )


def _digest(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:6]


def _fit(name: str, *key: str) -> str:
    """Shorten to the length limit, keeping it unique with a digest of ``key``."""
    if len(name) <= MAX_NAME:
        return name
    return f"{name[: MAX_NAME - 7]}-{_digest(*key)}"


def sanitize(name: str) -> str:
    """A server's tool name made valid for providers (characters and length)."""
    cleaned = _INVALID.sub("_", name) or "_"
    return _fit(cleaned, name)


class ToolNames:
    """Assigns the names tools are offered under, stable for the session."""

    def __init__(self) -> None:
        self._assigned: dict[tuple[str, str], str] = {}

    def assign(
        self, tools: Sequence[tuple[str, str]], *, reserved: Iterable[str] = ()
    ) -> dict[tuple[str, str], str]:
        """``(server, tool)`` pairs -> offered names.

        ``reserved`` are names already taken by tools that do not come from MCP servers.
        """
        taken = set(reserved)
        result: dict[tuple[str, str], str] = {}
        for pair in tools:
            name = self._assigned.get(pair)
            if name is not None and name not in taken:
                result[pair] = name
                taken.add(name)
        bare_counts = Counter(sanitize(tool) for _, tool in tools)
        for server, tool in tools:
            pair = (server, tool)
            if pair in result:
                continue
            bare = sanitize(tool)
            if bare_counts[bare] == 1 and bare not in taken:
                name = bare
            else:
                name = _fit(f"{server}.{bare}", server, tool)
                if name in taken:
                    name = _fit(f"{server}.{bare}-{_digest(server, tool)}", server, tool)
            result[pair] = name
            taken.add(name)
        self._assigned.update(result)
        return result
