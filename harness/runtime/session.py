"""What outlives a task: the session's parts, its context, its store and its counters.

A :class:`Session` is built once per Harness. It owns the context (Resident, Accumulated,
Refreshed), the run store, the tool registry and its sources, the model clients, the
robot's driver and safety envelope, the scene graph, skills and memory, and the event
sequence. The loop and resume reach it only through the public methods here; everything
that belongs to one task lives in a :class:`~harness.runtime.task.TaskState`.

Several tasks can run over one session at once only as lanes of one task (a sub-agent
working for its parent's turn); the session's task slot admits one top-level task. Items,
states and layouts are stored per lane (a sub-agent's history never enters the main
lane's), and events of every lane share the session's one sequence.

The session's tool sources and the tools it offers are a part it owns
(:class:`~harness.runtime.session_tools.SessionTools`, ``session.tooling``), and so is what
it hands to durable memory (:class:`~harness.runtime.session_memory.SessionMemory`,
``session.memory_link``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.config import HarnessConfig, ModelConfig
from harness.context import Context
from harness.context.compaction.compactor import Compactor
from harness.errors import HarnessBusyError, HarnessClosedError
from harness.events import EventBase, SafetyEvent
from harness.messages import ImagePart, Item, Usage
from harness.prompts import DEFAULT_SYSTEM_PROMPT
from harness.protocols import (
    ArchiveHit,
    Evaluator,
    MemoryProvider,
    ObservationProvider,
    PreHook,
    RunStore,
    SafetyGate,
    SceneProvider,
    SearchableArchive,
    SkillLibrary,
    ToolSource,
    UserChannel,
)
from harness.providers.base import Model
from harness.redact import Redactor
from harness.runtime.robot import RobotGuard, mcp_robot_name
from harness.runtime.session_memory import SessionMemory
from harness.runtime.session_tools import SessionTools
from harness.tools import ToolRegistry
from harness.world.task_check import TaskCheck
from memory.task_notes import TaskNotes

if TYPE_CHECKING:
    from embodiment.types import Driver
    from harness.runtime.lane import Lane
    from harness.runtime.task import TaskState
    from harness.world.control_log import ControlLog

__all__ = ["Session", "SessionParts"]

logger = logging.getLogger(__name__)


@dataclass
class SessionParts:
    """The parts a session is made of (all optional but the model, store and compactor)."""

    model: Model
    compaction_model: Model
    store: RunStore
    compactor: Compactor
    driver: Driver | None = None
    observation_provider: ObservationProvider | None = None
    safety: SafetyGate | None = None
    scene: SceneProvider | None = None
    skills: SkillLibrary | None = None
    memory: MemoryProvider | None = None
    evaluator: Evaluator | None = None
    task_check: TaskCheck | None = None
    hooks: Sequence[PreHook] = ()
    user_channel: UserChannel | None = None
    profile_text: str = ""
    subagent_model: Model | None = None
    """The sub-agents' model (``subagents.model``); None: the main model."""
    subagent_model_config: ModelConfig | None = None
    redactor: Redactor | None = None
    """The session's secret redactor (built-in shapes only when None)."""


class Session:
    """One session: the parts every task of it shares, and its bookkeeping."""

    def __init__(
        self,
        config: HarnessConfig,
        *,
        session_id: str,
        context: Context,
        parts: SessionParts,
        tools: ToolRegistry,
    ) -> None:
        self.config = config
        self.session_id = session_id
        self.context = context
        self.model = parts.model
        self.compaction_model = parts.compaction_model
        self.store = parts.store
        self.compactor = parts.compactor
        self.driver = parts.driver
        self.robot = RobotGuard(
            parts.driver,
            session=session_id,
            robot_name=mcp_robot_name(config.mcp.servers, config.base_dir),
        )
        """One physical command at a time, and the stop at the end of each task."""
        self.observation_provider = parts.observation_provider
        self.control_log: ControlLog | None = None
        """The driver's control steps (``recording.control``), emitted after each command."""
        self.safety = parts.safety
        self.scene = parts.scene
        self.skills = parts.skills
        self.memory = parts.memory
        self.evaluator = parts.evaluator
        self.task_check = parts.task_check
        self.hooks = list(parts.hooks)
        self.user_channel = parts.user_channel
        self.profile_text = parts.profile_text
        self.subagent_model = parts.subagent_model
        self.subagent_model_config = parts.subagent_model_config
        self.redactor = parts.redactor or Redactor()
        """Applied once to every event before it is stored and handed to the caller, and
        to everything handed to memory."""
        self.tools = tools
        self.tooling = SessionTools(tools, context)
        """The tool sources (MCP servers) and the tools offered to a lane."""
        self.memory_link = SessionMemory(
            config,
            session_id=session_id,
            store=self.store,
            memory=self.memory,
            redactor=self.redactor,
            tools=tools,
        )
        """What the session hands to durable memory, and memory's helpers' cost."""
        self._seq = 0
        self._frames = 0
        self._slot_lock = threading.Lock()
        self._emit_lock = threading.Lock()
        self._listeners: list[Callable[[EventBase], None]] = []
        self._active: TaskState | None = None
        self._lanes: dict[str, Lane] = {}
        self.closed = False
        self.last_notes = self.new_task_notes()
        """Task Notes of the latest task (``Harness.task_notes``)."""

    @property
    def tool_sources(self) -> list[ToolSource]:
        return self.tooling.tool_sources

    @tool_sources.setter
    def tool_sources(self, sources: list[ToolSource]) -> None:
        """Replace the sources; their tools are registered at the next task's start."""
        self.tooling.tool_sources = list(sources)

    def open(self) -> None:
        """Record the session in the run store (once its tools are registered)."""
        self.store.open_session(
            self.session_id, config=self.config.model_dump(mode="json", exclude={"base_dir"})
        )

    # ================================================================== tasks and lanes

    @property
    def active_task(self) -> TaskState | None:
        return self._active

    def begin_task(self, lane: Lane) -> None:
        """Take the session's task slot for a top-level task; refused while one runs."""
        if self.closed:
            raise HarnessClosedError("this Harness is closed")
        state = lane.state
        with self._slot_lock:
            if self._active is not None:
                raise HarnessBusyError(
                    f"task {self._active.task_id} is still running in session "
                    f"{self.session_id}; wait for its done event or close its stream"
                )
            self._active = state
        self.open_lane(lane)
        if not state.lane:
            self.last_notes = state.notes

    def end_task(self, state: TaskState) -> None:
        """Give the slot back (idempotent; a stale caller cannot free a newer task's slot)."""
        self.close_lane(state)
        with self._slot_lock:
            if self._active is state:
                self._active = None

    def open_lane(self, lane: Lane) -> None:
        """Register a running lane so its tools can find it by task id (a sub-agent's lane
        is opened by its parent's ``delegate`` call, without the task slot)."""
        self._lanes[lane.state.task_id] = lane

    def close_lane(self, state: TaskState) -> None:
        lane = self._lanes.get(state.task_id)
        if lane is not None and lane.state is state:
            del self._lanes[state.task_id]

    def lane(self, task_id: str) -> Lane | None:
        """The running lane with this task id (built-in tools reach their task through
        it)."""
        return self._lanes.get(task_id)

    def check_idle(self, action: str) -> None:
        if self._active is not None:
            raise HarnessBusyError(
                f"{action}() refused: task {self._active.task_id} is running; "
                "finish or close its stream first"
            )

    def new_task_notes(self) -> TaskNotes:
        return TaskNotes(
            timeline_max=self.config.memory.notes_timeline_max, clean=self.redactor.text
        )

    # ================================================================== events and items

    def emit(self, event: EventBase, *, task_id: str, turn: int) -> EventBase:
        """Stamp ``event`` with the session, task, turn and next sequence number, redact
        it, store it, and return it for the caller.

        This is the one place every event passes on its way out, so the run store, the
        control script iterating ``run_stream()`` and the CLI all get the same redacted
        event. (Streamed model text is redacted as a stream before it gets here; see
        :func:`harness.runtime.phases.decide.call_model`.) Locked: a sub-agent lane emits from its
        parent's tool thread, and the sequence number and the store's order must agree."""
        with self._emit_lock:
            self._seq += 1
            stamped = event.model_copy(
                update={
                    "session_id": self.session_id,
                    "task_id": task_id,
                    "turn": turn,
                    "seq": self._seq,
                }
            )
            stamped = self.redactor.model(stamped)
            self.store.append_event(stamped)
            for listener in self._listeners:
                try:
                    listener(stamped)
                except Exception:
                    logger.exception("event listener %r failed; the task goes on", listener)
        return stamped

    def add_listener(self, listener: Callable[[EventBase], None]) -> None:
        """Call ``listener`` with every event as it is emitted (stamped and redacted, after
        the store has it), from the thread that emits it and in sequence order.

        For live viewers such as the operator console (:mod:`harness.console`): a listener
        must return at once (hand the event to a queue) and never steer the task; one that
        raises is logged and the task goes on."""
        self._listeners = [*self._listeners, listener]

    def remove_listener(self, listener: Callable[[EventBase], None]) -> None:
        self._listeners = [item for item in self._listeners if item is not listener]

    def continue_sequence(self, last_seq: int) -> None:
        """Resume numbers events after the last one the store holds."""
        self._seq = max(self._seq, last_seq)

    def append_item(self, item: Item, *, context: Context | None = None, lane: str = "") -> None:
        """Append to a lane's Accumulated (the main lane's by default) and store it at once
        (nothing is lost on a crash)."""
        context = context or self.context
        context.append(item)
        self._put_item(item, context, lane)

    def _put_item(self, item: Item, context: Context, lane: str) -> None:
        tokens = context.item_tokens(item)
        if lane:
            self.store.put_item(
                self.session_id, item, lifetime="accumulated", tokens=tokens, lane=lane
            )
        else:  # the main lane: the call every RunStore has always accepted
            self.store.put_item(self.session_id, item, lifetime="accumulated", tokens=tokens)

    def set_item_state(
        self,
        item_id: str,
        state: str,
        reason: str,
        *,
        context: Context | None = None,
        lane: str = "",
    ) -> None:
        (context or self.context).set_state(item_id, state, reason)  # type: ignore[arg-type]
        self.sync_item_states(context=context, lane=lane)

    def sync_item_states(self, *, context: Context | None = None, lane: str = "") -> None:
        """Store the items and states the compactor created or changed since last time in
        a lane's context (the main lane's by default)."""
        context = context or self.context
        new_items, changed = context.drain_changes()
        for item in new_items:
            self._put_item(item, context, lane)
        for item_id, state in changed.items():
            self.store.set_item_state(item_id, state=state.status, reason=state.reason)
        if new_items or changed:
            ids = [i.id for i in context.accumulated]
            if lane:
                self.store.set_accumulated(self.session_id, ids, lane=lane)
            else:
                self.store.set_accumulated(self.session_id, ids)

    def reset(self) -> None:
        """Clear Accumulated (``Harness.reset_session``); tools, clients and Resident stay."""
        self.check_idle("reset_session")
        self.context.clear_accumulated()
        self.store.set_accumulated(self.session_id, [])
        self.last_notes = self.new_task_notes()

    def keep_observation_images(self, images: list[ImagePart]) -> None:
        """Store every ``run.image_retention_every``-th observation's frames."""
        self._frames += 1
        if (self._frames - 1) % self.config.run.image_retention_every == 0:
            for image in images:
                self.store.put_image(image)

    # ================================================================== the archive

    def read_archive(self, address: str) -> str | None:
        """The exact text archived at ``address`` if it belongs to this session, else None
        (an address of another session reads exactly like an unknown one).

        The scope is the store's record of which session each archived output's task ran
        in. A sub-agent lane of this session records its task under this session's id
        (``store.start_task(session.session_id, lane_task_id, ...)``), so its archive is in
        scope without anything added here; only a lane recorded under another id would
        need a wider scope, and this is where it would be granted.
        """
        return self.store.archive_get(address, session_id=self.session_id)

    def search_archive(self, query: str, *, limit: int) -> list[ArchiveHit] | None:
        """Archived outputs of this session containing ``query`` (None when the store
        cannot search); scoped like :meth:`read_archive`."""
        if not isinstance(self.store, SearchableArchive):
            return None
        return self.store.archive_search(self.session_id, query, limit=limit)

    # ================================================================== resident

    def prepare_resident(self, cancelled: Callable[[], bool] | None = None) -> Usage:
        """Resident for a new task: system prompt, profile, catalog, memory (read now).

        Returns what memory's model helpers spent writing summaries read now (the task's
        cost). A cancel while a helper's model call runs raises
        :class:`~harness.cancel.Cancelled`."""
        ctx = self.context
        ctx.set_resident("system", self.config.context.system_prompt or DEFAULT_SYSTEM_PROMPT)
        ctx.set_resident("embodiment", self.profile_text)
        ctx.set_resident("skills", self.skills.catalog_text() if self.skills else "")
        memory_text = ""
        if self.memory_link.active():
            assert self.memory is not None
            with self.memory_link.watching(cancelled):
                memory_text = self.memory.resident_text(
                    budget_tokens=self.config.memory.budget_tokens, estimate=ctx.estimator.text
                )
        ctx.set_resident("memory", memory_text)
        # Tool sources may carry words for the model about their tools (MCP servers'
        # `instructions`, bounded by the source): Resident, after the rest.
        ctx.set_resident("tool_sources", self.tooling.resident_text())
        return self.memory_link.drain_memory_usage()

    def end_task_resident(self, context: Context | None = None) -> None:
        """Task-scoped capability context (loaded skill bodies) leaves with the task (a
        sub-agent's child view drops only the skills it loaded itself)."""
        (context or self.context).remove_resident_prefix("skill:")

    # ================================================================== the robot

    def interrupt_robot(self) -> None:
        """Interrupt a physical action in flight (called while the tool is blocking)."""
        self.robot.interrupt()

    def halt_robot(self) -> bool:
        """Stop the robot now, from any thread: an operator's Stop, ahead of the task's
        cancel (:meth:`harness.runtime.robot.RobotGuard.halt`)."""
        return self.robot.halt()

    def record_world_state(self, state: TaskState) -> None:
        """Record the world's state (drivers with ``snapshot()``: the simulator) so resume
        can put it back; a driver without one is re-observed on resume instead."""
        snapshot = getattr(self.driver, "snapshot", None)
        if not callable(snapshot):
            return
        try:
            world = snapshot()
        except Exception:
            logger.exception("the driver could not snapshot the world state")
            return
        self.store.put_world_state(self.session_id, state.task_id, turn=state.turn, state=world)

    def stop_robot(self) -> list[SafetyEvent]:
        """Leave the robot stopped at the end of every task, whatever ended it; what may
        have left it moving comes back as ``safety`` events (empty: it is stopped)."""
        return self.robot.stop()
