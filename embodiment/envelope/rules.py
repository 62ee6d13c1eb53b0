"""The two kinds of rule the envelope composes.

- :class:`EnvelopeRule`: a built-in rule (arguments, positions, refs, scalars, joints,
  base, joint-space path, base sweep, motion path). It reads the :class:`Call` and adds
  its clamps and blocks to the :class:`Verdict` the rules build up together, the way a
  Gymnasium ``ActionWrapper`` (``ClipAction``) rewrites an action and passes it on: each
  is constructed from the profile alone (plus a locator for refs) and testable alone.
- :class:`SafetyRule`: a deployment's own check, run after the built-in ones on the call
  as they left it; whatever it returns is checked by the built-in rules again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from embodiment.envelope.common import Call, Vec3, Verdict
from embodiment.geometry import segment_hits_box as _hits
from embodiment.profile import Box, EmbodimentProfile
from embodiment.types import Observation

__all__ = ["EnvelopeRule", "RuleOutcome", "SafetyRequest", "SafetyRule", "segment_hits_box"]


class EnvelopeRule(Protocol):
    """A built-in rule: adds clamps (rewriting ``verdict.arguments``) and blocks.

    ``ends_on_block``: when it blocks, no later rule runs (the argument completion every
    later rule relies on). ``needs_unblocked``: it runs only on a call no earlier rule has
    blocked (the path checks, which need admitted targets).
    """

    name: str
    ends_on_block: bool
    needs_unblocked: bool

    def apply(self, call: Call, verdict: Verdict) -> None: ...


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
