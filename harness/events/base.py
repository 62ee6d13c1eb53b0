"""The envelope every stream event shares (session, task, turn, sequence, time)."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EventBase"]


class EventBase(BaseModel):
    """Envelope shared by every event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str = ""
    task_id: str = ""
    turn: int = 0
    seq: int = 0
    time: float = Field(default_factory=time.time)
