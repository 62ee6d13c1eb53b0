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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from harness.context import Context
from harness.context.archive import archive_address
from harness.context.compactor import build_compactor
from harness.context.instructions import bound_instruction, instruction_limit_chars
from harness.context.window import lane_budget
from harness.errors import ConfigError
from harness.events import (
    DoneEvent,
    EventBase,
    HandoffEvent,
    HandoffStatus,
    LaneStartedEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    ProgressEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.messages import InstructionItem, ModelResponse, NoticeItem, new_id
from harness.prompts import SUBAGENT_CONTRACT, SUBAGENT_REPAIR
from harness.protocols import LaneLink
from harness.runtime.lane import Lane, Steps
from harness.runtime.loop import Prologue, TaskLoop
from harness.runtime.refresh import offer_tools
from harness.runtime.session import Session
from harness.runtime.task import TaskEnding, TaskState
from harness.tokens import TokenEstimator
from harness.tools import Tool, ToolContext, ToolOutput, ToolRegistry

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

DELEGATE_TOOL = "delegate"
BOOKKEEPING_TOOLS = (
    "update_task_notes",
    "recall",
    "search_archive",
    "begin_episode",
    "end_episode",
    "condense_context",
)
"""Built-ins every child has besides the tools it was given (when the session offers
them): its own Task Notes, reading the session's archive, and its own episodes and
condensation, which act on the child's context only. None of them acts on the world or
talks to the operator."""

HANDOFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {
            "enum": ["completed", "failed"],
            "description": "failed when the goal could not be reached",
        },
        "summary": {"type": "string", "description": "one or two sentences"},
        "findings": {
            "type": "array",
            "items": {"type": ["string", "object"]},
            "description": "facts found: text, or objects such as "
            '{"ref": ..., "position": [x, y, z], "confidence": 0.9}',
        },
        "decisions": {"type": "array", "items": {"type": "string"}},
        "world_changes": {
            "type": "array",
            "items": {"type": "string"},
            "description": "what you changed in the world (empty if nothing)",
        },
        "verification": {
            "type": "array",
            "items": {"type": "string"},
            "description": "how the findings were checked",
        },
        "unresolved": {"type": "array", "items": {"type": "string"}},
        "evidence": {
            "type": "array",
            "items": {"type": "string", "pattern": "^archive://\\S+$"},
            "description": "archive:// addresses of the tool results that show the findings",
        },
    },
    "required": ["summary", "findings"],
    "additionalProperties": False,
}
"""What a child answers when its ``delegate`` call names no ``output_schema``."""

STANDARD_FIELDS = ("summary", "findings", "decisions", "world_changes", "verification")
ITEM_MAX_CHARS = 400
"""Longest string of a handoff as the parent receives it (the archive keeps it whole)."""
EVIDENCE_FALLBACK = 5
"""Archive addresses cited for a child that cited none: its latest tool results."""
SUBAGENT_GRACE_S = 6.0
"""How long a cancelled ``delegate`` call waits for its child to stop and hand back: the
child sees the cancel itself and stops under the ordinary rules (a physical call of its
own gets ``GRACE_S`` to stop the motion), so this is that grace plus a margin."""


# ====================================================================== the contract


class DelegateArgs(BaseModel):
    """The ``delegate`` tool's arguments (also what ``Harness.delegate`` takes)."""

    model_config = ConfigDict(extra="forbid")

    goal: str = Field(
        min_length=1,
        max_length=4000,
        description="What the sub-agent must find out or do, and what to report back.",
    )
    tools: list[str] = Field(
        default_factory=list,
        description="Tools it may use: names or shell-style patterns (find_*) from your own "
        "tools. It always has update_task_notes, recall and search_archive.",
    )
    max_turns: int | None = Field(
        None, ge=1, description="Most turns it may take (default and cap: the configured)."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="Most tokens it may spend (default and cap: the configured)."
    )
    output_schema: dict[str, Any] | None = Field(
        None,
        description="JSON Schema its final answer must match; default: the handoff schema "
        "(summary, findings, decisions, world_changes, verification, unresolved, evidence).",
    )


@dataclass(frozen=True)
class Contract:
    """What one child is asked to do, with what, within which budgets."""

    goal: str
    tools: tuple[str, ...] = ()
    max_turns: int = 20
    max_tokens: int = 200_000
    output_schema: Mapping[str, Any] | None = None

    @property
    def schema(self) -> Mapping[str, Any]:
        return self.output_schema if self.output_schema is not None else HANDOFF_SCHEMA


class SubagentRefused(Exception):
    """The child cannot start (an unknown window, tools that match nothing, a bad schema);
    the message is written for whoever asked for it."""

    def __init__(self, message: str, *, bad_arguments: bool = False) -> None:
        super().__init__(message)
        self.bad_arguments = bad_arguments


def contract_of(session: Session, args: DelegateArgs) -> Contract:
    """The contract of a ``delegate`` call, its budgets capped by the configuration."""
    cfg = session.config.subagents
    schema = args.output_schema
    if schema is not None:
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise SubagentRefused(
                f"output_schema is not a valid JSON Schema: {exc.message}", bad_arguments=True
            ) from None
    return Contract(
        goal=args.goal.strip(),
        tools=tuple(args.tools),
        max_turns=min(args.max_turns or cfg.max_turns, cfg.max_turns),
        max_tokens=min(args.max_tokens or cfg.max_tokens, cfg.max_tokens),
        output_schema=schema,
    )


@dataclass
class Narrowed:
    """A child's tools: what it may call, and what it asked for but may not have."""

    tools: ToolRegistry
    withheld: dict[str, str] = field(default_factory=dict)


def narrow_tools(
    available: ToolRegistry, requested: Sequence[str], *, physical_allowed: bool
) -> Narrowed:
    """The child's registry: the requested tools (in the parent's order, so definitions
    stay stable), the bookkeeping built-ins, never ``delegate`` itself (no grandchildren).
    A physical tool is withheld unless ``physical_allowed``. A pattern that matches none
    of ``available``'s tools is refused, naming what there is."""
    offered = [t for t in available.visible() if t.name != DELEGATE_TOOL]
    wanted: set[str] = {name for name in BOOKKEEPING_TOOLS if name in available}
    unmatched = []
    for pattern in requested:
        matches = [t.name for t in offered if fnmatchcase(t.name, pattern)]
        if not matches:
            unmatched.append(pattern)
        wanted.update(matches)
    if unmatched:
        names = ", ".join(t.name for t in offered)
        raise SubagentRefused(
            f"no tool matches {', '.join(map(repr, unmatched))}; the tools that can be "
            f"delegated are: {names}",
            bad_arguments=True,
        )
    narrowed = Narrowed(ToolRegistry())
    for item in offered:
        if item.name not in wanted:
            continue
        if item.physical and not physical_allowed:
            narrowed.withheld[item.name] = (
                "it moves hardware, and sub-agents may not (subagents.physical is false); "
                "report what should be done instead"
            )
            continue
        narrowed.tools.add(item)
    return narrowed


# ====================================================================== the handoff


class Handoff(BaseModel):
    """What a sub-agent hands back: a status, its findings and the evidence, never its
    trace. ``output`` is the validated answer itself (the whole answer, for a custom
    ``output_schema``); ``error`` says why a handoff is not ``completed``."""

    model_config = ConfigDict(extra="forbid")

    status: HandoffStatus
    summary: str = ""
    findings: list[Any] = Field(default_factory=list)
    decisions: list[str] = Field(default_factory=list)
    world_changes: list[str] = Field(default_factory=list)
    verification: list[str] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    """archive:// addresses of the tool results behind the findings (recall reads them)."""
    output: dict[str, Any] | None = None
    error: str = ""
    lane: str = ""
    turns: int = 0
    tokens: int = 0
    withheld_tools: dict[str, str] = Field(default_factory=dict)
    full: str | None = None
    """Where the whole handoff is archived, when the parent's copy had to be shortened."""

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def error_kind(self) -> str | None:
        """The tool-result error kind of a handoff that did not complete."""
        return None if self.ok else f"subagent_{self.status}"

    def bounded(self, max_chars: int, *, archive: str | None) -> str:
        """The handoff as the parent reads it: compact JSON within ``max_chars``.

        Long strings are cut first, then lists are shortened from the end (each cut says
        that the archive copy at ``archive`` has the rest); if that is not enough, only the
        essentials stay (status, lane, summary and error cut to fit, evidence, how many
        findings there were). Always one valid JSON object."""
        data = self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        data["status"] = self.status
        text = _dumps(data)
        if len(text) <= max_chars:
            return text
        data = _shortened(data, ITEM_MAX_CHARS)
        data["full"] = archive
        for keep in (10, 5, 2, 1, 0):
            data = {
                key: _first(value, keep) if isinstance(value, list) and key != "evidence" else value
                for key, value in data.items()
            }
            text = _dumps(data)
            if len(text) <= max_chars:
                return text
        essentials: dict[str, Any] = {
            "status": self.status,
            "lane": self.lane,
            "full": archive,
            "findings": f"{len(self.findings)} findings in the archive copy",
        }
        for limit in (200, 80, 0):
            for key in ("summary", "error"):
                value = getattr(self, key)
                if value:
                    essentials[key] = _shortened(value, limit) if limit else "(in the archive)"
            for evidence in (self.evidence, self.evidence[:3], []):
                essentials["evidence"] = evidence
                text = _dumps(essentials)
                if len(text) <= max_chars:
                    return text
        return _dumps({"status": self.status, "full": archive})


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def _shortened(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... [{len(value) - limit} more characters in the archive]"
    if isinstance(value, list):
        return [_shortened(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _shortened(v, limit) for k, v in value.items()}
    return value


def _first(items: list[Any], keep: int) -> list[Any]:
    if len(items) <= keep:
        return items
    return [*items[:keep], f"... {len(items) - keep} more in the archive"]


def parse_answer(text: str, schema: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The child's final answer as a JSON object valid against ``schema``, or the error
    the repair round quotes. A fenced block or text around the object is tolerated."""
    candidate = text.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", candidate, flags=re.DOTALL)
    if fenced:
        candidate = fenced.group(1)
    elif not candidate.startswith("{") and "{" in candidate:
        candidate = candidate[candidate.find("{") : candidate.rfind("}") + 1]
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as exc:
        return None, f"it is not a JSON object ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return None, f"it is a JSON {type(value).__name__}, not an object"
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        problems = [
            f"{'/'.join(map(str, e.absolute_path)) or '(top level)'}: {e.message}"
            for e in errors[:5]
        ]
        return None, "; ".join(problems)
    return value, ""


def handoff_status(ending: TaskEnding, *, provider_failed: bool) -> HandoffStatus:
    """How the child's ending reads for its parent."""
    if ending.status == "completed":
        return "completed"
    if ending.status == "cancelled":
        return "interrupted"
    if ending.status in ("max_turns", "failure_budget", "max_tokens"):
        return "budget_exhausted"
    return "provider_error" if provider_failed else "failed"


@dataclass
class LaneRecord:
    """What the parent's side watched of a child's events (the handoff is built from it)."""

    provider_failed: bool = False
    physical_calls: dict[str, str] = field(default_factory=dict)
    """call id -> ``name(arguments)`` of each physical call the child made."""
    world_changes: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    """Archive addresses of the child's tool results, oldest first."""

    def watch(self, event: EventBase) -> None:
        if isinstance(event, ModelErrorEvent):
            self.provider_failed = True
        elif isinstance(event, ModelResponseEvent):
            self.provider_failed = False
        elif isinstance(event, ToolCallEvent) and event.physical:
            args = ", ".join(f"{k}={v!r}" for k, v in event.arguments.items())
            self.physical_calls[event.call_id] = f"{event.name}({args})"
        elif isinstance(event, ToolResultEvent):
            if event.archive and event.name not in BOOKKEEPING_TOOLS:
                self.results.append(event.archive)
            call = self.physical_calls.get(event.call_id)
            if call is not None and event.executed:
                outcome = (
                    event.evaluation.status
                    if event.evaluation
                    else (f"error {event.error_kind}" if event.is_error else "ok")
                )
                self.world_changes.append(f"recorded by the harness: {call} -> {outcome}")


def handoff_of(
    ending: TaskEnding,
    answer: dict[str, Any] | None,
    *,
    lane: str,
    turns: int,
    tokens: int,
    contract: Contract,
    record: LaneRecord,
    withheld: Mapping[str, str],
    archived: Callable[[str], bool],
    report: str = "",
) -> Handoff:
    """The handoff of a child that ended with ``ending`` (``answer``: its validated final
    answer, when it gave one; ``report``: its ``done`` event's report)."""
    status = handoff_status(ending, provider_failed=record.provider_failed)
    fields: dict[str, Any] = {}
    if answer is not None:
        fields = {key: answer[key] for key in (*STANDARD_FIELDS, "unresolved") if key in answer}
        if contract.output_schema is None and answer.get("status") == "failed":
            status = "failed"
    given = _as_list((answer or {}).get("evidence"))
    cited = [a for a in given if isinstance(a, str) and archived(a)]
    unresolved = [str(u) for u in _as_list(fields.pop("unresolved", None))]
    if answer is not None:
        dropped = [a for a in given if a not in cited]
        if dropped:
            unresolved.append(f"cited evidence not in the archive: {', '.join(map(str, dropped))}")
    error = "" if status == "completed" else ending.reason
    if status == "failed" and not error:
        error = "the sub-agent reported that it could not reach its goal"
    summary = str(fields.pop("summary", ""))
    if answer is None and report:  # what it said last, when it gave no valid answer
        summary = report if len(report) <= ITEM_MAX_CHARS else report[:ITEM_MAX_CHARS] + "..."
    return Handoff(
        status=status,
        summary=summary,
        findings=_as_list(fields.pop("findings", None)),
        decisions=[str(d) for d in _as_list(fields.pop("decisions", None))],
        world_changes=[
            *map(str, _as_list(fields.pop("world_changes", None))),
            *record.world_changes,
        ],
        verification=[str(v) for v in _as_list(fields.pop("verification", None))],
        unresolved=unresolved,
        evidence=cited or record.results[-EVIDENCE_FALLBACK:],
        output=answer if contract.output_schema is not None else None,
        error=error,
        lane=lane,
        turns=turns,
        tokens=tokens,
        withheld_tools=dict(withheld),
    )


def _as_list(value: Any) -> list[Any]:
    """A standard field as a list, whatever a custom schema let the answer put there."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def refused_handoff(message: str) -> Handoff:
    return Handoff(status="failed", error=f"the sub-agent did not start: {message}")


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
    text = handoff.bounded(session.config.subagents.handoff_max_chars, archive=address)
    if handoff.ok:
        return ToolOutput(text=text)
    return ToolOutput.error(text, handoff.error_kind() or "subagent_failed")
