"""Custom rules: a deployment's own checks, run after the built-in ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from embodiment.envelope.common import Vec3
from embodiment.geometry import segment_hits_box as _hits
from embodiment.profile import Box, EmbodimentProfile
from embodiment.types import Observation

__all__ = ["RuleOutcome", "SafetyRequest", "SafetyRule", "segment_hits_box"]


@dataclass(frozen=True)
class SafetyRequest:
    """What a custom rule sees: the call (with arguments as clamped so far) and context."""

    tool: str
    arguments: Mapping[str, Any]
    requested: Mapping[str, Any]
    kinds: Mapping[str, str]
    observation: Observation | None
    profile: EmbodimentProfile


@dataclass(frozen=True)
class RuleOutcome:
    """A rule's answer. ``clamp`` carries the rewritten arguments."""

    outcome: Literal["clamp", "block"]
    violation: str
    arguments: Mapping[str, Any] | None = None


class SafetyRule(Protocol):
    """A deployment's own check (e.g. "never above the conveyor while it runs").

    Returns None to leave the call as it is. ``name`` labels its violations.
    """

    name: str

    def __call__(self, request: SafetyRequest) -> RuleOutcome | None: ...


def segment_hits_box(start: Vec3, end: Vec3, box: Box) -> bool:
    """Whether the straight segment start->end passes through the box."""
    return _hits(start, end, box.min, box.max)
