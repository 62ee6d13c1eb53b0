"""Sub-agent lanes found when a session is resumed: woken, repaired, or abandoned.

A crash can leave a session's lanes in any state their parent's turn had reached. Before
the interrupted task continues, :func:`inspect_lanes` reads every lane of the session back
from the run store and decides, for each, what makes the record consistent again:

- **wake** a lane that was working for the interrupted task's pending ``delegate`` call:
  it finishes as itself (its own history, plus a "finish up" notice) and its handoff
  answers the call;
- **repair** a pending ``delegate`` call whose lane had already ended (its recorded
  handoff, or one rebuilt from its ``done`` event, answers the call: nothing runs again),
  and a pending call whose lane never started (answered "not executed");
- **abandon** a lane nothing can use any more: its parent task ended, is not recorded, or
  has no ``delegate`` call of that id, or its call was already answered, or it was started
  directly by a control script that is gone. The lane is closed as ``failed`` with the
  reason (a ``done`` event in its own lane).

The counts go into one ``recovery`` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.events import (
    DoneEvent,
    HandoffEvent,
    LaneStartedEvent,
    RecoveryEvent,
)
from harness.messages import AssistantItem
from harness.runtime.delegation.delegate import (
    Contract,
    Handoff,
    LaneRecord,
    handoff_of,
    parse_answer,
)
from harness.runtime.session import Session
from harness.runtime.task import TaskEnding
from harness.store.reader import RunLog, StoredTask

__all__ = ["LaneFindings", "abandon_lane", "contract_of_lane", "inspect_lanes"]

NEVER_STARTED = (
    "not executed: the harness stopped (crash or power loss) before the sub-agent started; "
    "nothing was done. Call delegate again if it is still needed."
)


@dataclass
class LaneFindings:
    """What resume does with each lane of the session."""

    wake: dict[str, StoredTask] = field(default_factory=dict)
    """Parent call id -> the lane that finishes as itself."""
    deliver: dict[str, Handoff] = field(default_factory=dict)
    """Parent call id -> the handoff its ended lane recorded (or its ``done`` implies)."""
    never_started: set[str] = field(default_factory=set)
    """Pending ``delegate`` calls that had started but whose lane was never recorded."""
    abandon: list[tuple[StoredTask, str]] = field(default_factory=list)

    def event(self) -> RecoveryEvent | None:
        """The ``recovery`` event (None when every lane was consistent)."""
        details = [f"woke {lane.id} for call {call}" for call, lane in self.wake.items()]
        details += [f"answered call {call} with its ended lane's handoff" for call in self.deliver]
        details += [f"answered call {call}: its lane never started" for call in self.never_started]
        details += [f"abandoned {lane.id}: {why}" for lane, why in self.abandon]
        if not details:
            return None
        return RecoveryEvent(
            resumed=len(self.wake),
            repaired=len(self.deliver) + len(self.never_started),
            abandoned=len(self.abandon),
            details=details,
        )


def inspect_lanes(
    log: RunLog,
    session_id: str,
    *,
    interrupted: StoredTask | None,
    pending_delegates: dict[str, bool],
) -> LaneFindings:
    """Decide what to do with every lane of the session (see the module docstring).

    ``interrupted`` is the task resume continues (None: the last task had ended);
    ``pending_delegates`` maps its unanswered ``delegate`` calls to whether each had
    started (its ``tool_call`` event was recorded)."""
    findings = LaneFindings()
    decided = _decided_calls(log, session_id, interrupted)
    lanes = [
        *log.lanes(session_id=session_id),
        *(t for t in log.tasks(session_id=session_id) if t.is_lane),
    ]
    claimed: set[str] = set()
    for lane in lanes:
        running = lane.recorded_status == "running"
        call = lane.parent_call_id or ""
        if lane.parent_task_id is None:
            if running:
                findings.abandon.append((lane, "started directly by a control script"))
            continue
        if interrupted is None or lane.parent_task_id != interrupted.id:
            if running:
                known = lane.parent_task_id in decided
                findings.abandon.append(
                    (lane, "its parent task had ended" if known else "its parent task is gone")
                )
            continue
        if call not in decided.get(interrupted.id, set()):
            if running:
                findings.abandon.append((lane, f"its parent has no delegate call {call}"))
            continue
        if call not in pending_delegates or call in claimed:
            if running:
                findings.abandon.append((lane, f"its parent's call {call} was already answered"))
            continue
        claimed.add(call)
        if running:
            findings.wake[call] = lane
        else:
            findings.deliver[call] = recorded_handoff(log, lane)
    for call, started in pending_delegates.items():
        if started and call not in claimed:
            findings.never_started.add(call)
    return findings


def _decided_calls(
    log: RunLog, session_id: str, interrupted: StoredTask | None
) -> dict[str, set[str]]:
    """Task id -> the ids of the calls its decisions asked for (every top-level task of
    the session is a key, so a lane's parent that is missing is known to be gone)."""
    calls: dict[str, set[str]] = {task.id: set() for task in log.tasks(session_id=session_id)}
    for stored in log.items(session_id, lane=""):
        item = stored.item
        if isinstance(item, AssistantItem) and item.task_id in calls:
            calls[item.task_id].update(call.id for call in item.tool_calls)
    return calls


def contract_of_lane(log: RunLog, lane: StoredTask) -> tuple[Contract, LaneStartedEvent | None]:
    """The contract a lane was started with, read back from its ``lane_started`` event."""
    started = log.events(task_id=lane.id, types=["lane_started"])
    first = started[0] if started else None
    if not isinstance(first, LaneStartedEvent):
        return Contract(goal=lane.instruction), None
    return (
        Contract(
            goal=first.goal,
            tools=tuple(first.tools),
            max_turns=first.max_turns,
            max_tokens=first.max_tokens or Contract.max_tokens,
            output_schema=first.output_schema,
        ),
        first,
    )


def recorded_handoff(log: RunLog, lane: StoredTask) -> Handoff:
    """The handoff an ended lane recorded; rebuilt from its ``done`` event (the same
    function that built it live) when the process died before the ``handoff`` event."""
    events = log.events(task_id=lane.id, types=["handoff", "done", "model_error", "model_response"])
    handoffs = [e for e in events if isinstance(e, HandoffEvent)]
    if handoffs:
        return Handoff.model_validate(handoffs[-1].handoff)
    contract, _ = contract_of_lane(log, lane)
    done = next((e for e in reversed(events) if isinstance(e, DoneEvent)), None)
    if done is None:
        ending = TaskEnding("failed", lane.reason or "the sub-agent ended without a record")
    else:
        ending = TaskEnding(done.status, done.termination_reason, report=done.report)
    answer = None
    if ending.status == "completed":
        answer = parse_answer(ending.report, contract.schema)[0]
    record = LaneRecord()
    for event in events:
        record.watch(event)
    usage = lane.usage
    return handoff_of(
        ending,
        answer,
        lane=lane.id,
        turns=lane.turns,
        tokens=usage.prompt_tokens + usage.output_tokens,
        contract=contract,
        record=record,
        withheld={},
        archived=lambda address: log.archive(address) is not None,
        report=ending.report,
    )


def abandon_lane(session: Session, lane: StoredTask, reason: str) -> None:
    """Close a lane nothing can use: ``failed`` in the store, with a ``done`` event in its
    own lane saying why."""
    why = f"abandoned at resume: {reason}"
    session.emit(
        DoneEvent(status="failed", termination_reason=why, turns=lane.turns, usage=lane.usage),
        task_id=lane.id,
        turn=lane.turns,
    )
    session.store.end_task(
        lane.id,
        status="failed",
        reason=why,
        report="",
        turns=lane.turns,
        usage=lane.usage.model_dump(),
    )
