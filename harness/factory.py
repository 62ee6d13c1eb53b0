"""Building a Harness's parts from configuration (used by ``Harness.from_config``).

Each part has one builder; a builder that starts something (a simulator, a subprocess,
a database) also returns how to close it, so a failure half-way closes what was built.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import Callable
from typing import Any

from harness.config import HarnessConfig
from harness.embodied import build_embodiment_parts
from harness.errors import ConfigError
from harness.memory_models import ModelLedgerSummarizer, ModelLessonProposer, can_summarize
from harness.providers import build_model
from harness.redact import Redactor
from harness.store import MemoryRunStore, SQLiteRunStore
from harness.tools import Tool, tool
from memory.store import MemoryStore
from skills.catalog import SkillCatalog, SkillValidationError

__all__ = [
    "build_memory",
    "build_parts",
    "build_redactor",
    "build_skills",
    "build_store",
    "import_object",
    "import_tool",
]

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
        if "store" not in parts:
            parts["store"] = build_store(config)
            closers.append(("run store", parts["store"].close))
        build_embodiment_parts(config, parts, closers)
        if "skills" not in parts:
            parts["skills"] = build_skills(config)
        if "memory" not in parts:
            parts["memory"] = build_memory(
                config, model=parts.get("compaction_model") or parts["model"]
            )
        if "scene" not in parts:
            from harness.scene_adapter import build_scene

            scene = build_scene(config, driver=parts.get("driver"))
            if scene is not None:
                parts["scene"] = scene
        extra_tools = list(parts.pop("tools", []))
        extra_tools.extend(import_tool(path) for path in config.tools)
        parts["tools"] = extra_tools
        if config.mcp.servers and "tool_sources" not in parts:
            from harness.mcp import MCPManager

            manager = MCPManager.from_config(config)
            closers.append(("mcp", manager.close))
            parts["tool_sources"] = [manager]
    except BaseException:
        for _, close in reversed(closers):
            with contextlib.suppress(Exception):
                close()
        raise
    return parts, closers


def build_redactor(config: HarnessConfig) -> Redactor:
    """Built-in secret shapes, ``run.secret_patterns``, and the values of every API-key
    environment variable the config names."""
    models = [config.model, config.compaction_model, config.evaluation.model]
    env_vars = [m.api_key_env for m in models if m is not None and m.api_key_env]
    for index, pattern in enumerate(config.run.secret_patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"run.secret_patterns.{index}: got {pattern!r}; expected a regular "
                f"expression ({exc})",
                key=f"run.secret_patterns.{index}",
                value=pattern,
            ) from None
    return Redactor(config.run.secret_patterns, env_vars=env_vars)


def build_store(config: HarnessConfig) -> SQLiteRunStore | MemoryRunStore:
    """SQLite under ``run.store`` (relative to the config file's folder, like every
    configured path), or memory only when ``run.store`` is null."""
    redactor = build_redactor(config)
    if not config.run.store:
        return MemoryRunStore(redactor=redactor)
    synchronous = "FULL" if config.run.store_sync == "full" else "NORMAL"
    return SQLiteRunStore(
        config.resolve_path(config.run.store), redactor=redactor, synchronous=synchronous
    )


def build_skills(config: HarnessConfig) -> SkillCatalog | None:
    """The session's skill library: the built-in one (``skills.builtin``) plus every
    configured folder, validated now so a broken skill stops the start, not a task."""
    if not config.skills.builtin and not config.skills.paths:
        return None
    paths = [config.resolve_path(path) for path in config.skills.paths]
    try:
        return SkillCatalog.from_paths(paths, include_builtin=config.skills.builtin)
    except SkillValidationError as exc:
        raise ConfigError(
            f"skills.paths: {exc}", key="skills.paths", value=config.skills.paths
        ) from exc


def build_memory(config: HarnessConfig, *, model: Any) -> MemoryStore | None:
    """Durable memory in ``memory.path``. ``model`` (the summarizer, else the decision
    model) proposes lessons and summarizes ledgers when it can write prose; otherwise the
    store's rule-based consolidator and deterministic digests are used."""
    if not config.memory.enabled:
        return None
    folder = config.resolve_path(config.memory.path)
    helper = model if can_summarize(model) else None
    try:
        return MemoryStore(
            folder,
            proposer=ModelLessonProposer(helper) if helper is not None else None,
            summarizer=ModelLedgerSummarizer(helper) if helper is not None else None,
            min_confidence=config.memory.consolidation_min_confidence,
        )
    except OSError as exc:
        raise ConfigError(
            f"memory.path: cannot use {str(folder)!r} as the memory folder: {exc}",
            key="memory.path",
            value=config.memory.path,
        ) from exc


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
