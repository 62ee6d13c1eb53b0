"""The turn loop: refresh -> decide -> execute one tool -> record -> refresh.

:class:`TaskLoop` drives one task's :class:`~harness.runtime.lane.Lane` from its first turn
to its ``done`` event. ``events()`` is a plain generator run in the caller's thread. Each
phase lives in its own module and returns how the task ends (a
:class:`~harness.runtime.task.TaskEnding`) or None to go on; limits are checked in one
place (:func:`limit_reached`). Whatever happens (completion, cancellation, a limit, a model
error, an exception in a tool, the observation provider or the scene graph), a fully
consumed stream ends with exactly one ``done`` event, and the robot is left stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from harness.cancel import Cancelled
from harness.context import bounded_text
from harness.context.instructions import bound_instruction, instruction_limit_chars
from harness.errors import HarnessError
from harness.events import (
    DoneEvent,
    EpisodeEvent,
    EventBase,
    NotificationEvent,
    ReplanEvent,
    SafetyEvent,
    TaskStartedEvent,
)
from harness.messages import InstructionItem, NoticeItem, RevisionItem
from harness.runtime.lane import Lane, Steps
from harness.runtime.phases.decide import decide
from harness.runtime.phases.execute import execute
from harness.runtime.phases.refresh import offer_tools, refresh, retire_ended_tasks
from harness.runtime.task import TaskEnding
from harness.world.outcome_report import reconcile_report
from harness.world.task_check import judge_task

__all__ = ["Prologue", "TaskLoop", "start_task"]

logger = logging.getLogger(__name__)

ENDING_REPORT_MAX_CHARS = 800
"""The part of a harness-written report the task-ending notice carries (the run store keeps
the whole report)."""

Prologue = Callable[[Lane], Steps[TaskEnding | None]]
"""What runs before the first turn: :func:`start_task`, or resume's continuation."""


class TaskLoop:
    """One task from its first turn to its ``done`` event."""

    def __init__(self, lane: Lane, *, prologue: Prologue | None = None) -> None:
        self.lane = lane
        self.prologue: Prologue = prologue or start_task
        self.done: DoneEvent | None = None

    @property
    def task_id(self) -> str:
        return self.lane.state.task_id

    def events(self) -> Iterator[EventBase]:
        """The task's event stream (a plain generator; see the module docstring)."""
        finished = False
        try:
            ending = yield from self._guarded_run()
            finished = True
            for event in self._finalize(ending):
                yield self.lane.emit(event)
        finally:
            if not finished and self.done is None:
                # The consumer closed the stream: finish the side effects without events.
                ending = TaskEnding("cancelled", "the event stream was closed by its consumer")
                for _ in self._finalize(ending):
                    pass
            self.lane.session.end_task(self.lane.state)

    def _guarded_run(self) -> Steps[TaskEnding]:
        """The turns; a harness error or a bug ends the task ``failed``, never the stream."""
        try:
            return (yield from self._run())
        except Cancelled as exc:  # a phase that let the operator's cancel through
            return TaskEnding("cancelled", str(exc))
        except HarnessError as exc:
            return TaskEnding("failed", f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            logger.exception("the turn loop failed")
            return TaskEnding("failed", f"harness error: {type(exc).__name__}: {exc}")

    def _run(self) -> Steps[TaskEnding]:
        lane, state = self.lane, self.lane.state
        ending = yield from self.prologue(lane)
        while ending is None:
            ending = limit_reached(lane)
            if ending is not None:
                break
            state.turn += 1
            ending = yield from refresh(lane)
            if ending is not None:
                break
            ending = lane.cancelled("before the model call")
            if ending is not None:
                break
            decision = yield from decide(lane)
            if isinstance(decision, TaskEnding):
                ending = decision
            elif not decision.tool_calls:
                ending = yield from lane.conclude(lane, decision)
            else:
                ending = yield from execute(lane, decision)
                if ending is None:
                    ending = yield from poll_replan(lane)
        return ending

    def _finalize(self, ending: TaskEnding) -> Iterator[EventBase]:
        """Side effects first, events after: closing the stream mid-way loses nothing.

        The robot is stopped, then the task-level check judges the goal (on a stopped
        robot, once), then memory consolidates; the operator's cancel wins over a model
        call in either.
        """
        if self.done is not None:
            return
        lane, session, state = self.lane, self.lane.session, self.lane.state
        problems = session.stop_robot()
        ending = robot_ending(ending, problems)
        report = ending.report or fallback_report(lane, ending)
        if not ending.report:
            record_ending(lane, ending, report)
        outcome, evidence = judge_task(
            lane.task_check,
            status=ending.status,
            report=report,
            instruction=state.instruction,
            revisions=state.revisions,
            cancelled=lane.should_cancel,
        )
        report = reconcile_report(report, outcome, evidence, status=ending.status)
        if problems:
            report += "\n\nWARNING: the robot may not be stopped: " + "; ".join(
                problem.reason for problem in problems
            )
        consolidation = session.memory_link.consolidate_memory(
            state, status=ending.status, report=report, cancelled=lane.should_cancel
        )
        state.ending = ending
        self.done = DoneEvent(
            status=ending.status,
            termination_reason=ending.reason,
            report=report,
            turns=state.turn,
            usage=state.usage,
            outcome=outcome,
            evidence=evidence,
            robot_stopped=session.robot.stopped(problems),
        )
        session.end_task_resident(lane.context)
        session.store.end_task(
            state.task_id,
            status=ending.status,
            reason=ending.reason,
            report=report,
            turns=state.turn,
            usage=state.usage.model_dump(),
            outcome=outcome,
            evidence=evidence.model_dump(mode="json"),
        )
        for episode in lane.context.episodes.close_task(state.task_id, turn=state.turn):
            yield EpisodeEvent(
                status="abandoned",
                name=episode.name,
                kind=episode.kind,
                depends_on=list(episode.depends_on),
                conclusion=episode.conclusion,
            )
        if consolidation is not None:
            yield consolidation
        yield from problems
        yield self.done


# ====================================================================== phases of a task


def start_task(lane: Lane) -> Steps[TaskEnding | None]:
    """A new task: Task Notes reset, Resident read, tools offered, instruction recorded."""
    session, state = lane.session, lane.state
    state.notes.reset(state.instruction)
    session.store.start_task(session.session_id, state.task_id, state.instruction)
    session.record_world_state(state)
    yield lane.emit(
        TaskStartedEvent(
            instruction=state.instruction, max_turns=state.max_turns, images=len(state.images)
        )
    )
    state.add_usage(session.prepare_resident(lane.should_cancel))
    session.tooling.sync_tool_sources()
    for line in session.tooling.unavailable_sources():
        yield lane.emit(NotificationEvent(message=session.redactor.text(line), level="warning"))
    if any(getattr(t, "optional", None) == "episodes" for t in lane.tools.visible()):
        ledger = lane.context.episode_ledger
        state.episode_tools = ledger.offer()
        if state.episode_tools:
            ledger.tasks_offered += 1
        else:
            yield lane.emit(
                NotificationEvent(
                    message=f"episode tools not offered in this task: {ledger.describe()}"
                )
            )
    ending = yield from offer_tools(lane)
    yield from retire_ended_tasks(lane)
    for image in state.images:
        session.store.put_image(image)
    instruction = InstructionItem(
        text=state.instruction,
        images=[image.ref() for image in state.images],
        task_id=state.task_id,
    )
    lane.record(
        bound_instruction(
            instruction,
            store=session.store,
            max_chars=instruction_limit_chars(lane.context.budget),
        )
    )
    lane.context.add_transient_images(state.images)
    return ending


def limit_reached(lane: Lane) -> TaskEnding | None:
    """Every limit, checked in one place before each turn."""
    state = lane.state
    ending = lane.cancelled("before the next turn")
    if ending is not None:
        return ending
    if state.turn >= state.max_turns:
        return TaskEnding("max_turns", f"reached max_turns={state.max_turns}")
    budget = lane.session.config.run.failure_budget
    if state.consecutive_failures >= budget:
        return TaskEnding(
            "failure_budget",
            f"{state.consecutive_failures} consecutive failed tool turns (failure_budget={budget})",
        )
    if state.max_tokens is not None and state.tokens_spent >= state.max_tokens:
        return TaskEnding(
            "max_tokens", f"spent {state.tokens_spent} tokens (max_tokens={state.max_tokens})"
        )
    return None


def poll_replan(lane: Lane) -> Steps[TaskEnding | None]:
    """An instruction revision from the operator, taken between turns."""
    if lane.poll_replan is None:
        return None
    try:
        revision = lane.poll_replan()
    except Exception as exc:
        return TaskEnding("failed", f"poll_replan raised {type(exc).__name__}: {exc}")
    if revision is None or not str(revision).strip():
        return None
    revision = str(revision).strip()
    lane.state.revise(revision)
    item = RevisionItem(text=revision, task_id=lane.state.task_id, turn=lane.state.turn)
    limit = instruction_limit_chars(lane.context.budget)
    lane.record(bound_instruction(item, store=lane.session.store, max_chars=limit))
    yield lane.emit(ReplanEvent(revision=revision))
    return None


def record_ending(lane: Lane, ending: TaskEnding, report: str) -> None:
    """When the harness, not the model's answer, ended the task, say so in Accumulated:
    the operator sees this report, and a later task in the session must too."""
    clean = lane.session.redactor.text(report)  # before the bound, never after
    text, _ = bounded_text(clean, ENDING_REPORT_MAX_CHARS, address=None)
    try:
        lane.record(NoticeItem(text=f"Task {lane.state.task_id} report (by the harness): {text}"))
    except HarnessError as exc:  # a store that cannot record any more (closed, failing)
        logger.info("the task-ending notice could not be recorded: %s", exc)  # end_task says it


def robot_ending(ending: TaskEnding, problems: list[SafetyEvent]) -> TaskEnding:
    """A task whose physical command never returned did not end well, whatever the model
    said (an operator's cancel still stands)."""
    lost = [p for p in problems if p.problem == "command_not_returned"]
    if not lost or ending.status in ("cancelled", "failed"):
        return ending
    reason = lost[0].reason
    return TaskEnding("failed", reason, report=ending.report)


def fallback_report(lane: Lane, ending: TaskEnding) -> str:
    """The report when the harness, not the model, ended the task."""
    text = f"Task ended ({ending.status}): {ending.reason}."
    if lane.state.last_text:
        text += f" Last model text: {lane.state.last_text}"
    return text
