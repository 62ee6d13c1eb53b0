"""What the console hub and the web app pass each other: the messages every viewer reads,
a task the operator started, a question waiting for the operator, the record of a Stop,
and the refusal of an action (with the HTTP status the page gets).

Plain data, kept apart from :mod:`harness.console.hub` so the hub reads as the shared state
and its rules (who may act, what a task reads), and the web app can name these types
without the hub's threading.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Message", "Question", "Refused", "StopRecord", "TaskRequest"]


class Refused(Exception):
    """An action the console will not take, with the reason the page shows."""

    def __init__(self, message: str, *, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


class Message(BaseModel):
    """One item of the stream every viewer reads, in order."""

    model_config = ConfigDict(frozen=True)

    id: int
    kind: str
    """``event`` (a harness event as JSON) or ``state`` (the live state, whole)."""
    data: dict[str, Any]


class TaskRequest(BaseModel):
    """A task the operator started from the page."""

    model_config = ConfigDict(frozen=True)

    instruction: str
    max_turns: int | None = None


class Question(BaseModel):
    """A ``query_user`` question waiting for the operator."""

    model_config = ConfigDict(frozen=True)

    id: int
    text: str
    asked_at: float
    timeout_s: float


class StopRecord(BaseModel):
    """One press of Stop (or the terminal's Ctrl-C): when, by whom, from where, and what
    it did."""

    model_config = ConfigDict(frozen=True)

    at: float
    by: str
    """``page g1`` (a browser session), ``script (bearer)``, ``terminal``..."""
    address: str = ""
    client: str = ""
    """The page's connection id, when it came from a page."""
    task_id: str | None
    """The task it stopped (None: nothing was running)."""
    effect: str
    """``stopping`` (the task's cancel was set, also for a task that was starting),
    ``already stopping``, ``start cancelled`` (a task asked for and not taken yet),
    ``nothing running``."""
