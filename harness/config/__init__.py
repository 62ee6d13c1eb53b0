"""Configuration: one pydantic model tree, loaded from YAML, with clear errors.

Every section forbids unknown keys, so a typo fails at start with the dotted key path
instead of being silently ignored. ``load_config(path, overrides=[...])`` merges overrides
such as ``context.compaction.reserve_tokens=8192`` recursively before validation.

The parts live in their own modules and are imported from here: the model tree
(:mod:`harness.config.schema`), files and overrides (:mod:`harness.config.files`) and the
wording of validation errors (:mod:`harness.config.wording`).
"""

from __future__ import annotations

from harness.config.files import (
    PROFILE_ONLY_KEYS,
    apply_overrides,
    load_config,
    resolve_config,
    validate_config,
    with_overrides,
)
from harness.config.schema import (
    CompactionConfig,
    ContextConfig,
    DriverConfig,
    EpisodesConfig,
    EvaluationConfig,
    FleetConfig,
    HarnessConfig,
    MCPConfig,
    MCPServerConfig,
    MemoryConfig,
    ModelConfig,
    ObservationConfig,
    PressureConfig,
    PriceConfig,
    PruningConfig,
    RecordingConfig,
    RunConfig,
    SceneConfig,
    SkillsConfig,
    SubagentsConfig,
    chose,
    secret_sources,
)
from harness.config.wording import format_validation_error, runtime_env_secret

__all__ = [
    "PROFILE_ONLY_KEYS",
    "CompactionConfig",
    "ContextConfig",
    "DriverConfig",
    "EpisodesConfig",
    "EvaluationConfig",
    "FleetConfig",
    "HarnessConfig",
    "MCPConfig",
    "MCPServerConfig",
    "MemoryConfig",
    "ModelConfig",
    "ObservationConfig",
    "PressureConfig",
    "PriceConfig",
    "PruningConfig",
    "RecordingConfig",
    "RunConfig",
    "SceneConfig",
    "SkillsConfig",
    "SubagentsConfig",
    "apply_overrides",
    "chose",
    "format_validation_error",
    "load_config",
    "resolve_config",
    "runtime_env_secret",
    "secret_sources",
    "validate_config",
    "with_overrides",
]
