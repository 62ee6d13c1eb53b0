"""``package.module:attribute`` references in config, resolved with errors naming the key."""

from __future__ import annotations

import importlib
from typing import Any

from harness.errors import ConfigError
from harness.tools import Tool, tool

__all__ = ["import_object", "import_tool"]


def import_object(path: str, *, key: str) -> Any:
    """``package.module:attribute`` -> the attribute; errors name the config ``key``."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"{key}: got {path!r}; expected 'package.module:function'", key=key, value=path
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{key}: cannot import {module_name!r} for {path!r}: {exc}", key=key, value=path
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(
            f"{key}: {module_name!r} has no attribute {attr!r}", key=key, value=path
        ) from None


def import_tool(path: str) -> Tool:
    """``package.module:attribute`` -> a Tool (functions are wrapped with ``@tool``)."""
    target = import_object(path, key="tools")
    if isinstance(target, Tool):
        return target
    if callable(target):
        return tool(target)
    raise ConfigError(f"tools: {path!r} is neither a Tool nor a function", key="tools", value=path)
