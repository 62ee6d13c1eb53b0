"""Sub-agents: a child task with a contract, narrowed tools and a structured handoff.

Work whose intermediate output would flood the parent's context (twenty looks around a
shelf for one mug) runs as a **child lane** of the same session, and the parent gets back
one structured :class:`Handoff` instead of the trace:

- the child works in a child view of the parent's context (:meth:`Context.child`): its
  request starts with the parent's Resident blocks, byte for byte, so the provider's
  prompt cache serves it, and its own Accumulated history starts with the goal and the
  contract (the answer's JSON Schema);
- it may call only the tools it was given (by name or shell-style pattern), plus the
  harness's bookkeeping tools (:data:`BOOKKEEPING_TOOLS`); a physical tool only when
  ``subagents.physical`` is true, and then through the same gates (safety envelope
  included) as the parent's calls. Anything else is ``unknown_tool`` (or, for a withheld
  physical tool, ``blocked`` with the reason);
- it refuses to start when its model's context window is unknown (the main model's rule);
- it runs the ordinary :class:`~harness.runtime.loop.TaskLoop` while the parent's
  ``delegate`` call waits (the parent still runs one tool per turn): the parent's cancel
  reaches it through the call's cancellation, and the operator's revisions reach both;
- its final answer (no tool call) must match the schema; a mismatch earns one repair
  round with the validation error, a second mismatch ends it ``failed`` with the error;
- whatever ends it (an answer, a provider error, a budget, a cancel, a bug), the parent
  receives a bounded handoff with a status, and its own task goes on.

Every event, item and exact output of the child is recorded as it happens under the
child's own lane id, linked to the parent's turn (``lane_started`` first, ``handoff``
last). The full handoff is archived at ``archive://<lane>/handoff``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.context import Context
from harness.context.compaction.archive import archive_address
from harness.context.compaction.compactor import build_compactor
from harness.context.instructions import bound_instruction, instruction_limit_chars
from harness.context.window import lane_budget
from harness.errors import ConfigError
from harness.events import (
    DoneEvent,
    EventBase,
    HandoffEvent,
    LaneStartedEvent,
    ProgressEvent,
)
from harness.messages import InstructionItem, ModelResponse, NoticeItem, new_id
from harness.prompts import SUBAGENT_CONTRACT, SUBAGENT_REPAIR
from harness.protocols import LaneLink
from harness.runtime.delegation.contract import (
    BOOKKEEPING_TOOLS,
    DELEGATE_TOOL,
    HANDOFF_SCHEMA,
    Contract,
    DelegateArgs,
    SubagentRefused,
    contract_of,
    narrow_tools,
)
from harness.runtime.delegation.handoff import (
    Handoff,
    LaneRecord,
    handoff_of,
    parse_answer,
    refused_handoff,
)
from harness.runtime.lane import Lane, Steps
from harness.runtime.loop import Prologue, TaskLoop
from harness.runtime.phases.refresh import offer_tools
from harness.runtime.session import Session
from harness.runtime.task import TaskEnding, TaskState
from harness.tokens import TokenEstimator
from harness.tools import Tool, ToolContext, ToolOutput

__all__ = [
    "BOOKKEEPING_TOOLS",
    "DELEGATE_TOOL",
    "HANDOFF_SCHEMA",
    "SUBAGENT_GRACE_S",
    "AnswerCheck",
    "ChildLane",
    "Contract",
    "DelegateArgs",
    "Handoff",
    "LaneRecord",
    "SubagentRefused",
    "build_child",
    "cancelled_with",
    "contract_of",
    "delegate_tool",
    "handoff_of",
    "handoff_output",
    "narrow_tools",
    "parse_answer",
    "refused_handoff",
    "run_child",
    "run_subagent",
]

logger = logging.getLogger(__name__)

SUBAGENT_GRACE_S = 6.0
"""How long a cancelled ``delegate`` call waits for its child to stop and hand back: the
child sees the cancel itself and stops under the ordinary rules (a physical call of its
own gets ``GRACE_S`` to stop the motion), so this is that grace plus a margin."""


# ====================================================================== running a child


class AnswerCheck:
    """A child lane's :data:`~harness.runtime.lane.Conclude`: its final answer must match
    the schema; the first mismatch earns one repair round (a turn beyond ``max_turns``),
    the second ends the child ``failed`` with the error."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self.answer: dict[str, Any] | None = None
        self.repaired = False

    def __call__(self, lane: Lane, response: ModelResponse) -> Steps[TaskEnding | None]:
        answer, error = parse_answer(response.text, self.schema)
        if answer is not None:
            self.answer = answer
            return TaskEnding("completed", "the sub-agent answered", report=response.text)
        if self.repaired:
            return TaskEnding(
                "failed",
                f"the answer did not match the output schema after a repair round: {error}",
                report=response.text,
            )
        self.repaired = True
        lane.state.max_turns = max(lane.state.max_turns, lane.state.turn + 1)
        lane.record(NoticeItem(text=SUBAGENT_REPAIR.format(error=error)))
        yield lane.emit(
            ProgressEvent(
                text=f"the answer does not match the output schema ({error}); one repair round",
                source="harness",
            )
        )
        return None


def lane_start(contract: Contract, withheld: Mapping[str, str], *, model: str) -> Prologue:
    """A child's first steps: its lane recorded with the parent link, ``lane_started``,
    its tools offered, its goal and contract as the start of its history."""

    def prologue(lane: Lane) -> Steps[TaskEnding | None]:
        session, state = lane.session, lane.state
        state.notes.reset(state.instruction)
        session.store.start_task(
            session.session_id,
            state.task_id,
            state.instruction,
            lane=state.lane,
            parent=state.parent,
        )
        link = state.parent
        yield lane.emit(
            LaneStartedEvent(
                goal=state.instruction,
                parent_task_id=link.task_id if link else "",
                parent_call_id=link.call_id if link else "",
                parent_turn=link.turn if link else 0,
                tools=lane.tools.names(visible_only=True),
                withheld=dict(withheld),
                max_turns=state.max_turns,
                max_tokens=state.max_tokens,
                model=model,
                output_schema=dict(contract.output_schema) if contract.output_schema else None,
            )
        )
        ending = yield from offer_tools(lane)
        goal = InstructionItem(text=state.instruction, task_id=state.task_id)
        limit = instruction_limit_chars(lane.context.budget)
        lane.record(bound_instruction(goal, store=session.store, max_chars=limit))
        lane.record(NoticeItem(text=contract_notice(contract, withheld)))
        return ending

    return prologue


def contract_notice(contract: Contract, withheld: Mapping[str, str]) -> str:
    if withheld:
        names = ", ".join(sorted(withheld))
        note = f"these tools you asked for are withheld: {names} ({next(iter(withheld.values()))})."
    else:
        note = "no other tool can be called."
    schema = json.dumps(contract.schema, indent=1, sort_keys=True)
    return SUBAGENT_CONTRACT.format(withheld=note, schema=schema)


@dataclass
class ChildLane:
    """A child lane ready to run, with what its handoff is built from."""

    lane: Lane
    contract: Contract
    check: AnswerCheck
    withheld: dict[str, str]
    parent: Lane | None = None
    record: LaneRecord = field(default_factory=LaneRecord)


def build_child(
    session: Session,
    contract: Contract,
    *,
    parent: Lane | None,
    link: LaneLink | None,
    should_cancel: Callable[[], bool],
    poll_replan: Callable[[], str | None] | None,
    state: TaskState | None = None,
    base_context: Context | None = None,
) -> ChildLane:
    """The child's lane: narrowed tools, a child view of the parent's context, its model
    and budget. Raises :class:`SubagentRefused` when it cannot start. ``state`` and
    ``base_context`` are given by resume (the lane as it was recorded)."""
    available = parent.tools if parent is not None else session.tools
    narrowed = narrow_tools(
        available, contract.tools, physical_allowed=session.config.subagents.physical
    )
    model, model_config, context = child_model_and_context(
        session, base_context or (parent.context if parent is not None else session.context)
    )
    if state is None:
        lane_id = new_id("lane")
        state = TaskState(
            instruction=contract.goal,
            max_turns=contract.max_turns,
            notes=session.new_task_notes(),
            task_id=lane_id,
            lane=lane_id,
            parent=link,
            max_tokens=contract.max_tokens,
        )
    check = AnswerCheck(contract.schema)
    if parent is not None and parent.poll_replan is not None:
        poll_replan = parent.relay_revision
    lane = Lane(
        session,
        state,
        should_cancel=should_cancel,
        poll_replan=poll_replan,
        tools=narrowed.tools,
        context=context,
        model=model,
        model_config=model_config,
        compactor=build_compactor(
            session.config,
            summarizer=session.compaction_model,
            store=session.store,
            redactor=session.redactor,
        ),
        refusals=narrowed.withheld,
        conclude=check,
    )
    return ChildLane(lane, contract, check, narrowed.withheld, parent)


def child_model_and_context(session: Session, base: Context) -> tuple[Any, Any, Context]:
    """The child's model, its settings and its child view of ``base``: the main model
    shares the parent's budget and estimator; another model brings its own window (which
    must be known) and estimator."""
    model = session.subagent_model
    if model is None:
        return session.model, session.config.model, base.child()
    model_config = session.subagent_model_config or session.config.model
    try:
        budget = lane_budget(session.config, model, model_config.context_window)
    except ConfigError as exc:
        raise SubagentRefused(str(exc)) from None
    estimator = TokenEstimator(image_cost=getattr(model, "image_cost", "generic"))
    return model, model_config, base.child(budget=budget, estimator=estimator)


def run_child(
    child: ChildLane, *, emit: Callable[[EventBase], None], prologue: Prologue | None = None
) -> Handoff:
    """Run a built child lane to its handoff; every event but its ``done`` goes to
    ``emit`` (the parent's stream has one ``done``: its own). Nothing raised in the child
    reaches the caller: a failure is a handoff with a status."""
    lane, session = child.lane, child.lane.session
    state = lane.state
    loop = TaskLoop(
        lane,
        prologue=prologue or lane_start(child.contract, child.withheld, model=lane.model.name),
    )
    session.open_lane(lane)
    ending: TaskEnding
    try:
        for event in loop.events():
            child.record.watch(event)
            if not isinstance(event, DoneEvent):
                emit(event)
        ending = state.ending or TaskEnding("failed", "the sub-agent ended without an ending")
    except Exception as exc:  # contained: the parent's task goes on
        logger.exception("sub-agent lane %s failed", state.task_id)
        reason = f"harness error in the sub-agent: {type(exc).__name__}: {exc}"
        ending = TaskEnding("failed", reason)
    finally:
        session.close_lane(state)
        if child.parent is not None:  # what the child spent is its parent task's cost
            child.parent.state.add_usage(state.usage)
    handoff = handoff_of(
        ending,
        child.check.answer,
        lane=state.task_id,
        turns=state.turn,
        tokens=state.tokens_spent,
        contract=child.contract,
        record=child.record,
        withheld=child.withheld,
        archived=lambda address: session.read_archive(address) is not None,
        report=loop.done.report if loop.done is not None else "",
    )
    return finish_handoff(lane, handoff, emit=emit)


def finish_handoff(lane: Lane, handoff: Handoff, *, emit: Callable[[EventBase], None]) -> Handoff:
    """Archive the whole handoff at ``archive://<lane>/handoff`` and record the
    ``handoff`` event (the lane's last); a store failure here is logged, not raised."""
    session, state = lane.session, lane.state
    address = archive_address(state.task_id, "handoff")
    text = handoff.model_dump_json(indent=1, exclude_none=True)
    link = state.parent
    try:
        session.store.archive_put(
            address, text, task_id=state.task_id, call_id="handoff", tool=DELEGATE_TOOL
        )
        emit(
            lane.emit(
                HandoffEvent(
                    parent_task_id=link.task_id if link else "",
                    parent_call_id=link.call_id if link else "",
                    status=handoff.status,
                    handoff=handoff.model_dump(mode="json", exclude_none=True),
                )
            )
        )
    except Exception:
        logger.exception("the handoff of lane %s could not be recorded", state.task_id)
    return handoff


def run_subagent(
    session: Session,
    contract: Contract,
    *,
    parent: Lane | None,
    link: LaneLink | None,
    should_cancel: Callable[[], bool],
    poll_replan: Callable[[], str | None] | None = None,
    emit: Callable[[EventBase], None],
) -> Handoff:
    """Build and run one child lane; its handoff (``failed`` if it could not start)."""
    try:
        child = build_child(
            session,
            contract,
            parent=parent,
            link=link,
            should_cancel=should_cancel,
            poll_replan=poll_replan,
        )
    except SubagentRefused as exc:
        if exc.bad_arguments:
            raise
        return refused_handoff(str(exc))
    return run_child(child, emit=emit)


# ====================================================================== the tool


def delegate_tool(session: Session) -> Tool:
    """The ``delegate`` built-in: runs a child lane while this turn waits for it."""
    cfg = session.config.subagents
    physical = (
        "It may be given physical tools (they pass the safety envelope)."
        if cfg.physical
        else "It cannot be given physical tools: do motions yourself."
    )
    tool = Tool(
        DELEGATE_TOOL,
        "Hand a self-contained piece of work (a search, an inspection, a lookup that needs "
        "many tool calls) to a sub-agent with some of your tools, and get back one "
        "structured result (status, findings with archive:// evidence, unresolved issues) "
        "instead of its whole trace. Your turn waits until it is done. Give it a precise "
        f"goal that says what to report. {physical}",
        lambda ctx, **kw: _delegate(session, ctx, DelegateArgs.model_validate(kw)),
        input_model=DelegateArgs,
        source="builtin",
        optional="sub-agents",
        timeout_s=float("inf"),  # bounded by the child's own turns, tokens and timeouts
    )
    tool.cancel_grace_s = SUBAGENT_GRACE_S  # type: ignore[attr-defined]
    return tool


def _delegate(session: Session, ctx: ToolContext, args: DelegateArgs) -> ToolOutput:
    parent = session.lane(ctx.task_id)
    try:
        contract = contract_of(session, args)
        handoff = run_subagent(
            session,
            contract,
            parent=parent,
            link=LaneLink(task_id=ctx.task_id, call_id=ctx.call_id, turn=ctx.turn),
            should_cancel=cancelled_with(parent, ctx),
            emit=ctx.emit,
        )
    except SubagentRefused as exc:
        return ToolOutput.error(str(exc), "invalid_arguments", executed=False)
    return handoff_output(session, handoff)


def cancelled_with(parent: Lane | None, ctx: ToolContext) -> Callable[[], bool]:
    """A child's cancel: its call's (a timeout, the parent's watcher) or, read directly so
    that no step of the child runs after it, the operator's cancel of the parent."""
    if parent is None:
        return lambda: ctx.cancelled
    return lambda: ctx.cancelled or parent.should_cancel()


def handoff_output(session: Session, handoff: Handoff) -> ToolOutput:
    """The ``delegate`` result the parent reads: the bounded handoff."""
    address = archive_address(handoff.lane, "handoff") if handoff.lane else None
    handoff = session.redactor.model(handoff)  # before any of it is cut to fit
    text = handoff.bounded(session.config.subagents.handoff_max_chars, archive=address)
    if handoff.ok:
        return ToolOutput(text=text)
    return ToolOutput.error(text, handoff.error_kind() or "subagent_failed")
