"""The resumed task: what runs instead of a task's start after a crash.

:func:`resume_prologue` is the prologue the ordinary loop runs for a task rebuilt by
:mod:`harness.runtime.resume.rebuild`: ``task_resumed``, the world made to agree with the context
(:func:`restore_world`: a simulator put back into its recorded state, a real robot
re-observed), the task's skills reloaded, its tools offered, and each call left without a
result answered: "interrupted, outcome unknown" for a tool that had started (it is never
run again: repeating a motion whose first attempt may have completed is how robots hit
things), or, for a ``delegate`` call whose sub-agent was working, the handoff of that
sub-agent woken as itself.
"""

from __future__ import annotations

from typing import Literal

from harness.events import (
    EventBase,
    NotificationEvent,
    TaskResumedEvent,
)
from harness.messages import NoticeItem
from harness.prompts import SUBAGENT_FINISH_UP
from harness.runtime.delegation.delegate import (
    DELEGATE_TOOL,
    SUBAGENT_GRACE_S,
    build_child,
    cancelled_with,
    handoff_output,
    run_child,
)
from harness.runtime.delegation.recovery import (
    NEVER_STARTED,
)
from harness.runtime.lane import Lane, Steps
from harness.runtime.loop import Prologue
from harness.runtime.phases.record import record_result
from harness.runtime.phases.refresh import offer_tools
from harness.runtime.phases.tool_thread import run_tool
from harness.runtime.resume.rebuild import (
    PendingCall,
    ResumePoint,
    WakePlan,
)
from harness.runtime.session import Session
from harness.runtime.task import TaskEnding
from harness.tools import Tool, ToolContext, ToolOutput

__all__ = ["restore_world", "resume_prologue"]


def resume_prologue(point: ResumePoint) -> Prologue:
    """Instead of a task's start: ``task_resumed``, the task's Resident and skills again,
    its tools offered, and the calls left without a result answered."""

    def prologue(lane: Lane) -> Steps[TaskEnding | None]:
        session, state = lane.session, lane.state
        session.store.start_task(session.session_id, state.task_id, state.instruction)
        if point.inherited_world is not None:
            (world, world_turn), note = point.inherited_world, None
        else:
            world, world_turn, note = restore_world(session, point)
        for plan in point.wake.values():
            plan.point.inherited_world = (world, world_turn)
        yield lane.emit(
            TaskResumedEvent(
                instruction=state.instruction,
                from_turn=state.turn + 1,
                max_turns=state.max_turns,
                interrupted_calls=[
                    {"call_id": p.call.id, "name": p.call.name, "started": p.started}
                    for p in point.pending
                ],
                previous_pid=point.previous_pid,
                world=world,
                world_turn=world_turn,
            )
        )
        if note is not None:
            yield lane.emit(note)
        if point.recovery is not None:
            yield lane.emit(point.recovery)
        state.add_usage(session.prepare_resident(lane.should_cancel))
        yield from _reload_skills(lane, point.skills)
        session.tooling.sync_tool_sources()
        ending = yield from offer_tools(lane)
        for pending in point.pending:
            answered = yield from _answer_delegate(lane, point, pending)
            if answered is None:
                output, ran = pending.output()
                tool = lane.tools.get(pending.call.name)
                yield from record_result(lane, pending.call, tool, output, executed=ran)
            elif answered is not True:
                return answered
        return ending

    return prologue


def _answer_delegate(
    lane: Lane, point: ResumePoint, pending: PendingCall
) -> Steps[TaskEnding | bool | None]:
    """Answer a pending ``delegate`` call from its lane: woken to finish, its recorded
    handoff, or "not executed" when it never started. True when answered, an ending if
    the operator cancelled the woken lane, None for any other call."""
    call = pending.call
    tool = lane.tools.get(call.name)
    plan = point.wake.get(call.id)
    if plan is not None:
        outcome = yield from lane.emit_all(
            run_tool(
                _waking(lane, plan),
                {},
                {"call_id": call.id, "task_id": lane.state.task_id, "turn": lane.state.turn},
                timeout_s=float("inf"),
                should_cancel=lane.should_cancel,
                interrupt=None,
            )
        )
        yield from record_result(
            lane, call, tool, outcome.output, executed=True, duration_s=outcome.duration_s
        )
        if outcome.cancelled:
            return TaskEnding("cancelled", "cancelled by the operator while a sub-agent resumed")
        return True
    if call.id in point.deliver:
        output = handoff_output(lane.session, point.deliver[call.id])
        yield from record_result(lane, call, tool, output, executed=True)
        return True
    if call.id in point.never_started:
        output = ToolOutput.error(NEVER_STARTED, "not_executed", executed=False)
        yield from record_result(lane, call, tool, output, executed=False)
        return True
    return None


def _waking(parent: Lane, plan: WakePlan) -> Tool:
    """A one-off tool whose run is the woken lane (so it streams, is cancelled and is
    waited for exactly like a ``delegate`` call)."""
    session = parent.session

    def wake(ctx: ToolContext) -> ToolOutput:
        child = build_child(
            session,
            plan.contract,
            parent=parent,
            link=plan.point.state.parent,
            should_cancel=cancelled_with(parent, ctx),
            poll_replan=None,
            state=plan.point.state,
        )
        plan.context.apply(child.lane.context)
        child.check.repaired = plan.repaired
        resumed = resume_prologue(plan.point)

        def finish_up(lane: Lane) -> Steps[TaskEnding | None]:
            ending = yield from resumed(lane)
            lane.state.max_turns = max(lane.state.max_turns, lane.state.turn + 1)
            lane.record(NoticeItem(text=SUBAGENT_FINISH_UP))
            return ending

        return handoff_output(session, run_child(child, emit=ctx.emit, prologue=finish_up))

    tool = Tool(DELEGATE_TOOL, "a sub-agent lane resumed after a crash", wake, source="builtin")
    tool.cancel_grace_s = SUBAGENT_GRACE_S  # type: ignore[attr-defined]
    return tool


def restore_world(
    session: Session, point: ResumePoint
) -> tuple[Literal["restored", "re_observed", "none"], int | None, NotificationEvent | None]:
    """Put the world back as it was recorded (a simulator), or say that it will be
    re-observed (a real robot, or a simulator whose record cannot be used), so the world
    and the restored context agree."""
    driver = session.driver
    if driver is None:
        return "none", None, None
    name = type(driver).__name__
    restore = getattr(driver, "restore", None)
    if not callable(restore):
        return (
            "re_observed",
            None,
            NotificationEvent(
                message=f"resumed on {name}: a real robot's state cannot be restored from the "
                "record; it is re-observed before the next model call, and an interrupted "
                "motion's outcome is unknown",
                level="warning",
            ),
        )
    if point.world is None:
        problem = "no world state was recorded in this session"
    else:
        task_id, turn, world = point.world
        try:
            restore(world)
        except Exception as exc:
            problem = f"the recorded world state could not be restored ({exc})"
        else:
            where = "" if task_id == point.state.task_id else f" of task {task_id}"
            return (
                "restored",
                turn,
                NotificationEvent(
                    message=f"the simulated world was restored to its state after turn {turn}"
                    f"{where} (object poses, gripper, held object)",
                ),
            )
    return (
        "re_observed",
        None,
        NotificationEvent(
            message=f"{problem}; {name} starts from its initial scene and is re-observed "
            "before the next model call",
            level="warning",
        ),
    )


def _reload_skills(lane: Lane, skills: list[str]) -> Steps[None]:
    """Through the ``load_skill`` tool itself, so admission and the Resident block are
    exactly what loading them the first time produced."""
    if not skills:
        return
    loader = lane.tools.get("load_skill")
    if loader is None:
        yield lane.emit(
            NotificationEvent(
                message=f"skills {', '.join(skills)} were loaded before the crash, but this "
                "harness has no skill library; continuing without them",
                level="warning",
            )
        )
        return
    for name in skills:
        emitted: list[EventBase] = []
        ctx = ToolContext(task_id=lane.state.task_id, turn=lane.state.turn, on_event=emitted.append)
        try:
            output = loader.invoke(loader.validate({"name": name}), ctx)
            problem = output.render() if output.is_error else ""
        except Exception as exc:  # a skill that vanished must not stop the resume
            problem = f"{type(exc).__name__}: {exc}"
        for event in emitted:
            yield lane.emit(event)
        if problem:
            yield lane.emit(
                NotificationEvent(
                    message=f"skill {name!r} could not be reloaded: {problem}", level="warning"
                )
            )
