"""What happened to the model's context: compactions, episodes, pressure levels and prompt
snapshots.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.events.base import EventBase
from harness.messages import Usage

__all__ = ["CompactionEvent", "ContextPressureEvent", "EpisodeEvent", "PromptSnapshotEvent"]


class CompactionEvent(EventBase):
    """A compaction or pruning pass over Accumulated context."""

    type: Literal["compaction"] = "compaction"
    status: Literal["started", "completed", "failed", "fallback", "skipped", "cancelled"]
    mode: Literal[
        "checkpoint",
        "prune",
        "supersede",
        "deterministic",
        "shrink",
        "overflow",
        "task_end",
        "reference",
        "minimal_reference",
        "eviction",
        "explicit",
    ] = "checkpoint"
    """``task_end``: an ended task's tool traffic folded into the checkpoint when the next
    task starts; ``reference`` and ``minimal_reference``: the later steps of the recovery
    from a provider overflow (:mod:`harness.context.compaction.overflow`); ``eviction``: the
    pressure
    cleanup by the structure of the work (:mod:`harness.context.eviction.by_structure`);
    ``explicit``:
    the model's own ``condense_context``; ``supersede``: the Task Notes snapshot that ended
    the previous request left as the next arrived (free: nothing cached follows it), kept
    apart from ``prune`` so a prune count means the batched passes that cost a cache miss."""
    reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    items_folded: int = 0
    items_retained: int = 0
    rounds: int = 0
    duration_s: float = 0.0
    checkpoint_id: str | None = None
    usage: Usage | None = None
    """Tokens the summarizer model used for this pass (None when no model was called)."""


class EpisodeEvent(EventBase):
    """An episode began or ended (``begin_episode`` / ``end_episode``), or was abandoned
    because its task ended first."""

    type: Literal["episode"] = "episode"
    status: Literal["begun", "ended", "abandoned"]
    name: str
    kind: Literal["exploration", "action"]
    depends_on: list[str] = Field(default_factory=list)
    conclusion: str = ""


class ContextPressureEvent(EventBase):
    """The request crossed the nudge level: the model was told once (``message``)."""

    type: Literal["context_pressure"] = "context_pressure"
    level: Literal["nudge"] = "nudge"
    tokens: int
    context_window: int
    nudge_tokens: int
    cleanup_tokens: int
    message: str = ""


class PromptSnapshotEvent(EventBase):
    """What the model is about to see: token counts per section, never image bytes."""

    type: Literal["prompt_snapshot"] = "prompt_snapshot"
    sections: dict[str, int]
    total_tokens: int
    budget_tokens: int
    threshold_tokens: int
    items: int
    images: int
    resident_hash: str = ""
