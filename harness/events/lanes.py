"""Sub-agent lanes: a lane's start, what it handed back to its parent, and what a resume did
with the lanes it found.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.events.base import EventBase

__all__ = ["HandoffEvent", "HandoffStatus", "LaneStartedEvent", "RecoveryEvent"]


HandoffStatus = Literal["completed", "failed", "interrupted", "provider_error", "budget_exhausted"]
"""How a sub-agent's work ended, as its parent reads it
(see ``harness.runtime.delegation.delegate``)."""


class LaneStartedEvent(EventBase):
    """A sub-agent lane starts (its first event; ``task_id`` is the lane's own id).

    ``parent_task_id``, ``parent_call_id`` and ``parent_turn`` name the parent turn it works
    for (empty for a lane a control script started with ``Harness.delegate``). ``tools`` are
    the tools it may call; ``withheld`` are tools it asked for but may not have, with why.
    """

    type: Literal["lane_started"] = "lane_started"
    goal: str
    parent_task_id: str = ""
    parent_call_id: str = ""
    parent_turn: int = 0
    tools: list[str] = Field(default_factory=list)
    withheld: dict[str, str] = Field(default_factory=dict)
    max_turns: int
    max_tokens: int | None = None
    model: str = ""
    output_schema: dict[str, Any] | None = None
    """The schema its answer must match (None: the default handoff schema)."""


class HandoffEvent(EventBase):
    """What a sub-agent lane handed back to its parent (the lane's last event, after its
    ``done``): the handoff's status and its content, exactly as the parent received it."""

    type: Literal["handoff"] = "handoff"
    parent_task_id: str = ""
    parent_call_id: str = ""
    status: HandoffStatus
    handoff: dict[str, Any] = Field(default_factory=dict)


class RecoveryEvent(EventBase):
    """What ``Harness.resume`` did with the sub-agent lanes it found at start.

    ``resumed``: lanes woken to finish their work; ``repaired``: parent turns answered from
    what a lane had already recorded (or with "not executed" for a lane that never
    started); ``abandoned``: lanes closed as failed because nothing can use their work any
    more (their parent had ended, or no parent turn asked for them).
    """

    type: Literal["recovery"] = "recovery"
    resumed: int = 0
    repaired: int = 0
    abandoned: int = 0
    details: list[str] = Field(default_factory=list)
