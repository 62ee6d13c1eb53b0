"""The configuration model tree: every section of a Harness config, validated by pydantic.

Every section forbids unknown keys, so a typo fails at start with the dotted key path
instead of being silently ignored. ``load_config(path, overrides=[...])`` merges overrides
such as ``context.compaction.reserve_tokens=8192`` recursively before validation.

This module is the model tree (imported through :mod:`harness.config`, which also
re-exports the loaders of :mod:`harness.config.files` and the error wording of
:mod:`harness.config.wording`). Its base class is in :mod:`harness.config.section`, and two
groups of sections live in their own modules, re-exported here: the ``context`` section in
:mod:`harness.config.context_section` and the ``mcp`` section in :mod:`harness.config.mcp_section`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.config.context_section import (
    CompactionConfig,
    ContextConfig,
    EpisodesConfig,
    PressureConfig,
    PruningConfig,
)
from harness.config.mcp_section import MCPConfig, MCPServerConfig
from harness.config.section import Section as _Section
from harness.config.wording import format_validation_error, runtime_env_secret

__all__ = [
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
    "chose",
    "format_validation_error",
    "runtime_env_secret",
    "secret_sources",
]


class PriceConfig(_Section):
    """USD per million tokens; turns usage into cost in events and reports."""

    input: float = Field(0.0, ge=0)
    output: float = Field(0.0, ge=0)
    cache_read: float | None = Field(None, ge=0, description="defaults to input x 0.1")
    cache_write: float | None = Field(None, ge=0, description="defaults to input x 1.25")


class ModelConfig(_Section):
    """A model the harness talks to (the decision model, or the compaction model)."""

    provider: str = "planner"
    """Registered provider name: openai | anthropic | planner | scripted."""
    name: str = "tabletop-planner"
    base_url: str | None = None
    """For OpenAI-compatible local servers, e.g. http://127.0.0.1:11434/v1."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself)."""
    context_window: int | None = Field(None, gt=0)
    """Required unless the model is in the built-in table."""
    max_output_tokens: int = Field(4096, gt=0)
    temperature: float | None = Field(0.0, ge=0, le=2)
    timeout_s: float = Field(60.0, gt=0)
    """Seconds one attempt may take for the whole response: connecting, the first byte and
    every chunk after it together (a server trickling keep-alive comments cannot stretch
    it). A timed-out attempt is retried like a dropped connection."""
    max_retries: int = Field(3, ge=0, le=20)
    stream: bool = True
    """Stream responses (text reaches the operator as it is generated)."""
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    thinking_budget_tokens: int | None = Field(None, ge=1024)
    """Anthropic extended thinking budget; off when unset."""
    image_detail: Literal["low", "high", "auto"] = "auto"
    vision: bool | Literal["auto"] = "auto"
    """Whether camera images are sent to the model. ``auto``: known for the models in the
    built-in table; any other model on an OpenAI-compatible server is probed once with a
    tiny image (text-only servers read an image as thousands of tokens of text, or drop
    the message that holds it). Without images the model still reads the Brief."""
    prices: PriceConfig | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Provider-specific extras passed through (e.g. extra_body for a local server)."""


class RunConfig(_Section):
    max_turns: int = Field(100, ge=1)
    failure_budget: int = Field(20, ge=1)
    """Consecutive failed tool turns that end the task."""
    repeated_refusals: int = Field(2, ge=1)
    """A call identical to one refused since anything last moved is not run; the model reads
    that the reason still holds. This many such repeats in one task end it ``failed``
    (stuck)."""
    store: str | None = ".harness"
    """Run store folder (SQLite), relative to the config file's folder like every configured
    path (the working directory without a config file); null keeps the run in memory only."""
    store_sync: Literal["full", "normal"] = "full"
    """`full`: every write survives a power cut (one fsync per write, about 0.25 ms on an
    SSD). `normal`: survives a crash of the process, but the last writes may be lost if
    the machine loses power (faster on slow or busy disks)."""
    tool_timeout_s: float = Field(120.0, gt=0)
    """Default timeout of a tool call that does not declare its own."""
    query_user_timeout_s: float = Field(300.0, gt=0)
    image_retention_every: int = Field(1, ge=1)
    """Keep every Nth observation frame in the run store (1 keeps all)."""
    secret_patterns: list[str] = Field(default_factory=list)
    """Extra regular expressions whose matches are redacted before anything is stored."""


class ObservationConfig(_Section):
    image_format: Literal["jpeg", "png"] = "jpeg"
    jpeg_quality: int = Field(85, ge=10, le=100)
    max_image_side: int = Field(640, ge=32)
    """Frames larger than this are downscaled before they reach the model."""


class RecordingConfig(_Section):
    """What the driver's control steps record, beyond one observation per turn (see
    :mod:`embodiment.recording` and ``docs/export.md``)."""

    control: bool = False
    """Record every control step of every physical command (the joint state measured, the
    command sent, camera frames), at the driver's control rate, in the run store: what
    ``harness export --format lerobot`` makes a training dataset of. Drivers offer them
    through ``embodiment.recording`` (which ones, and at which rate: ``docs/export.md``)."""
    cameras: list[str] | None = None
    """Cameras rendered at every control step (default: every camera the driver can
    render; [] records none)."""
    image_format: Literal["jpeg", "png"] = "jpeg"
    jpeg_quality: int = Field(90, ge=10, le=100)


def default_driver_name() -> str:
    """The default world's first driver (the world registry decides which world that is)."""
    from worlds.registry import default_world

    return default_world().drivers[0].name


class DriverConfig(_Section):
    """Which registered driver to use, and its options (every other key here)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(default_factory=default_driver_name)
    """A registered driver (``harness worlds`` lists them); default: the default world's."""
    lease_timeout_s: float = Field(0.0, ge=0)
    """A driver of physical hardware (one that declares a ``hardware_identity()``) is
    leased before it connects, one Harness per identity and host at a time: a second one
    waits this long for the lease, then fails naming the holder (0: refused at once).
    Drivers without an identity (the simulator) take no lease."""
    lease_dir: str | None = None
    """Folder of the lease files (default: ``$EMBODIED_LEASE_DIR``, else a folder in the
    system's temporary directory; every Harness on the host must use the same one)."""


class SceneConfig(_Section):
    enabled: bool = True
    brief_max_tokens: int = Field(1500, ge=50)
    stale_after_s: float = Field(30.0, gt=0)
    near_distance_m: float = Field(0.15, gt=0)
    perception: str | None = None
    """`package.module:attribute` of a Perception (or a factory of one); default: the
    driver's `perception()` when it has one."""
    association_distance_m: float = Field(0.10, gt=0)
    """Largest centre distance at which a detection without a ref is a known object."""
    contact_tolerance_m: float = Field(0.02, gt=0)
    """How far an object's bottom may be from a surface's top and still rest on it."""
    recent_change_s: float = Field(10.0, ge=0)
    """Objects changed this recently rank above unchanged ones in the Brief."""
    confirm_tools: dict[str, Literal["pick", "place", "release", "open", "close"]] = Field(
        default_factory=lambda: {"pick": "pick", "place": "place", "open_gripper": "release"}
    )
    """Tool name -> what an evaluator-confirmed success of it means for the scene graph."""
    snapshot_interval: int = Field(20, ge=0)
    """Every Nth scene_update event carries a full JSON snapshot (the first always does;
    0: only the first); the others carry the diff."""


class SkillsConfig(_Section):
    paths: list[str] = Field(default_factory=list)
    builtin: bool = True
    """Include the skill library shipped with the package."""


class MemoryConfig(_Section):
    enabled: bool = True
    path: str = ".harness/memory"
    """Memory folder, relative to the config file's folder like every configured path."""
    budget_tokens: int = Field(1500, ge=0)
    """Memory and tool-experience summaries read into Resident at task start."""
    consolidation_min_confidence: float = Field(0.75, ge=0, le=1)
    notes_timeline_max: int = Field(12, ge=1)


class EvaluationConfig(_Section):
    required_tools: list[str] = Field(default_factory=list)
    """Physical tools after which the hidden evaluate_run hook runs."""
    segment_tools: list[str] = Field(default_factory=list)
    """Tools repeated while evaluate_run answers `process`, up to max_segments."""
    max_segments: int = Field(8, ge=1)
    model: ModelConfig | None = None
    """A vision model for the model-based evaluator (real robots)."""
    evaluator: Literal["auto", "programmatic", "model", "none"] = "auto"
    """auto: the model evaluator when `model` is set, else the driver's post-conditions."""
    post_conditions: dict[str, str] = Field(default_factory=dict)
    """Tool name -> post-condition text (with {argument} placeholders) for the model
    evaluator; drivers declare their own, these add to or override them."""
    task_check: Literal["auto", "programmatic", "model", "none"] = "auto"
    """The check of the whole task when the model ends it (the ``done`` event's
    ``outcome``). programmatic: from the instruction's goals against the driver's ground
    truth (the simulator); model: `model` (else the decision model) judges the camera
    images after the task; auto: model when `model` is set and there are cameras, else
    programmatic when the driver has ground truth, else none (the outcome is then
    ``unverified`` unless the model reports failure)."""


class SubagentsConfig(_Section):
    """Sub-agents: the ``delegate`` tool runs a child task with narrowed tools and hands
    back a structured result instead of its trace."""

    enabled: bool = False
    """Offer the ``delegate`` tool to the model (``Harness.delegate`` works either way)."""
    model: ModelConfig | str | None = None
    """The children's model: a model section or a spec such as ``openai:gpt-4.1-mini``
    (settings of ``model`` the spec does not name are kept, as with ``--model``). Default:
    the main model. Its context window must be known, like the main model's."""
    max_turns: int = Field(20, ge=1)
    """The most turns a child may take (a ``delegate`` call may ask for fewer)."""
    max_tokens: int = Field(200_000, ge=1)
    """The most tokens (prompt and output, summed over its model calls) a child may spend
    (a ``delegate`` call may ask for fewer); checked before each of its turns."""
    physical: bool = False
    """Let children call physical tools they are given (through the same safety envelope
    and one-command-at-a-time rule as the parent). Off: a child is never given one."""
    handoff_max_chars: int = Field(4000, ge=500)
    """The largest handoff the parent receives (its full text stays in the archive)."""


class FleetConfig(_Section):
    """How ``harness eval`` runs episodes on Ray (one actor per worker)."""

    num_cpus: float = Field(1.0, gt=0)
    """CPUs each actor asks Ray for (an episode of the built-in simulator uses about one)."""
    num_gpus: float | None = Field(None, gt=0)
    """GPUs each actor asks for, e.g. for a local model served inside the actor."""
    max_attempts: int = Field(3, ge=1)
    """Times an episode is started in all when the worker running it dies (a killed
    process, a lost node); after that it is recorded as an error."""
    runtime_env: dict[str, Any] | None = None
    """Given to each actor as its ``runtime_env`` (``working_dir``, ``pip``, harmless
    ``env_vars``...), so it applies on a Ray the control script started too. Ray writes it
    in plain text to its session logs, so a secret in it is refused: name the variable in
    ``forward_env`` instead."""
    forward_env: list[str] = Field(default_factory=list)
    """Names of environment variables whose values the coordinator hands to each actor
    directly (never through Ray's ``runtime_env``); every ``api_key_env`` the config names
    is forwarded too."""

    @field_validator("runtime_env")
    @classmethod
    def _no_secret_in_runtime_env(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        problem = runtime_env_secret(value)
        if problem is not None:
            raise ValueError(
                f"no secret, but {problem}; Ray writes runtime_env in plain text to its "
                "session logs (logs/runtime_env_agent.log): put the variable's name in "
                "fleet.forward_env instead (its value is then handed to each actor directly)"
            )
        return value


class HarnessConfig(_Section):
    """The whole configuration of one Harness session."""

    model: ModelConfig = Field(default_factory=ModelConfig)
    compaction_model: ModelConfig | None = None
    """Summarizer model; defaults to `model`."""
    context: ContextConfig = Field(default_factory=ContextConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    observation: ObservationConfig = Field(default_factory=ObservationConfig)
    recording: RecordingConfig = Field(default_factory=RecordingConfig)
    embodiment: str | dict[str, Any] | None = "panda_tabletop"
    """A profile file path, a built-in profile name, an inline mapping, or null."""
    driver: DriverConfig | None = Field(default_factory=DriverConfig)
    scene: SceneConfig = Field(default_factory=SceneConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    tools: list[str] = Field(default_factory=list)
    """Extra tools by import path, `package.module:function_or_tool`."""
    mcp: MCPConfig = Field(default_factory=MCPConfig)
    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig)
    fleet: FleetConfig = Field(default_factory=FleetConfig)
    base_dir: str | None = Field(None, exclude=True)
    """Folder relative paths are resolved against (the config file's folder)."""

    # The one rule for relative paths: a relative path written in a config file (or set
    # on top of one with --set) is relative to that file's folder, whatever it names: the
    # run store, memory, an embodiment profile, skills, an MCP server's cwd. Without a config
    # file (the built-in defaults) it is relative to the working directory. The CLI reads
    # configs/default.yaml when it is there (a checkout), so `demo`, `run`, `chat` and the
    # commands that read runs all agree on where the store is.

    def resolve_path(self, path: str) -> Path:
        """A configured path, relative to the config file's folder (the working directory
        when there is no config file)."""
        candidate = Path(os.path.expanduser(path))
        if candidate.is_absolute() or self.base_dir is None:
            return candidate
        return Path(self.base_dir) / candidate


def chose(section: BaseModel, name: str) -> bool:
    """Whether a config chose ``name`` itself: set, and to something other than its default.

    A default written out counts as not chosen: a config dumped and validated again (``--set``
    overrides, the run store's record read by resume, an eval worker's copy) marks every
    field as set, and must behave as the config it came from. Settings whose default adapts
    to the model (the reserve, the answer limit) ask this one question."""
    default = type(section).model_fields[name].default
    return name in section.model_fields_set and getattr(section, name) != default


def secret_sources(config: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """What a config says is secret: (``run.secret_patterns``, the ``api_key_env`` names
    of every model it configures: decision, compaction, evaluation and sub-agents).

    Takes the config as plain data so a session's recorded config (read back from the run
    store, possibly by an older or newer harness) gives the same answer as a live one.
    """
    run = config.get("run")
    patterns = run.get("secret_patterns") if isinstance(run, Mapping) else None
    evaluation = config.get("evaluation")
    subagents = config.get("subagents")
    models = [
        config.get("model"),
        config.get("compaction_model"),
        evaluation.get("model") if isinstance(evaluation, Mapping) else None,
        subagents.get("model") if isinstance(subagents, Mapping) else None,
    ]
    env_vars = [
        model["api_key_env"]
        for model in models
        if isinstance(model, Mapping) and isinstance(model.get("api_key_env"), str)
    ]
    kept = [p for p in patterns if isinstance(p, str)] if isinstance(patterns, list) else []
    return kept, env_vars


# --------------------------------------------------------------------------- loading
