"""Resuming a session after a crash: rebuild it from the run store and continue its task.

Everything a task depends on was committed to the store before the next step relied on
it, so a new process can rebuild the session as it was at the crash:

- Accumulated context, item by item, with each item's state (the last recorded layout plus
  the items appended after it);
- Task Notes (the last structured snapshot, then the outcomes and note updates recorded
  after it);
- the skills the task had loaded (reloaded from the library, so Resident is the same);
- the turn counter, usage, revisions and failure count of the interrupted task.

A tool call the model requested without a recorded result is answered before the model
decides again. If its ``tool_call`` event was recorded the tool had started, and nobody
knows what it did: the model reads "interrupted, outcome unknown" and must observe before
acting. The call is never run again by the harness, because repeating a physical motion
whose first attempt may have completed is how robots hit things.
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config import HarnessConfig, apply_overrides, load_config
from harness.context import ItemState, RetiredItem
from harness.errors import RunStoreError
from harness.events import (
    EvaluationEvent,
    EventBase,
    ModelResponseEvent,
    NotificationEvent,
    ReplanEvent,
    SkillLoadedEvent,
    TaskResumedEvent,
    TaskStartedEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.loop import TaskRun, _outcome_summary
from harness.messages import AssistantItem, RevisionItem, ToolCall, ToolResultItem, Usage, Verdict
from harness.runlog import RunLog, StoredTask, process_alive
from harness.store import SQLiteRunStore
from harness.tools import ToolContext, ToolOutput
from memory.report import ToolOutcome
from memory.task_notes import TaskNotes

if TYPE_CHECKING:
    from harness.harness import Harness

__all__ = [
    "INTERRUPTED_ERROR_KIND",
    "PendingCall",
    "ResumePoint",
    "ResumedTaskRun",
    "describe_interrupted",
    "restore_session",
    "restore_task_notes",
    "resume_harness",
    "task_notes_state",
]

INTERRUPTED_ERROR_KIND = "outcome_unknown"
NOT_EXECUTED_ERROR_KIND = "not_executed"
_NOT_COUNTED = frozenset({"not_executed"})
"""Error kinds the loop does not count against the failure budget."""
_RECORDED_WITHOUT_EXECUTION = frozenset({"blocked", "invalid_arguments", "unknown_tool"})
"""Error kinds of calls that never ran but still enter Task Notes (as the loop does)."""


# ====================================================================== Task Notes


def task_notes_state(notes: TaskNotes) -> dict[str, Any]:
    """Task Notes as JSON-able data (what the store keeps at every snapshot)."""
    return {
        f.name: list(value) if isinstance(value, deque) else value
        for f in dataclasses.fields(notes)
        for value in [getattr(notes, f.name)]
    }


def restore_task_notes(data: Mapping[str, Any], *, timeline_max: int) -> TaskNotes:
    """Inverse of :func:`task_notes_state`; unknown keys (a newer format) are ignored."""
    known = {f.name for f in dataclasses.fields(TaskNotes)}
    values = {key: value for key, value in data.items() if key in known}
    values["timeline_max"] = timeline_max
    timeline = values.pop("timeline", [])
    notes = TaskNotes(**values)
    notes.timeline = deque(timeline, maxlen=timeline_max)
    return notes


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
                    NOT_EXECUTED_ERROR_KIND,
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
class ResumePoint:
    """Where an interrupted task stands, as read from the store."""

    task: StoredTask
    turn: int
    """The turn counter the resumed loop starts from (it increments before each turn)."""
    max_turns: int
    usage: Usage = field(default_factory=Usage)
    revisions: list[str] = field(default_factory=list)
    last_text: str = ""
    consecutive_failures: int = 0
    skills: list[str] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)
    pending: list[PendingCall] = field(default_factory=list)
    notes_version: int = -1
    previous_pid: int | None = None


def describe_interrupted(calls: list[dict[str, Any]]) -> str:
    """``task_resumed``'s interrupted calls for people: ``move_to (outcome unknown)``."""
    return ", ".join(
        f"{c['name']} ({'outcome unknown' if c['started'] else 'not executed'})" for c in calls
    )


# ====================================================================== building a harness


def resume_harness(
    cls: type[Harness],
    session_id: str,
    config: str | os.PathLike[str] | HarnessConfig | None,
    *,
    overrides: Any = (),
    **parts: Any,
) -> Harness:
    """See :meth:`harness.Harness.resume`."""
    store = parts.get("store")
    if config is None:
        folder = _store_folder(store, HarnessConfig())
        with RunLog(folder) as log:
            stored = log.session(session_id).config
        cfg = HarnessConfig.model_validate(apply_overrides(stored, overrides))
    elif isinstance(config, HarnessConfig):
        cfg = config
        if overrides:
            cfg = HarnessConfig.model_validate(
                apply_overrides(config.model_dump(exclude={"base_dir"}), overrides)
            )
            cfg.base_dir = config.base_dir
    else:
        cfg = load_config(config, overrides=overrides)
    folder = _store_folder(store, cfg)
    with RunLog(folder) as log:
        session = log.session(session_id)
        if session.pid != os.getpid() and process_alive(session.pid, session.host):
            raise RunStoreError(
                f"session {session_id} is still running in process {session.pid} on "
                f"{session.host}; stop it before resuming (two processes must never drive "
                "the same robot)"
            )
    harness = cls.from_config(cfg, session_id=session_id, **parts)
    try:
        with RunLog(folder) as log:
            harness._resume_point = restore_session(harness, log, previous_pid=session.pid)
    except BaseException:
        harness.close()
        raise
    return harness


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
    harness: Harness, log: RunLog, *, previous_pid: int | None = None
) -> ResumePoint | None:
    """Rebuild ``harness``'s session state from ``log``; return the interrupted task's
    resume point, or None when the session's last task had ended."""
    session_id = harness.session_id
    harness._seq = max(harness._seq, log.max_seq(session_id))
    context = harness.context
    live = log.accumulated(session_id)
    for stored in live:
        context.append(stored.item)
        state = context.states[stored.id]
        state.status = stored.state  # type: ignore[assignment]
        state.reason = stored.reason
    live_ids = {stored.id for stored in live}
    recorded = {stored.id: stored for stored in log.items(session_id)}
    for item_id, (status, reason) in log.item_states(session_id).items():
        left = recorded.get(item_id)
        if item_id in live_ids or left is None:
            continue
        context.states[item_id] = ItemState(
            status=status,  # type: ignore[arg-type]
            reason=reason,
            original_tokens=left.tokens,
        )
        context.retired[item_id] = RetiredItem(left.item.kind, left.item.task_id, left.item.turn)

    tasks = log.tasks(session_id=session_id, limit=1)
    if not tasks or tasks[0].recorded_status != "running":
        return None
    task = tasks[0]
    return _resume_point(harness, log, task, previous_pid=previous_pid)


def _resume_point(
    harness: Harness, log: RunLog, task: StoredTask, *, previous_pid: int | None
) -> ResumePoint:
    events = log.events_with_pos(task_id=task.id)
    point = ResumePoint(
        task=task,
        turn=0,
        max_turns=harness.config.run.max_turns,
        previous_pid=previous_pid,
    )
    last_turn = 0
    for _, event in events:
        last_turn = max(last_turn, event.turn)
        if isinstance(event, (TaskStartedEvent, TaskResumedEvent)):
            point.max_turns = event.max_turns
        elif isinstance(event, ModelResponseEvent):
            point.usage = point.usage + event.usage
            if event.text:
                point.last_text = event.text
        elif isinstance(event, ReplanEvent):
            point.revisions.append(event.revision)
        elif isinstance(event, SkillLoadedEvent) and event.name not in point.skills:
            point.skills.append(event.name)
        elif isinstance(event, ToolResultEvent):
            _count_result(point, event)

    items = [stored.item for stored in log.items(task.session_id, task_id=task.id)]
    decisions = [item for item in items if isinstance(item, AssistantItem)]
    answered = {item.call_id for item in items if isinstance(item, ToolResultItem)}
    started = {e.call_id for _, e in events if isinstance(e, ToolCallEvent)}
    verdicts = {e.call_id: e.verdict for _, e in events if isinstance(e, EvaluationEvent)}
    last = decisions[-1] if decisions else None
    if last is not None:
        point.pending = [
            PendingCall(call=call, started=call.id in started, verdict=verdicts.get(call.id))
            for call in last.tool_calls
            if call.id not in answered
        ]
    # A last turn that got as far as a decision is finished by answering its calls; one
    # that died before its decision (observation, compaction, the model call) runs again.
    decided = last is not None and last.turn == last_turn
    point.turn = last_turn if decided else max(0, last_turn - 1)

    harness.task_notes = _restored_notes(harness, log, task, decisions, point)
    return point


def _count_result(point: ResumePoint, event: ToolResultEvent) -> None:
    """Failure budget and tool-experience outcomes, as the loop counted them."""
    verdict = event.evaluation
    failed = event.is_error or (verdict is not None and verdict.status == "failure")
    if event.error_kind not in _NOT_COUNTED and not (
        event.error_kind == "cancelled" and not event.executed
    ):
        point.consecutive_failures = point.consecutive_failures + 1 if failed else 0
    if event.executed or event.error_kind in _RECORDED_WITHOUT_EXECUTION:
        point.outcomes.append(
            ToolOutcome(
                turn=event.turn,
                tool=event.name,
                ok=not failed,
                verdict=verdict.status if verdict else None,
                detail=(verdict.evidence if verdict else event.text)[:300],
                executed=event.executed,
            )
        )


def _restored_notes(
    harness: Harness,
    log: RunLog,
    task: StoredTask,
    decisions: list[AssistantItem],
    point: ResumePoint,
) -> TaskNotes:
    """The last structured snapshot, then what changed after it (replayed in order)."""
    timeline_max = harness.config.memory.notes_timeline_max
    snapshot = log.task_notes(task.id)
    if snapshot is None:
        notes = TaskNotes(timeline_max=timeline_max)
        notes.reset(task.instruction)
        return notes
    since, data = snapshot
    notes = restore_task_notes(data, timeline_max=timeline_max)
    point.notes_version = notes.version
    arguments = {call.id: call.arguments for item in decisions for call in item.tool_calls}
    executed = {
        e.call_id: e.executed
        for _, e in log.events_with_pos(task_id=task.id, types=["tool_result"], since_pos=since)
        if isinstance(e, ToolResultEvent)
    }
    for stored in log.items(task.session_id, task_id=task.id):
        item = stored.item
        if stored.pos <= since:
            continue
        if isinstance(item, RevisionItem):
            notes.update(add_notes=[f"instruction revised: {item.text}"])
        elif isinstance(item, ToolResultItem):
            if item.name == "update_task_notes" and not item.is_error:
                args = arguments.get(item.call_id, {})
                notes.update(
                    phase=args.get("phase"),
                    add_notes=list(args.get("add_notes") or []),
                    remove_notes=list(args.get("remove_notes") or []),
                )
            ran = executed.get(item.call_id, item.error_kind not in {"not_executed", "refused"})
            if ran or item.error_kind in _RECORDED_WITHOUT_EXECUTION:
                output = ToolOutput(
                    text=item.text, is_error=item.is_error, error_kind=item.error_kind
                )
                summary = _outcome_summary(output, item.evaluation)
                notes.record_outcome(item.turn, item.name, summary)
    return notes


# ====================================================================== the resumed task


class ResumedTaskRun(TaskRun):
    """The interrupted task, continued: same task id, turn counter, usage and notes.

    Its stream starts with ``task_resumed``, reloads the task's skills, answers the calls
    left without a result, then runs the ordinary loop from the next turn.
    """

    def __init__(
        self,
        harness: Harness,
        point: ResumePoint,
        *,
        max_turns: int | None,
        poll_replan: Callable[[], str | None] | None,
        should_cancel: Callable[[], bool] | None,
    ) -> None:
        super().__init__(
            harness,
            point.task.instruction,
            images=[],
            max_turns=max_turns or point.max_turns,
            poll_replan=poll_replan,
            should_cancel=should_cancel,
        )
        self.point = point
        self.task_id = point.task.id
        self.turn = point.turn
        self.usage = point.usage
        self.revisions = list(point.revisions)
        self.last_text = point.last_text
        self.consecutive_failures = point.consecutive_failures
        self._notes_version_sent = point.notes_version

    def _start(self) -> Iterator[EventBase]:
        h = self.h
        point = self.point
        h.store.start_task(h.session_id, self.task_id, self.instruction)
        yield self._emit(
            TaskResumedEvent(
                instruction=self.instruction,
                from_turn=self.turn + 1,
                max_turns=self.max_turns,
                interrupted_calls=[
                    {"call_id": p.call.id, "name": p.call.name, "started": p.started}
                    for p in point.pending
                ],
                previous_pid=point.previous_pid,
            )
        )
        h._prepare_task_resident()
        h._outcomes = list(point.outcomes)
        yield from self._reload_skills()
        sync_sources = getattr(h, "_sync_tool_sources", None)  # MCP servers' tool lists
        if callable(sync_sources):
            sync_sources()
        yield from self._offer_tools()
        for pending in point.pending:
            output, ran = pending.output()
            yield from self._record_result(
                pending.call, h.tools.get(pending.call.name), output, executed=ran
            )

    def _reload_skills(self) -> Iterator[EventBase]:
        """Through the ``load_skill`` tool itself, so admission and the Resident block are
        exactly what loading them the first time produced."""
        loader = self.h.tools.get("load_skill")
        if not self.point.skills:
            return
        if loader is None:
            yield self._emit(
                NotificationEvent(
                    message=f"skills {', '.join(self.point.skills)} were loaded before the "
                    "crash, but this harness has no skill library; continuing without them",
                    level="warning",
                )
            )
            return
        for name in self.point.skills:
            emitted: list[EventBase] = []
            ctx = ToolContext(task_id=self.task_id, turn=self.turn, on_event=emitted.append)
            try:
                output = loader.invoke(loader.validate({"name": name}), ctx)
                problem = output.render() if output.is_error else ""
            except Exception as exc:  # a skill that vanished must not stop the resume
                problem = f"{type(exc).__name__}: {exc}"
            for event in emitted:
                yield self._emit(event)
            if problem:
                yield self._emit(
                    NotificationEvent(
                        message=f"skill {name!r} could not be reloaded: {problem}",
                        level="warning",
                    )
                )
