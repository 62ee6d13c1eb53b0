"""Attacks on the sub-agent guarantees, with oracles written apart from the code under test.

- a child view of the context always shows the parent's Resident blocks (the same
  objects, in Resident order) followed by its own, and never leaks its own into the parent;
- tool narrowing gives exactly the oracle's set (requested, not physical unless allowed,
  the bookkeeping built-ins, never ``delegate`` or a hidden tool) and refuses a pattern
  that matches nothing;
- a bounded handoff is always one JSON object within the limit, with its status;
- the answer check agrees with ``jsonschema`` on every object;
- a fault at any point of a child (the model raising, a tool raising, a cancel) ends in a
  handoff with the right status, and the parent's stream still has exactly one ``done``.
"""

from __future__ import annotations

import json
import string
from fnmatch import fnmatchcase
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Harness
from harness.context import RESIDENT_ORDER, Budget, Context
from harness.errors import ContextOverflowError, ModelError
from harness.events import DoneEvent, HandoffEvent
from harness.messages import InstructionItem, ToolResultItem
from harness.providers import ScriptedModel, call, reply
from harness.runtime.delegation.delegate import (
    BOOKKEEPING_TOOLS,
    HANDOFF_SCHEMA,
    Handoff,
    SubagentRefused,
    narrow_tools,
    parse_answer,
)
from harness.tokens import TokenEstimator
from harness.tools import Tool, ToolRegistry
from tests.runtime.test_subagents import FOUND, answer, config, look
from tests.tiers import examples


class NoSummaries(ScriptedModel):
    supports_summaries = False


FAST = settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# ====================================================================== the child view

RESIDENT_NAMES = ["system", "embodiment", "skills", "memory", "tool_sources", "skill:a"]
CHILD_NAMES = ["skill:b", "skill:c", "skill:a"]


def _rank(name: str) -> int:
    for index, key in enumerate(RESIDENT_ORDER):
        if name == key or (key.endswith(":") and name.startswith(key)):
            return index
    return len(RESIDENT_ORDER)


operations = st.lists(
    st.tuples(
        st.sampled_from(["parent", "child"]),
        st.sampled_from(["set", "remove"]),
        st.sampled_from(RESIDENT_NAMES + CHILD_NAMES),
        st.text(alphabet="xyz ", min_size=0, max_size=6),
    ),
    max_size=30,
)


@FAST
@given(operations)
def test_a_child_view_reads_the_parents_resident_through(ops: list[Any]) -> None:
    parent = Context(TokenEstimator(), Budget(100_000, 1000))
    child = parent.child()
    oracle: dict[str, dict[str, str]] = {"parent": {}, "child": {}}
    for who, op, name, text in ops:
        target = parent if who == "parent" else child
        book = oracle[who]
        if op == "set" and text:
            inherited = oracle["parent"].get(name) if who == "child" else None
            if who == "child" and name not in book and inherited == text:
                pass  # the parent's block already says it: nothing of the child's own
            else:
                book[name] = text  # a block set again keeps its place (load order)
            target.set_resident(name, text)
        else:
            book.pop(name, None)
            target.remove_resident(name)
    expected_parent = sorted(oracle["parent"].items(), key=lambda kv: _rank(kv[0]))
    assert [(b.name, b.text) for b in parent.resident_blocks()] == expected_parent
    merged = dict(oracle["parent"])
    merged.update(oracle["child"])
    expected_child = sorted(merged.items(), key=lambda kv: _rank(kv[0]))
    assert [(b.name, b.text) for b in child.resident_blocks()] == expected_child
    by_name = {b.name: b for b in parent.resident_blocks()}
    for block in child.resident_blocks():  # an inherited block is the parent's object
        if block.name not in oracle["child"]:
            assert block is by_name[block.name]
    assert child.resident_tokens() == sum(
        TokenEstimator().text(text) + 4 for text in merged.values()
    )
    child.append(InstructionItem(text="child goal"))
    assert parent.accumulated == [] and len(child.accumulated) == 1


# ====================================================================== narrowing

NAMES = [
    "look",
    "find_objects",
    "find_rooms",
    "move_to",
    "pick",
    "recall",
    "update_task_notes",
    "search_archive",
    "delegate",
    "evaluate_run",
    "notify_user",
]


def _tool(name: str, physical: bool, hidden: bool) -> Tool:
    return Tool(name, name, lambda: "ok", physical=physical, hidden=hidden)


registries = st.lists(
    st.tuples(st.sampled_from(NAMES), st.booleans(), st.booleans()),
    unique_by=lambda t: t[0],
    max_size=len(NAMES),
)
patterns = st.lists(
    st.one_of(st.sampled_from([*NAMES, "find_*", "*", "p?ck", "nope", "move*"])), max_size=5
)


@FAST
@given(registries, patterns, st.booleans())
def test_narrowing_matches_the_oracle(
    tools: list[tuple[str, bool, bool]], requested: list[str], allowed: bool
) -> None:
    registry = ToolRegistry(_tool(*spec) for spec in tools)
    offered = [n for n, _, hidden in tools if not hidden and n != "delegate"]
    unmatched = [p for p in requested if not any(fnmatchcase(n, p) for n in offered)]
    if unmatched:
        with pytest.raises(SubagentRefused) as refused:
            narrow_tools(registry, requested, physical_allowed=allowed)
        assert refused.value.bad_arguments and repr(unmatched[0]) in str(refused.value)
        return
    narrowed = narrow_tools(registry, requested, physical_allowed=allowed)
    wanted = {n for n in offered if any(fnmatchcase(n, p) for p in requested)}
    wanted |= {n for n in BOOKKEEPING_TOOLS if n in offered}
    physical = {n for n, phys, _ in tools if phys}
    expected = [n for n in offered if n in wanted and (allowed or n not in physical)]
    assert narrowed.tools.names() == expected
    assert set(narrowed.withheld) == (
        {n for n in wanted if n in physical} if not allowed else set()
    )
    assert "delegate" not in narrowed.tools.names()


# ====================================================================== bounded handoffs

texts = st.text(alphabet=string.printable + "éü日本", max_size=600)
findings = st.one_of(
    texts,
    st.fixed_dictionaries(
        {
            "ref": texts,
            "position": st.lists(st.floats(-9, 9), max_size=3),
            "confidence": st.floats(0, 1),
        }
    ),
)
handoffs = st.builds(
    Handoff,
    status=st.sampled_from(
        ["completed", "failed", "interrupted", "provider_error", "budget_exhausted"]
    ),
    summary=texts,
    findings=st.lists(findings, max_size=60),
    decisions=st.lists(texts, max_size=30),
    unresolved=st.lists(texts, max_size=30),
    evidence=st.lists(
        st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=30).map(
            lambda s: f"archive://lane_x/{s}"
        ),
        max_size=12,
    ),
    error=texts,
    lane=st.just("lane_0123456789abcdef"),
)


@FAST
@given(handoffs, st.integers(500, 20_000))
def test_a_bounded_handoff_is_always_one_json_object_within_the_limit(
    handoff: Handoff, limit: int
) -> None:
    text = handoff.bounded(limit, archive="archive://lane_0123456789abcdef/handoff")
    assert len(text) <= limit
    data = json.loads(text)
    assert isinstance(data, dict) and data["status"] == handoff.status
    whole = handoff.model_dump_json()
    if len(json.dumps(json.loads(whole), ensure_ascii=False, separators=(",", ":"))) <= limit:
        assert "full" not in data  # nothing was cut, so nothing points at the archive


# ====================================================================== the answer check

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
answers = st.fixed_dictionaries(
    {},
    optional={
        "summary": st.one_of(st.text(max_size=10), json_values),
        "findings": st.one_of(
            st.lists(
                st.one_of(
                    st.text(max_size=5),
                    st.dictionaries(st.text(max_size=3), json_values, max_size=2),
                ),
                max_size=3,
            ),
            json_values,
        ),
        "status": st.sampled_from(["completed", "failed", "maybe"]),
        "evidence": st.lists(st.sampled_from(["archive://a/b", "not an address"]), max_size=2),
        "extra": json_values,
    },
)


@FAST
@given(answers)
def test_the_answer_check_agrees_with_jsonschema(value: dict[str, Any]) -> None:
    parsed, error = parse_answer(json.dumps(value), HANDOFF_SCHEMA)
    valid = jsonschema.Draft202012Validator(HANDOFF_SCHEMA).is_valid(value)
    assert (parsed == value) if valid else (parsed is None and error)


# ====================================================================== faults at every point

FAULTS = {
    "model error": (ModelError("backend down", status_code=500), {"provider_error"}),
    # Issue 17's recovery ladder (forced compaction, references, minimal references) runs
    # in a child lane too: only a fourth overflow in a row ends it (this was two).
    "overflow past the ladder": (ContextOverflowError("too long"), {"provider_error", "failed"}),
    "bug in the model": (RuntimeError("adapter bug"), {"failed"}),
}


def _exploding_look(times: list[int]) -> Tool:
    def handler(area: str) -> str:
        times.append(1)
        raise OSError("camera cable")

    return Tool(
        "look",
        "Look.",
        handler,
        parameters={"type": "object", "properties": {"area": {"type": "string"}}},
    )


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 4), st.sampled_from(sorted(FAULTS)))
def test_a_fault_at_any_step_of_a_child_is_a_handoff(step: int, fault: str) -> None:
    exception, statuses = FAULTS[fault]
    script: list[Any] = [call("look", area=f"a{i}") for i in range(step)]
    script.append(exception)
    if fault == "overflow past the ladder":
        script.extend([exception] * 3)
    child = ScriptedModel([*script, answer()])
    parent = ScriptedModel([call("delegate", goal="find it", tools=["look"]), reply("carry on")])
    summarizer = NoSummaries([])  # the child's compaction must not read the parent's script
    with Harness(
        config(), model=parent, subagent_model=child, compaction_model=summarizer, tools=[look]
    ) as h:
        events = list(h.run_stream("fetch"))
    dones = [e for e in events if isinstance(e, DoneEvent)]
    assert len(dones) == 1 and events[-1] is dones[0] and dones[0].status == "completed"
    [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
    assert handoff.status in statuses, (step, fault, handoff.handoff)
    result = next(i for i in parent.requests[1].items if isinstance(i, ToolResultItem))
    assert json.loads(result.text)["status"] == handoff.status
    assert all(not i.task_id.startswith("lane_") for i in parent.requests[1].items)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(2, 6))
def test_a_tool_that_keeps_failing_exhausts_the_childs_budget(budget: int) -> None:
    """The child stops at the failure budget; its failed handoff is one failed turn of the
    parent's (which goes on: its own budget is not spent)."""
    times: list[int] = []
    child = ScriptedModel(responder=lambda r: call("look", area="x"))
    parent = ScriptedModel([call("delegate", goal="find it", tools=["look"]), reply("carry on")])
    cfg = config()
    cfg.run.failure_budget = budget
    with Harness(cfg, model=parent, subagent_model=child, tools=[_exploding_look(times)]) as h:
        events = list(h.run_stream("fetch"))
    [handoff] = [e for e in events if isinstance(e, HandoffEvent)]
    assert handoff.status == "budget_exhausted" and len(times) == budget
    assert "failure_budget" in handoff.handoff["error"]
    assert events[-1].type == "done" and events[-1].status == "completed"  # type: ignore[attr-defined]


def test_the_found_answer_round_trips() -> None:
    assert parse_answer(json.dumps(FOUND), HANDOFF_SCHEMA) == (FOUND, "")
