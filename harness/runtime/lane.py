"""A task running on a session: what every phase of the loop is handed.

A :class:`Lane` bundles the session (the parts that outlive the task), the task's own
:class:`~harness.runtime.task.TaskState`, the tools this lane may call, the context it
works in, the model it asks, and the operator's callbacks. The phases
(:mod:`~harness.runtime.phases.refresh`, :mod:`~harness.runtime.phases.decide`,
:mod:`~harness.runtime.phases.execute`, ...) are functions of a lane, so a second lane over the
same session (a sub-agent, :mod:`~harness.runtime.delegation.delegate`) runs the same loop with
narrowed tools, a child view of the context and, if configured, another model.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from harness.config import ModelConfig
from harness.context import Context
from harness.events import EventBase
from harness.messages import Item, ModelResponse
from harness.providers.base import Model
from harness.runtime.session import Session
from harness.runtime.task import TaskEnding, TaskState
from harness.tools import ToolRegistry

if TYPE_CHECKING:
    from harness.context.compaction.compactor import Compactor
    from harness.world.task_check import TaskCheck

__all__ = ["Conclude", "Lane", "Steps"]

T = TypeVar("T")
Steps = Generator[EventBase, None, T]
"""A phase: yields the (stamped) events it emits and returns its result."""

Conclude = Callable[["Lane", ModelResponse], "Steps[TaskEnding | None]"]
"""What a model answer without a tool call means for a lane: how the task ends, or None
to go on (a sub-agent's answer that failed its schema earns a repair round)."""


def _never() -> bool:
    return False


def completed(lane: Lane, response: ModelResponse) -> Steps[TaskEnding | None]:
    """A main-lane task: an answer without a tool call is the final report."""
    return TaskEnding("completed", "the model answered without a tool call", report=response.text)
    yield  # a phase like the others (this one emits nothing)


@dataclass
class Lane:
    """One running task: its session, state, tools, context, model and callbacks."""

    session: Session
    state: TaskState
    should_cancel: Callable[[], bool] = _never
    poll_replan: Callable[[], str | None] | None = None
    tools: ToolRegistry = field(default=None)  # type: ignore[assignment]
    """The tools this lane may call (the session's registry unless narrowed)."""
    context: Context = field(default=None)  # type: ignore[assignment]
    """Where this lane's history lives (the session's context unless a child view)."""
    model: Model = field(default=None)  # type: ignore[assignment]
    model_config: ModelConfig = field(default=None)  # type: ignore[assignment]
    """The model this lane asks, and its settings (output limit, prices)."""
    compactor: Compactor = field(default=None)  # type: ignore[assignment]
    refusals: dict[str, str] = field(default_factory=dict)
    """Tools this lane may not call although its task asked for them, with the reason the
    model reads when it calls one anyway (a sub-agent's withheld physical tools)."""
    conclude: Conclude = completed
    _relayed: deque[str] = field(default_factory=deque, repr=False)
    _operator_poll: Callable[[], str | None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        session = self.session
        self.tools = self.tools if self.tools is not None else session.tools
        self.context = self.context if self.context is not None else session.context
        self.model = self.model if self.model is not None else session.model
        self.model_config = (
            self.model_config if self.model_config is not None else session.config.model
        )
        self.compactor = self.compactor if self.compactor is not None else session.compactor
        if self.poll_replan is not None:
            # Revisions a sub-agent took from the operator while this lane's turn waited
            # for it are this lane's too: its own poll returns them first.
            self._operator_poll = self.poll_replan
            self.poll_replan = self._poll

    @property
    def task_check(self) -> TaskCheck | None:
        """What judges the goal when the task ends: the session's check for a task; none
        for a sub-agent, whose goal is a piece of its parent's (its answer is held to its
        contract's schema instead, and its world changes are in its handoff)."""
        return None if self.state.lane else self.session.task_check

    @property
    def lane_id(self) -> str:
        """ "" for a main-lane task, the lane's own id for a sub-agent."""
        return self.state.lane

    # ------------------------------------------------------------------ events and items

    def emit(self, event: EventBase) -> EventBase:
        """Stamp and store an event of this task's current turn."""
        return self.session.emit(event, task_id=self.state.task_id, turn=self.state.turn)

    def emit_all(self, steps: Generator[EventBase, None, T]) -> Steps[T]:
        """Like ``yield from`` for a part's unstamped events; returns the part's value.

        An event that is already stamped (a sub-agent lane's, passed up through the
        ``delegate`` call its parent's turn is waiting on) was stored by its own lane and
        goes through unchanged."""
        while True:
            try:
                event = next(steps)
            except StopIteration as stop:
                return stop.value
            yield event if event.seq else self.emit(event)

    def record(self, item: Item) -> Item:
        """Append an item to this lane's Accumulated as its current turn, in the lane's
        active episode if any (and store it)."""
        task_id = self.state.task_id
        update = {"task_id": task_id, "turn": self.state.turn}
        if not item.episode:
            update["episode"] = self.context.episodes.current(task_id)
        item = item.model_copy(update=update)
        self.session.append_item(item, context=self.context, lane=self.lane_id)
        return item

    def set_item_state(self, item_id: str, state: str, reason: str) -> None:
        self.session.set_item_state(item_id, state, reason, context=self.context, lane=self.lane_id)

    def sync_item_states(self) -> None:
        """Store what the compactor changed in this lane's context."""
        self.session.sync_item_states(context=self.context, lane=self.lane_id)

    # ------------------------------------------------------------------ the operator

    def cancelled(self, where: str) -> TaskEnding | None:
        """The cancelled ending if the operator asked to stop, else None."""
        if self.should_cancel():
            return TaskEnding("cancelled", f"cancelled by the operator {where}")
        return None

    def _poll(self) -> str | None:
        if self._relayed:
            return self._relayed.popleft()
        assert self._operator_poll is not None
        return self._operator_poll()

    def relay_revision(self) -> str | None:
        """The operator's next revision for a sub-agent working for this lane's turn; it
        is kept for this lane as well, which applies it at its own next poll."""
        if self._operator_poll is None:
            return None
        revision = self._operator_poll()
        if revision is not None and str(revision).strip():
            self._relayed.append(str(revision))
        return revision
