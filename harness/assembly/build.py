"""Building a Harness's parts from configuration (used by ``Harness.from_config``).

Each part has one builder; a builder that starts something (a simulator, a subprocess,
a database) also returns how to close it, so a failure half-way closes what was built.
Nothing here needs the runtime: the result is the keyword arguments of the ``Harness``
constructor plus the closers it will own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from harness.assembly.embodiment import build_embodiment_parts
from harness.assembly.imports import import_object, import_tool
from harness.assembly.memory import build_memory
from harness.config import HarnessConfig, ModelConfig, secret_sources
from harness.errors import ConfigError
from harness.mcp import MCPManager
from harness.providers import build_model, parse_model_spec
from harness.redact import Redactor, check_pattern, secret_values
from harness.store import MemoryRunStore, SQLiteRunStore
from harness.world.scene import SceneAdapter
from scene.geometry import RelationTolerances
from scene.graph import SceneGraph
from scene.perception import Perception
from skills.catalog import SkillCatalog, SkillValidationError

__all__ = [
    "build_parts",
    "build_redactor",
    "build_scene",
    "build_skills",
    "build_store",
    "load_perception",
    "subagent_model_config",
]

Closer = tuple[str, Callable[[], None]]


def build_parts(
    config: HarnessConfig, *, given: dict[str, Any]
) -> tuple[dict[str, Any], list[Closer]]:
    """Build every part not in ``given``; return (constructor kwargs, closers in build order)."""
    parts: dict[str, Any] = dict(given)
    closers: list[Closer] = []
    if parts.get("redactor") is None:
        parts["redactor"] = build_redactor(config)
    redactor: Redactor = parts["redactor"]
    try:
        if "model" not in parts:
            parts["model"] = build_model(config.model)
        if "compaction_model" not in parts and config.compaction_model is not None:
            parts["compaction_model"] = build_model(config.compaction_model)
        if "store" not in parts:
            parts["store"] = build_store(config, redactor=redactor)
            closers.append(("run store", parts["store"].close))
        build_embodiment_parts(config, parts, closers)
        if "skills" not in parts:
            parts["skills"] = build_skills(config)
        if "memory" not in parts:
            parts["memory"] = build_memory(
                config, model=parts.get("compaction_model") or parts["model"], redactor=redactor
            )
        if "scene" not in parts:
            scene = build_scene(config, driver=parts.get("driver"))
            if scene is not None:
                parts["scene"] = scene
        extra_tools = list(parts.pop("tools", []))
        extra_tools.extend(import_tool(path) for path in config.tools)
        parts["tools"] = extra_tools
        if config.mcp.servers and "tool_sources" not in parts:
            manager = MCPManager.from_config(config, redactor=redactor)
            closers.append(("mcp", manager.close))
            parts["tool_sources"] = [manager]
    except BaseException:
        for _, close in reversed(closers):
            with contextlib.suppress(Exception):
                close()
        raise
    return parts, closers


def build_redactor(config: HarnessConfig) -> Redactor:
    """The session's one redactor: built-in secret shapes, ``run.secret_patterns``, the
    values of every API-key environment variable the config names, and the values the
    config itself holds under secret-looking keys (MCP server ``env``, provider headers)."""
    data = config.model_dump(mode="json")
    patterns, env_vars = secret_sources(data)
    for index, pattern in enumerate(patterns):
        problem = check_pattern(pattern)
        if problem is not None:
            raise ConfigError(
                f"run.secret_patterns.{index}: got {pattern!r}; expected a regular "
                f"expression that matches a secret, but {problem}",
                key=f"run.secret_patterns.{index}",
                value=pattern,
            )
    return Redactor(patterns, env_vars=env_vars, literals=secret_values(data))


def build_store(
    config: HarnessConfig, *, redactor: Redactor | None = None
) -> SQLiteRunStore | MemoryRunStore:
    """SQLite under ``run.store`` (relative to the config file's folder, like every
    configured path), or memory only when ``run.store`` is null."""
    redactor = redactor or build_redactor(config)
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


def load_perception(path: str) -> Perception:
    """``package.module:attribute``: a Perception object, or a class/factory called with no
    arguments that returns one."""
    target = import_object(path, key="scene.perception")
    if isinstance(target, type) or (not isinstance(target, Perception) and callable(target)):
        target = target()
    if not isinstance(target, Perception):
        raise ConfigError(
            f"scene.perception: {path!r} is not a Perception (an object with "
            "perceive(observation) -> list[Detection]) nor a factory of one",
            key="scene.perception",
            value=path,
        )
    return target


def build_scene(config: HarnessConfig, *, driver: Any = None) -> SceneAdapter | None:
    """The scene provider for a config: None when disabled, or when there is neither a
    perception (``scene.perception``, or the driver's ``perception()``) nor a driver whose
    state could place the robot."""
    cfg = config.scene
    if not cfg.enabled:
        return None
    perception: Perception | None = None
    if cfg.perception:
        perception = load_perception(cfg.perception)
    elif driver is not None and callable(getattr(driver, "perception", None)):
        perception = driver.perception()
    if perception is None and driver is None:
        return None
    graph = SceneGraph(
        perception,
        tolerances=RelationTolerances(
            near_m=cfg.near_distance_m, contact_m=cfg.contact_tolerance_m
        ),
        stale_after_s=cfg.stale_after_s,
        association_gate_m=cfg.association_distance_m,
    )
    return SceneAdapter(graph, config=cfg, images=config.observation)


def subagent_model_config(config: HarnessConfig) -> ModelConfig | None:
    """The sub-agents' own model section (``subagents.model``; a spec string keeps the
    main model's settings it does not name), or None when they use the main model."""
    chosen = config.subagents.model
    if chosen is None or isinstance(chosen, ModelConfig):
        return chosen
    try:
        return parse_model_spec(chosen, config.model)
    except ConfigError as exc:
        raise ConfigError(f"subagents.model: {exc}", key="subagents.model", value=chosen) from None
