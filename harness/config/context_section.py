"""The ``context`` section of the config: checkpoint compaction, proactive pruning, the
pressure levels, episodes, and how tool results and the system prompt enter the context.

Part of the model tree of :mod:`harness.config.schema` (which re-exports every class here,
as does :mod:`harness.config`); the context sections live apart because they are the
largest group of settings that belong to one part of the harness (:mod:`harness.context`).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from harness.config.section import Section as _Section

__all__ = [
    "CompactionConfig",
    "ContextConfig",
    "EpisodesConfig",
    "PressureConfig",
    "PruningConfig",
]


class CompactionConfig(_Section):
    """Reserve-token checkpoint compaction (keys and defaults from the specification)."""

    enabled: bool = True
    context_window: int | None = Field(None, gt=0)
    """Defaults to model.context_window (or the built-in table) when omitted."""
    reserve_tokens: int = Field(16384, ge=0)
    """Room kept for the answer: compaction folds once the request reaches
    ``context_window - reserve_tokens``. Left at its default, it is 16384 but at most a
    quarter of the window (an 8192-token window reserves 2048); any other value is used as
    is (and one larger than the window is an error naming this key)."""
    keep_recent_turns: int = Field(4, ge=0)
    keep_recent_tokens: int = Field(20000, ge=0)
    tool_result_max_chars: int = Field(2000, ge=200)
    reasoning_max_chars: int = Field(2000, ge=200)
    max_input_chars: int = Field(400000, ge=2000)
    max_summary_rounds: int = Field(8, ge=1)
    failure_backoff_turns: int = Field(3, ge=0)
    """After a failed summary, wait this many turns before the next model attempt."""


class PruningConfig(_Section):
    """Proactive pruning of old bulky tool results, well before full compaction."""

    enabled: bool = True
    trigger_tokens: int | None = Field(None, ge=0)
    """Prune once the request passes this size; default: 40% of the usable window."""
    min_result_chars: int = Field(8000, ge=0)
    min_reclaim_tokens: int = Field(8192, ge=0)
    """A pass runs only if it reclaims this much: each one rewrites (and so uncaches)
    everything after the first item it changes. Each turn appends a Task Notes snapshot
    that a pass removes once superseded, so the batches are twice the size that suits a
    harness without snapshots (measured in ``benchmarks/context_efficiency.py``)."""
    protect_recent_items: int = Field(12, ge=0)
    """The newest items no pass touches: with a snapshot, a decision and a result per turn,
    the four turns a checkpoint keeps verbatim (``keep_recent_turns``)."""


class PressureConfig(_Section):
    """The pressure levels, as shares of the context window.

    Unset levels come from the window size (``harness.context.eviction.pressure.WINDOW_TABLE``):
    up to 200K tokens the model is nudged at 70 %, a cleanup starts at 80 % and lands at
    40 %. Set levels are used as given (``harness check`` prints the levels in force).
    With ``cache_aware`` they are ceilings, and cleanups below them follow the prompt
    cache's prices (``harness.context.eviction.carrying``).
    """

    enabled: bool = True
    """False: no nudge and no pressure cleanup (checkpoint compaction still runs)."""
    nudge_at: float | None = Field(None, gt=0, lt=1)
    """Share of the window at which the model is told, once per crossing, to condense."""
    cleanup_at: float | None = Field(None, gt=0, lt=1)
    """Share at which the harness evicts completed exchanges and episodes."""
    land_at: float | None = Field(None, gt=0, lt=1)
    """Share a cleanup aims for."""
    cache_aware: bool = False
    """Below ``cleanup_at``, clean up as soon as a cleanup pays for itself at the prompt
    cache's prices (``harness.context.eviction.carrying``): when the tokens it would evict
    have cost, carried request after request, what rewriting the cache costs. The levels
    above stay as ceilings. Off in the library; the default deployment turns it on."""
    cache_read_price: float = Field(0.1, gt=0, lt=1)
    """A cached input token's price, relative to an uncached one (Anthropic 0.1)."""
    cache_write_price: float = Field(1.25, gt=0)
    """A token written to the cache, relative to an uncached one (Anthropic 1.25; a
    provider without a write premium: 1.0)."""

    @model_validator(mode="after")
    def _ordered(self) -> PressureConfig:
        nudge, cleanup, land = self.nudge_at, self.cleanup_at, self.land_at
        if nudge is not None and cleanup is not None and nudge > cleanup:
            raise ValueError(
                f"context.pressure.nudge_at: got {nudge}; expected at most "
                f"context.pressure.cleanup_at ({cleanup})"
            )
        if land is not None and cleanup is not None and land >= cleanup:
            raise ValueError(
                f"context.pressure.land_at: got {land}; expected less than "
                f"context.pressure.cleanup_at ({cleanup})"
            )
        if self.cache_write_price <= self.cache_read_price:
            raise ValueError(
                f"context.pressure.cache_write_price: got {self.cache_write_price}; expected "
                f"more than context.pressure.cache_read_price ({self.cache_read_price}): a "
                "cache write that cost no more than a read would make every cleanup free"
            )
        return self


class EpisodesConfig(_Section):
    """The tools with which the model shapes its own working set."""

    enabled: bool = False
    """Offer ``begin_episode``, ``end_episode`` and ``condense_context``. Off in the
    library (a harness's tool list stays what it was); the default deployment
    (``configs/default.yaml``, ``harness demo``) turns it on."""


class ContextConfig(_Section):
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    pressure: PressureConfig = Field(default_factory=PressureConfig)
    episodes: EpisodesConfig = Field(default_factory=EpisodesConfig)
    pruning: PruningConfig = Field(default_factory=PruningConfig)
    record_max_chars: int = Field(16000, ge=500)
    """Tool results longer than this enter Accumulated as head + tail with an archive
    address; the exact output is always archived."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt (the profile, skills and memory still follow)."""
