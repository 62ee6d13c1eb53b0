"""Building a Harness's parts from configuration (used by ``Harness.from_config``).

Each part has one builder; a builder that starts something (a simulator, a subprocess,
a database) also returns how to close it, so a failure half-way closes what was built.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from typing import Any

from harness.config import HarnessConfig
from harness.embodied import build_embodiment_parts
from harness.errors import ConfigError
from harness.providers import build_model
from harness.tools import Tool, tool

__all__ = ["build_parts", "import_tool"]

Closer = tuple[str, Callable[[], None]]


def build_parts(
    config: HarnessConfig, *, given: dict[str, Any]
) -> tuple[dict[str, Any], list[Closer]]:
    """Build every part not in ``given``; return (constructor kwargs, closers in build order)."""
    parts: dict[str, Any] = dict(given)
    closers: list[Closer] = []
    try:
        if "model" not in parts:
            parts["model"] = build_model(config.model)
        if "compaction_model" not in parts and config.compaction_model is not None:
            parts["compaction_model"] = build_model(config.compaction_model)
        build_embodiment_parts(config, parts, closers)
        extra_tools = list(parts.pop("tools", []))
        extra_tools.extend(import_tool(path) for path in config.tools)
        parts["tools"] = extra_tools
    except BaseException:
        for _, close in reversed(closers):
            with contextlib.suppress(Exception):
                close()
        raise
    return parts, closers


def import_tool(path: str) -> Tool:
    """``package.module:attribute`` -> a Tool (functions are wrapped with ``@tool``)."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"tools: got {path!r}; expected 'package.module:function'", key="tools", value=path
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"tools: cannot import {module_name!r} for {path!r}: {exc}", key="tools", value=path
        ) from exc
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise ConfigError(
            f"tools: {module_name!r} has no attribute {attr!r}", key="tools", value=path
        ) from None
    if isinstance(target, Tool):
        return target
    if callable(target):
        return tool(target)
    raise ConfigError(f"tools: {path!r} is neither a Tool nor a function", key="tools", value=path)
