"""Resuming a session after a crash: rebuild it from the run store and continue its task.

Everything a task depends on was committed to the store before the next step relied on
it, so a new process can rebuild the session as it was at the crash:

- Accumulated context, item by item, with each item's state (the last recorded layout plus
  the items appended after it);
- the interrupted task's :class:`~harness.runtime.task.TaskState`: turn counter, usage,
  revisions, failure budget, tool outcomes and Task Notes (the last structured snapshot,
  then what changed after it), rebuilt by replaying its recorded events through the same
  rules the loop applied (:mod:`harness.runtime.rules`);
- the skills the task had loaded (reloaded through ``load_skill``, so Resident is the same).

The task then runs the ordinary loop with a prologue (:mod:`harness.runtime.resume.resumed_task`)
instead of the usual start. The world is made to agree with that context: a simulator is
put back into the state recorded after the last turn (object poses, gripper, held
object), a real robot is re-observed, and ``task_resumed`` says which. A tool call
the model requested without a recorded result is answered first: if its ``tool_call``
event was recorded the tool had started, and nobody knows what it did, so the model reads
"interrupted, outcome unknown" and must observe before acting.
The call is never run again by the harness, because repeating a physical motion whose
first attempt may have completed is how robots hit things.

Sub-agent lanes are restored apart (:mod:`harness.runtime.delegation.recovery`): a lane that was
working for the interrupted task's pending ``delegate`` call wakes as itself (its own
history, its own pending calls answered the same way, plus a "finish up" notice) and its
handoff answers the call before the task continues; inconsistent lanes are repaired or
abandoned, and a ``recovery`` event gives the counts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from harness.config import HarnessConfig, resolve_config
from harness.context import Context, ItemState, RetiredItem
from harness.context.episodes.marks import Episode
from harness.context.introspection import EpisodeRow
from harness.errors import RunStoreDamagedError, RunStoreError
from harness.events import (
    CompactionEvent,
    ContextPressureEvent,
    EvaluationEvent,
    EventBase,
    LaneStartedEvent,
    ModelResponseEvent,
    RecoveryEvent,
    ReplanEvent,
    SkillLoadedEvent,
    TaskResumedEvent,
    TaskStartedEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.messages import AssistantItem, NoticeItem, ToolCall, ToolResultItem, Verdict
from harness.prompts import SUBAGENT_REPAIR
from harness.protocols import LaneLink
from harness.runtime.delegation.delegate import (
    DELEGATE_TOOL,
    Contract,
    Handoff,
)
from harness.runtime.delegation.recovery import (
    abandon_lane,
    contract_of_lane,
    inspect_lanes,
)
from harness.runtime.rules import RecordedResult
from harness.runtime.session import Session
from harness.runtime.task import TaskState
from harness.store import SQLiteRunStore
from harness.store.reader import RunLog, StoredItem, StoredTask, process_alive
from harness.tools import ToolOutput
from memory.task_notes import TaskNotes

__all__ = [
    "INTERRUPTED_ERROR_KIND",
    "PendingCall",
    "ResumePoint",
    "restore_session",
    "resume_session",
]

INTERRUPTED_ERROR_KIND = "outcome_unknown"


class _HasSession(Protocol):
    session: Session

    def close(self) -> None: ...


H = TypeVar("H", bound=_HasSession)


# ====================================================================== what to continue


@dataclass
class PendingCall:
    """A tool call the model requested whose result was never recorded."""

    call: ToolCall
    started: bool
    """Its ``tool_call`` event was recorded: the tool was running when the process died."""
    verdict: Verdict | None = None
    """The evaluator's verdict, if it ran before the crash."""

    def output(self) -> tuple[ToolOutput, bool]:
        """What the model reads instead of the lost result, and whether it ran."""
        name = self.call.name
        if not self.started:
            return (
                ToolOutput.error(
                    f"not executed: the harness stopped (crash or power loss) before {name} "
                    "ran. Call it again if it is still needed.",
                    "not_executed",
                ),
                False,
            )
        text = (
            f"{name} was interrupted, outcome unknown: the harness stopped (crash or power "
            "loss) while it was running, and it was not run again. Observe the current "
            "state before acting."
        )
        if self.verdict is not None:
            text += (
                f" The evaluator's last verdict before the stop was {self.verdict.status}"
                + (f": {self.verdict.evidence}" if self.verdict.evidence else "")
                + "."
            )
        return ToolOutput.error(text, INTERRUPTED_ERROR_KIND), True


@dataclass
class RecordedContext:
    """A lane's Accumulated as recorded: the live items (with their states) and the items
    that had left it (their last state), read while the store is open."""

    live: list[StoredItem] = field(default_factory=list)
    retired: list[tuple[StoredItem, str, str]] = field(default_factory=list)
    episodes: list[EpisodeRow] = field(default_factory=list)
    """A sub-agent lane's own episodes (the main lane's are restored per task)."""
    lane: str = ""

    @classmethod
    def read(cls, log: RunLog, session_id: str, *, lane: str = "") -> RecordedContext:
        live = log.accumulated(session_id, lane=lane)
        live_ids = {stored.id for stored in live}
        recorded = {stored.id: stored for stored in log.items(session_id, lane=lane)}
        retired = []
        for item_id, (status, reason) in log.item_states(session_id, lane=lane).items():
            left = recorded.get(item_id)
            if item_id not in live_ids and left is not None:
                retired.append((left, status, reason))
        return cls(live, retired, log.episodes(lane) if lane else [], lane)

    def apply(self, context: Context) -> None:
        restore_episodes(context, self.episodes, self.lane)
        for stored in self.live:
            context.append(stored.item)
            state = context.states[stored.id]
            state.status = stored.state  # type: ignore[assignment]
            state.reason = stored.reason
        for left, status, reason in self.retired:
            context.states[left.id] = ItemState(
                status=status,  # type: ignore[arg-type]
                reason=reason,
                original_tokens=left.tokens,
            )
            context.retired[left.id] = RetiredItem(
                left.item.kind, left.item.task_id, left.item.turn
            )


def restore_episodes(context: Context, rows: list[EpisodeRow], task_id: str) -> None:
    """Put a task's episodes (from its ``episode`` events) back in the context's book, so
    an episode open at the crash can still be ended and eviction knows what is active."""
    for row in rows:
        context.episodes.restore(
            Episode(
                name=row.name,
                kind=row.kind,  # type: ignore[arg-type]
                task_id=task_id,
                begun_turn=row.begun_turn or 0,
                depends_on=tuple(row.depends_on),
                state=row.state,  # type: ignore[arg-type]
                conclusion=row.conclusion,
                ended_turn=row.ended_turn,
            )
        )


@dataclass
class WakePlan:
    """A sub-agent lane that was working when the process died, to finish as itself."""

    point: ResumePoint
    """Its own resume point (state, pending calls, skills), like a task's."""
    contract: Contract
    context: RecordedContext
    repaired: bool
    """It had already had its repair round."""


@dataclass
class ResumePoint:
    """Where an interrupted task stands, as read from the store."""

    state: TaskState
    skills: list[str] = field(default_factory=list)
    pending: list[PendingCall] = field(default_factory=list)
    previous_pid: int | None = None
    wake: dict[str, WakePlan] = field(default_factory=dict)
    """Pending ``delegate`` call id -> the lane that finishes and answers it."""
    deliver: dict[str, Handoff] = field(default_factory=dict)
    """Pending ``delegate`` call id -> the handoff its ended lane had recorded."""
    never_started: set[str] = field(default_factory=set)
    recovery: RecoveryEvent | None = None
    world: tuple[str, int, dict[str, Any]] | None = None
    """The session's last recorded world state: (task id, turn, state)."""
    inherited_world: tuple[Literal["restored", "re_observed", "none"], int | None] | None = None
    """A woken lane's: what its parent's resume did with the world (it is not restored
    twice)."""


# ====================================================================== building a harness


def resume_session(
    build: Callable[[HarnessConfig], H],
    session_id: str,
    config: str | os.PathLike[str] | HarnessConfig | None,
    *,
    overrides: Any = (),
    store: Any = None,
) -> tuple[H, ResumePoint | None]:
    """See :meth:`harness.Harness.resume`: the rebuilt harness and its resume point."""
    if config is None:
        with RunLog(_store_folder(store, HarnessConfig())) as log:
            recorded: Mapping[str, Any] = log.session(session_id).config
        cfg = resolve_config(recorded, overrides=overrides)
    else:
        cfg = resolve_config(config, overrides=overrides)
    folder = _store_folder(store, cfg)
    with RunLog(folder) as log:
        stored = log.session(session_id)
        if stored.pid != os.getpid() and process_alive(stored.pid, stored.host, stored.pid_started):
            raise RunStoreError(
                f"session {session_id} is still running in process {stored.pid} on "
                f"{stored.host}; stop it before resuming (two processes must never drive "
                "the same robot)"
            )
    harness = build(cfg)
    try:
        with RunLog(folder) as log:
            point = restore_session(harness.session, log, previous_pid=stored.pid)
            if log.damage:  # rebuilt without a row: not the history the model had
                lines = [damage.line() for damage in log.damage]
                raise RunStoreDamagedError(
                    [*lines, f"not resuming session {session_id}: its history is damaged"]
                )
    except BaseException:
        harness.close()
        raise
    return harness, point


def _store_folder(store: Any, config: HarnessConfig) -> Path:
    if store is not None:
        if not isinstance(store, SQLiteRunStore):
            raise RunStoreError(
                f"resume reads the session from a SQLite run store; got {type(store).__name__}"
            )
        return store.folder
    if not config.run.store:
        raise RunStoreError(
            "resume needs a run store on disk, but run.store is null (the session was kept "
            "in memory only)"
        )
    return config.resolve_path(config.run.store)


# ====================================================================== restoring


def restore_session(
    session: Session, log: RunLog, *, previous_pid: int | None = None
) -> ResumePoint | None:
    """Rebuild the session's context from ``log``; return the interrupted task's resume
    point, or None when the session's last task had ended."""
    session_id = session.session_id
    session.continue_sequence(log.max_seq(session_id))
    RecordedContext.read(log, session_id).apply(session.context)
    for task in reversed(log.tasks(session_id=session_id)):
        restore_episodes(session.context, log.episodes(task.id), task.id)

    tasks = log.tasks(session_id=session_id, limit=1)
    interrupted = tasks[0] if tasks and tasks[0].recorded_status == "running" else None
    if interrupted is not None and interrupted.is_lane:
        interrupted = None  # a lane a control script ran directly: nobody waits for it
    point = None
    if interrupted is not None:
        point = _resume_point(session, log, interrupted, previous_pid=previous_pid)
        point.world = log.world_state(session_id)  # the session's last: a lane's, maybe
        session.last_notes = point.state.notes
    _recover_lanes(session, log, interrupted, point)
    return point


def _recover_lanes(
    session: Session, log: RunLog, interrupted: StoredTask | None, point: ResumePoint | None
) -> None:
    """Wake, repair or abandon the session's lanes (see :mod:`lane_recovery`)."""
    calls = point.pending if point is not None else []
    pending = {p.call.id: p.started for p in calls if p.call.name == DELEGATE_TOOL}
    findings = inspect_lanes(
        log, session.session_id, interrupted=interrupted, pending_delegates=pending
    )
    for lane, reason in findings.abandon:
        abandon_lane(session, lane, reason)
    if point is not None:
        for call, lane in findings.wake.items():
            point.wake[call] = _wake_plan(session, log, lane)
        point.deliver = findings.deliver
        point.never_started = findings.never_started
        woken = {lane.id for lane in findings.wake.values()}
        for lane in log.lanes(point.state.task_id):  # what its other lanes spent is its cost
            if lane.id not in woken:
                point.state.add_usage(lane.usage)
    event = findings.event()
    if event is None:
        return
    if point is not None:
        point.recovery = event  # emitted by the resumed task's prologue
    else:
        session.emit(event, task_id="", turn=0)


def _wake_plan(session: Session, log: RunLog, lane: StoredTask) -> WakePlan:
    child = _resume_point(session, log, lane, previous_pid=None)
    state = child.state
    state.lane = lane.id
    if lane.parent_task_id is not None:
        state.parent = LaneLink(
            task_id=lane.parent_task_id,
            call_id=lane.parent_call_id or "",
            turn=lane.parent_turn or 0,
        )
    contract, _ = contract_of_lane(log, lane)
    recorded = RecordedContext.read(log, lane.session_id, lane=lane.id)
    repair_head = SUBAGENT_REPAIR.split(":", 1)[0]
    repaired = any(
        isinstance(stored.item, NoticeItem) and stored.item.text.startswith(repair_head)
        for stored in log.items(lane.session_id, lane=lane.id)
    )
    return WakePlan(point=child, contract=contract, context=recorded, repaired=repaired)


def _resume_point(
    session: Session, log: RunLog, task: StoredTask, *, previous_pid: int | None
) -> ResumePoint:
    snapshot = log.task_notes(task.id)
    notes_since, notes = _snapshot_notes(session, task, snapshot)
    state = TaskState(
        instruction=task.instruction,
        max_turns=session.config.run.max_turns,
        notes=notes,
        task_id=task.id,
        notes_version_sent=notes.version if snapshot is not None else -1,
    )
    point = ResumePoint(state=state, previous_pid=previous_pid)
    events = log.events_with_pos(task_id=task.id)
    arguments = {e.call_id: e.arguments for _, e in events if isinstance(e, ToolCallEvent)}
    last_turn = 0
    for pos, event in events:
        last_turn = max(last_turn, event.turn)
        _replay(state, point, event, arguments, into_notes=pos > notes_since)

    items = [stored.item for stored in log.items(task.session_id, task_id=task.id)]
    decisions = [item for item in items if isinstance(item, AssistantItem)]
    answered = {item.call_id for item in items if isinstance(item, ToolResultItem)}
    verdicts = {e.call_id: e.verdict for _, e in events if isinstance(e, EvaluationEvent)}
    last = decisions[-1] if decisions else None
    if last is not None:
        point.pending = [
            PendingCall(call=call, started=call.id in arguments, verdict=verdicts.get(call.id))
            for call in last.tool_calls
            if call.id not in answered
        ]
    # A last turn that got as far as a decision is finished by answering its calls; one
    # that died before its decision (observation, compaction, the model call) runs again.
    decided = last is not None and last.turn == last_turn
    state.turn = last_turn if decided else max(0, last_turn - 1)
    return point


def _snapshot_notes(
    session: Session, task: StoredTask, snapshot: tuple[int, dict[str, Any]] | None
) -> tuple[int, TaskNotes]:
    """The last structured Task Notes snapshot and its position (or fresh notes)."""
    timeline_max = session.config.memory.notes_timeline_max
    if snapshot is None:
        notes = session.new_task_notes()
        notes.reset(task.instruction)
        return -1, notes
    since, data = snapshot
    clean = session.redactor.text
    return since, TaskNotes.from_state(data, timeline_max=timeline_max, clean=clean)


def _replay(
    state: TaskState,
    point: ResumePoint,
    event: EventBase,
    arguments: Mapping[str, Mapping[str, Any]],
    *,
    into_notes: bool,
) -> None:
    """Apply one recorded event to the rebuilt state, as the loop applied it live.

    Task Notes changes are replayed only after the restored snapshot (``into_notes``);
    counters and outcomes over the whole task.
    """
    if isinstance(event, (TaskStartedEvent, TaskResumedEvent)):
        state.max_turns = event.max_turns
    elif isinstance(event, LaneStartedEvent):
        state.max_turns = event.max_turns
        state.max_tokens = event.max_tokens
    elif isinstance(event, ModelResponseEvent):
        state.add_usage(event.usage)
        if event.text:
            state.last_text = event.text
    elif isinstance(event, CompactionEvent):
        state.add_usage(event.usage)
    elif isinstance(event, ContextPressureEvent):
        state.nudged = True  # sent before the crash: never again in this task
    elif isinstance(event, ReplanEvent):
        state.revise(event.revision, notes=into_notes)
    elif isinstance(event, SkillLoadedEvent) and event.name not in point.skills:
        point.skills.append(event.name)
    elif isinstance(event, ToolResultEvent):
        if into_notes and event.name == "update_task_notes" and not event.is_error:
            args = arguments.get(event.call_id, {})
            state.notes.update(
                phase=args.get("phase"),
                add_notes=list(args.get("add_notes") or []),
                remove_notes=list(args.get("remove_notes") or []),
            )
        state.account(RecordedResult.of_event(event), notes=into_notes)
