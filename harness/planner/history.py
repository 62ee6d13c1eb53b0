"""What the transcript of the current task says happened, read back every turn.

The offline planner is stateless: each decision starts by reading the request's items
into a :class:`History` (the instruction and revisions, calls and their results, what
``find_objects`` and sub-agents reported, the planner's own condensed memory) and the goal
the instruction and its acknowledged revisions ask for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    NoticeItem,
    RevisionItem,
    ToolCall,
    ToolResultItem,
    Verdict,
)
from harness.planner.brief import BriefObject, parse_find_objects
from harness.planner.episodes import read_memory
from harness.planner.grammar import Goal, Phrase, parse_instruction
from harness.prompts import SUBAGENT_CONTRACT_HEADER

__all__ = [
    "BLOCKED_PREFIX",
    "REVISION_PREFIX",
    "UNSETTLED_KINDS",
    "History",
]

REVISION_PREFIX = "Revision:"


@dataclass
class History:
    """What the current task's transcript says happened."""

    instruction: str = ""
    revisions: list[str] = field(default_factory=list)
    acknowledged: int = 0
    calls: list[ToolCall] = field(default_factory=list)
    results: list[tuple[ToolCall | None, ToolResultItem]] = field(default_factory=list)
    found: dict[str, BriefObject] = field(default_factory=dict)
    find_queries: set[str] = field(default_factory=set)
    memory: dict[str, list[str]] = field(default_factory=dict)
    """The planner's own condensed memory (``condense_context``), once it wrote one."""
    subagent: bool = False
    """This request is a sub-agent's: its history starts with the contract notice."""
    delegated: list[str] = field(default_factory=list)
    """Goals handed to sub-agents (lower case)."""
    handoffs: list[dict[str, Any]] = field(default_factory=list)

    def delegated_for(self, query: str) -> bool:
        return any(query in goal for goal in self.delegated)

    def called(self, name: str) -> bool:
        if name == "update_task_notes" and self.memory:
            return True  # the plan was written before the first condensation
        return any(call.name == name for call in self.calls)

    def count(self, name: str, **arguments: Any) -> int:
        return sum(
            1
            for call in self.calls
            if call.name == name and all(call.arguments.get(k) == v for k, v in arguments.items())
        )

    def failed_picks(self, ref: str) -> int:
        return sum(
            1
            for call, result in self.results
            if call is not None
            and call.name == "pick"
            and call.arguments.get("ref") == ref
            and failed_result(result)
            and result.error_kind != "blocked"
            and result.error_kind not in UNSETTLED_KINDS
        )

    def blocked(self, ref: str) -> int:
        return sum(
            1
            for call, result in self.results
            if call is not None
            and ref in (call.arguments.get("ref"), call.arguments.get("target"))
            and result.error_kind == "blocked"
        )

    def last_verdict(self, tool: str, ref: str) -> Verdict | None:
        for call, result in reversed(self.results):
            if call is not None and call.name == tool and call.arguments.get("ref") == ref:
                return result.evaluation
        return None


BLOCKED_PREFIX = "blocked by the safety envelope: "
UNSETTLED_KINDS = frozenset({"interrupted", "not_executed", "outcome_unknown", "cancelled"})
"""Results that say nothing about the grasp itself (the run was interrupted, or the call
never ran): not counted as failed grasps."""


def failed_result(result: ToolResultItem) -> bool:
    return result.is_error or (
        result.evaluation is not None and result.evaluation.status == "failure"
    )


# ====================================================================== reading the request


def history_of(request: ModelRequest) -> History:
    items = list(request.items)
    start = max(
        (i for i, item in enumerate(items) if isinstance(item, InstructionItem)), default=None
    )
    history = History()
    if start is None:
        return history
    history.instruction = items[start].text  # type: ignore[union-attr]
    history.memory = read_memory(items[start + 1 :])
    by_id: dict[str, ToolCall] = {}
    for item in items[start + 1 :]:
        if isinstance(item, RevisionItem):
            history.revisions.append(item.text)
        elif isinstance(item, NoticeItem) and item.text.startswith(SUBAGENT_CONTRACT_HEADER):
            history.subagent = True
        elif isinstance(item, AssistantItem):
            if item.text.startswith(REVISION_PREFIX):
                history.acknowledged += 1
            for call in item.tool_calls:
                by_id[call.id] = call
                history.calls.append(call)
                if call.name == "find_objects":
                    history.find_queries.add(_query_of(call.arguments))
                elif call.name == "delegate":
                    history.delegated.append(str(call.arguments.get("goal", "")).lower())
        elif isinstance(item, ToolResultItem):
            call = by_id.get(item.call_id)
            history.results.append((call, item))
            if item.name == "find_objects" and not item.is_error:
                for found in parse_find_objects(item.text):
                    history.found[found.ref] = found
            elif item.name == "delegate":
                _read_handoff(history, item.text)
    return history


def goal_of(history: History, *, upto: int | None = None) -> Goal:
    goal = parse_instruction(history.instruction)
    for revision in history.revisions[: upto if upto is not None else history.acknowledged]:
        parsed = parse_instruction(revision)
        if parsed.stop:
            return parsed
        if not parsed.ok:
            continue
        goal = Goal(clauses=goal.clauses + parsed.clauses) if parsed.also else parsed
    return goal


def _read_handoff(history: History, text: str) -> None:
    """A sub-agent's handoff (the ``delegate`` result): what it found joins the world."""
    try:
        handoff = json.loads(text)
    except json.JSONDecodeError:
        return
    if not isinstance(handoff, dict):
        return
    history.handoffs.append(handoff)
    if handoff.get("status") != "completed":
        return
    for finding in handoff.get("findings") or []:
        if not isinstance(finding, dict) or "ref" not in finding:
            continue
        try:
            position = tuple(float(v) for v in finding["position"][:3])
        except (KeyError, TypeError, ValueError):
            continue
        history.found[str(finding["ref"])] = BriefObject(
            ref=str(finding["ref"]),
            label=str(finding.get("label", "")),
            position=position,  # type: ignore[arg-type]
            confidence=finding.get("confidence"),
        )


def query_for(phrase: Phrase) -> str:
    return " ".join(w for w in (phrase.color, phrase.kind) if w) or "object"


def _query_of(arguments: dict[str, Any]) -> str:
    for key in ("label", "query", "text", "name"):
        if isinstance(arguments.get(key), str):
            return arguments[key]
    return json.dumps(arguments, sort_keys=True)


def find_arguments(tools: dict[str, Any], query: str) -> dict[str, Any]:
    properties = tools["find_objects"].parameters.get("properties", {})
    for key in ("label", "query", "text", "name"):
        if key in properties:
            return {key: query}
    return {}
