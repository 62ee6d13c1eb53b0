"""A task running on a session: what every phase of the loop is handed.

A :class:`Lane` bundles the session (the parts that outlive the task), the task's own
:class:`~harness.runtime.task.TaskState`, the tools this lane may call, and the operator's
callbacks. The phases (:mod:`~harness.runtime.refresh`, :mod:`~harness.runtime.decide`,
:mod:`~harness.runtime.execute`, ...) are functions of a lane, so a second lane over the
same session (a sub-agent with narrowed tools) runs the same loop without touching it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TypeVar

from harness.context import Context
from harness.events import EventBase
from harness.messages import Item
from harness.runtime.session import Session
from harness.runtime.task import TaskEnding, TaskState
from harness.tools import ToolRegistry

__all__ = ["Lane", "Steps"]

T = TypeVar("T")
Steps = Generator[EventBase, None, T]
"""A phase: yields the (stamped) events it emits and returns its result."""


def _never() -> bool:
    return False


@dataclass
class Lane:
    """One running task: its session, state, tools and operator callbacks."""

    session: Session
    state: TaskState
    should_cancel: Callable[[], bool] = _never
    poll_replan: Callable[[], str | None] | None = None
    tools: ToolRegistry = field(default=None)  # type: ignore[assignment]
    """The tools this lane may call (the session's registry unless narrowed)."""

    def __post_init__(self) -> None:
        if self.tools is None:
            self.tools = self.session.tools

    @property
    def context(self) -> Context:
        return self.session.context

    def emit(self, event: EventBase) -> EventBase:
        """Stamp and store an event of this task's current turn."""
        return self.session.emit(event, task_id=self.state.task_id, turn=self.state.turn)

    def emit_all(self, steps: Generator[EventBase, None, T]) -> Steps[T]:
        """Like ``yield from`` for a part's unstamped events; returns the part's value."""
        while True:
            try:
                event = next(steps)
            except StopIteration as stop:
                return stop.value
            yield self.emit(event)

    def record(self, item: Item) -> Item:
        """Append an item to Accumulated as this task's current turn, in the task's active
        episode if any (and store it)."""
        task_id = self.state.task_id
        update = {"task_id": task_id, "turn": self.state.turn}
        if not item.episode:
            update["episode"] = self.context.episodes.current(task_id)
        item = item.model_copy(update=update)
        self.session.append_item(item)
        return item

    def cancelled(self, where: str) -> TaskEnding | None:
        """The cancelled ending if the operator asked to stop, else None."""
        if self.should_cancel():
            return TaskEnding("cancelled", f"cancelled by the operator {where}")
        return None
