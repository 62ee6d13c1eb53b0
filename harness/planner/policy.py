"""The offline planner's decision: one tool call (or the final report) per request.

It is stateless between calls: every decision is recomputed from what the request shows a
model (the instruction and revisions, the Scene Brief, tool results with their evaluator
verdicts, the skill catalog and the offered tools), so it behaves the same after a
compaction, a resumed session or a replan. The order of concerns each turn:

1. an unanswered revision: acknowledge it and rewrite the plan in the Task Notes;
2. load a fitting skill (when a skill library is configured) and write the plan once;
3. look objects up with ``find_objects`` when the Brief leaves them out, and when even that
   does not know one, hand the search to a sub-agent (``delegate``, when offered) and use
   what its handoff reports;
4. react to the last result: a failed grasp is retried (up to ``MAX_GRASP_ATTEMPTS``), a
   call the safety envelope blocked twice is given up;
5. holding something: place it where the goal wants it (or back on the table);
6. otherwise pick the next object whose goal relation does not hold yet (an object or
   target outside the reachable workspace the embodiment profile states is declined, not
   tried);
7. nothing left: the final report, citing the evaluator's verdicts.

As a sub-agent (its history starts with the contract notice) it searches instead: the
object its goal names is looked up with ``find_objects``, then, camera by camera, with
``look`` and ``find_objects`` again; once found it takes a closer look
(``get_object_image``) and answers with the handoff JSON (ref, position, confidence, the
archive addresses of its evidence), or with a ``failed`` handoff when no camera shows it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.messages import (
    AssistantItem,
    InstructionItem,
    ModelRequest,
    ModelResponse,
    NoticeItem,
    RevisionItem,
    ToolCall,
    ToolResultItem,
    Verdict,
    new_id,
)
from harness.planner import household
from harness.planner.brief import BriefObject, ParsedBrief, parse_brief, parse_find_objects
from harness.planner.episodes import read_memory
from harness.planner.episodes import shape as shape_episodes
from harness.planner.grammar import Clause, Goal, Phrase, parse_instruction, search_phrase
from harness.prompts import (
    OUTCOME_ACHIEVED_LINE,
    OUTCOME_NOT_ACHIEVED_LINE,
    SUBAGENT_CONTRACT_HEADER,
)

__all__ = ["MAX_GRASP_ATTEMPTS", "Planner"]

MAX_GRASP_ATTEMPTS = 3
MAX_BLOCKS = 2
MAX_REPEATS = 4
REVISION_PREFIX = "Revision:"
SEARCH_TOOLS = ("look", "find_objects", "get_object_image")
"""What a search sub-agent is given (those of them the planner itself is offered)."""
SEARCH_MAX_TURNS = 10


@dataclass(frozen=True)
class Step:
    """One subgoal: put ``ref`` ``relation`` ``target``."""

    ref: str
    target: str
    relation: str


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
            and _failed(result)
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


def _failed(result: ToolResultItem) -> bool:
    return result.is_error or (
        result.evaluation is not None and result.evaluation.status == "failure"
    )


class Planner:
    """Deterministic tabletop planner; see the module docstring."""

    def decide(self, request: ModelRequest) -> ModelResponse:
        history = _history(request)
        tools = {spec.name: spec for spec in request.tools}
        if not history.instruction:
            return _say(_claimed("There is no instruction to act on.", achieved=False))
        if history.subagent:
            return _search(request, history, tools)
        if household.applies(tools) and not history.revisions:
            # a world with drawers, doors and switches (LIBERO): its own language
            return household.decide(request, history.instruction, tools)
        prefix = ""
        if history.acknowledged < len(history.revisions):
            # 1. a revision waiting for an answer
            answer, prefix = self._acknowledge(history, tools)
            if answer is not None:
                return answer
            history.acknowledged += 1
        response = self._decide(request, history, tools)
        if prefix:
            response = response.model_copy(update={"text": _join(prefix, response.text)})
        if "begin_episode" not in tools:
            return response
        outcome, remaining = _progress(request, history)
        retries = [f"{ref} needed {n + 1} grasps" for ref, n in _grasp_failures(history).items()]
        return shape_episodes(
            request, response, outcome=outcome, retries=retries, remaining=remaining
        )

    def _decide(
        self, request: ModelRequest, history: History, tools: dict[str, Any]
    ) -> ModelResponse:
        goal = _goal(history)
        if goal.stop:
            return _say(_claimed(self._report(history, goal, None, [], stopped=True), False))
        if goal.problem:
            return _say(_claimed(goal.problem, achieved=False))
        brief_text = request.refreshed.brief if request.refreshed else ""
        if not brief_text:
            if "find_objects" in tools and not history.called("find_objects"):
                return _call(
                    "find_objects",
                    _find_arguments(tools, "object"),
                    "No scene brief; looking objects up.",
                )
            return _say(
                _claimed(
                    "I cannot see the scene: no Scene Brief reached me, so I cannot plan "
                    "pick and place actions.",
                    achieved=False,
                )
            )
        brief = parse_brief(brief_text)
        world = {**history.found, **brief.objects}

        # 2. skill and plan
        skill = self._skill_to_load(request, history, goal, tools)
        if skill is not None:
            return _call("load_skill", {"name": skill}, f"Loading the {skill} skill.")
        steps, problems, missing = _resolve(goal, world, brief)
        reach = _workspace(request)

        # 3. objects the Brief left out
        if missing and "find_objects" in tools:
            for phrase in missing:
                query = _query_for(phrase)
                if query not in history.find_queries:
                    return _call(
                        "find_objects",
                        _find_arguments(tools, query),
                        f"Looking for {phrase.text()} (not all objects are in the brief).",
                    )
        if missing and "delegate" in tools:
            for phrase in missing:
                if phrase.every or history.delegated_for(_query_for(phrase)):
                    continue
                return _call(
                    "delegate",
                    {
                        "goal": f"find {phrase.text()} and report its ref, position and how "
                        "sure you are",
                        "tools": [name for name in SEARCH_TOOLS if name in tools],
                        "max_turns": SEARCH_MAX_TURNS,
                    },
                    f"{phrase.text().capitalize()} is neither in the brief nor known to "
                    "find_objects: a sub-agent searches for it.",
                )
        if "update_task_notes" in tools and not history.called("update_task_notes"):
            return _call(
                "update_task_notes",
                {"phase": "planned", "add_notes": _plan_notes(steps, problems)},
                f"Plan: {_plan_text(steps) or 'nothing to move'}.",
            )

        # 4. the last result
        skipped = _skipped(history, steps)
        note = _reaction(history)

        # 5. something in hand
        if brief.holding:
            held = brief.holding
            step = next((s for s in steps if s.ref == held and s.ref not in skipped), None)
            blocker = _blocker(step, world) if step is not None else ""
            if blocker:
                skipped[held] = blocker
                note = _join(note, f"Cannot put {held} {step.relation} {step.target}: {blocker}.")  # type: ignore[union-attr]
            elif step is not None and not _satisfied(step, world):
                return _call(
                    "place",
                    {"ref": held, "target": step.target, "relation": step.relation},
                    _join(note, f"Placing {held} {step.relation} {step.target}."),
                )
            table = _table(world)
            if table is not None and history.count("place", ref=held, target=table) < MAX_REPEATS:
                return _call(
                    "place",
                    {"ref": held, "target": table, "relation": "on"},
                    _join(note, f"Putting {held} back on {table}."),
                )
            if "open_gripper" in tools:
                return _call("open_gripper", {}, _join(note, f"Releasing {held}."))

        # 6. the next object to move
        for index, step in enumerate(steps):
            if step.ref in skipped or _satisfied(step, world):
                continue
            blocker = _blocker(step, world) or _out_of_reach(step, world, reach)
            if blocker:
                skipped[step.ref] = blocker
                continue
            if history.count("pick", ref=step.ref) >= MAX_REPEATS + MAX_GRASP_ATTEMPTS:
                skipped[step.ref] = "too many attempts"
                continue
            remaining = sum(1 for s in steps if not _satisfied(s, world) and s.ref not in skipped)
            return _call(
                "pick",
                {"ref": step.ref},
                _join(
                    note, f"Picking {step.ref} ({index + 1} of {len(steps)}; {remaining} to go)."
                ),
            )

        # 7. done
        return _say(
            self._report(
                history, goal, brief, steps, skipped=skipped, world=world, problems=problems
            )
        )

    # ------------------------------------------------------------------ pieces

    def _acknowledge(
        self, history: History, tools: dict[str, Any]
    ) -> tuple[ModelResponse | None, str]:
        """Answer the oldest unanswered revision: a notes update when that tool is offered,
        else a text prefix for this turn's action."""
        revision = history.revisions[history.acknowledged]
        parsed = parse_instruction(revision)
        if parsed.stop:
            return None, f"{REVISION_PREFIX} stopping as asked ({revision!r})."
        if not parsed.ok:
            text = (
                f"{REVISION_PREFIX} I could not use {revision!r} ({parsed.problem}) and "
                "keep the current goal."
            )
            notes = {"add_notes": [f"ignored revision: {revision}"]}
        else:
            goal = _goal(history, upto=history.acknowledged + 1)
            summary = "; ".join(_clause_text(c) for c in goal.clauses)
            text = f"{REVISION_PREFIX} the goal is now: {summary}."
            notes = {"phase": "replanned", "add_notes": [f"goal revised to: {summary}"]}
        if "update_task_notes" in tools:
            return _call("update_task_notes", notes, text), text
        return None, text

    def _skill_to_load(
        self, request: ModelRequest, history: History, goal: Goal, tools: dict[str, Any]
    ) -> str | None:
        if "load_skill" not in tools or history.called("load_skill"):
            return None
        if any(block.name.startswith("skill:") for block in request.system):
            return None
        catalog = "\n".join(block.text for block in request.system if block.name == "skills")
        names = re.findall(r"^- ([a-z0-9][a-z0-9_-]*):", catalog, flags=re.MULTILINE)
        stacking = any(c.relation == "on" and c.target.kind == "cube" for c in goal.clauses)
        for wanted in ("stacking", "pick-and-place") if stacking else ("pick-and-place",):
            if wanted in names:
                return wanted
        return None

    def _report(
        self,
        history: History,
        goal: Goal,
        brief: ParsedBrief | None,
        steps: list[Step],
        *,
        stopped: bool = False,
        skipped: dict[str, str] | None = None,
        world: dict[str, BriefObject] | None = None,
        problems: list[str] | None = None,
    ) -> str:
        goal_text = "; ".join(_clause_text(c) for c in goal.clauses) or history.instruction
        if stopped:
            return (
                f"Stopped on request. Goal was: {goal_text}. {_done_lines(history, steps, world)}"
            )
        skipped = skipped or {}
        world = world or {}
        done = [s for s in steps if _satisfied(s, world)]
        lines = [
            f"Task: {history.instruction}"
            + (f" (revised: {goal_text})" if history.revisions else ""),
            f"Result: {len(done)} of {len(steps)} objects where they belong"
            + (" (offline tabletop planner)." if steps else "."),
        ]
        lines.extend(_done_lines(history, done, world).splitlines())
        for step in steps:
            if step in done:
                continue
            reason = skipped.get(step.ref, "not reached")
            lines.append(f"- NOT done: {step.ref} {step.relation} {step.target}: {reason}")
        for problem in problems or []:
            lines.append(f"- NOT done: {problem}")
        for handoff in history.handoffs:
            found = ", ".join(
                str(f.get("ref")) for f in handoff.get("findings", []) if isinstance(f, dict)
            )
            detail = handoff.get("summary") or handoff.get("error") or ""
            lines.append(
                f"Sub-agent search ({handoff.get('status', '?')}): {detail}"
                + (f" (found {found})" if found else "")
            )
        retries = [
            f"{ref} needed {n + 1} grasps" for ref, n in _grasp_failures(history).items() if n
        ]
        retries = list(dict.fromkeys([*history.memory.get("strategies", []), *retries]))
        if retries:
            lines.append("Recovered from failed grasps: " + ", ".join(retries) + ".")
        achieved = bool(steps) and len(done) == len(steps) and not problems
        return _claimed("\n".join(lines), achieved=achieved)


def _progress(request: ModelRequest, history: History) -> tuple[dict[str, str], int]:
    """(ref -> where it ended up, with the evaluator's words; objects still to move)."""
    brief_text = request.refreshed.brief if request.refreshed else ""
    if not brief_text:
        return {}, 0
    brief = parse_brief(brief_text)
    world = {**history.found, **brief.objects}
    steps, _, _ = _resolve(_goal(history), world, brief)
    outcome = {}
    for step in steps:
        verdict = history.last_verdict("place", step.ref)
        where = f"{step.ref} is {step.relation} {step.target}"
        if verdict is not None and verdict.status == "success":
            outcome[step.ref] = f"{where} (evaluator: {verdict.evidence})"
        elif _satisfied(step, world):
            outcome[step.ref] = f"{where} (per the scene brief)"
    return outcome, sum(1 for step in steps if not _satisfied(step, world))


# ====================================================================== reading the request


def _history(request: ModelRequest) -> History:
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


def _goal(history: History, *, upto: int | None = None) -> Goal:
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


def _query_for(phrase: Phrase) -> str:
    return " ".join(w for w in (phrase.color, phrase.kind) if w) or "object"


def _query_of(arguments: dict[str, Any]) -> str:
    for key in ("label", "query", "text", "name"):
        if isinstance(arguments.get(key), str):
            return arguments[key]
    return json.dumps(arguments, sort_keys=True)


def _find_arguments(tools: dict[str, Any], query: str) -> dict[str, Any]:
    properties = tools["find_objects"].parameters.get("properties", {})
    for key in ("label", "query", "text", "name"):
        if key in properties:
            return {key: query}
    return {}


# ====================================================================== resolving the goal


def _resolve(
    goal: Goal, world: dict[str, BriefObject], brief: ParsedBrief
) -> tuple[list[Step], list[str], list[Phrase]]:
    steps: list[Step] = []
    problems: list[str] = []
    missing: list[Phrase] = []
    for clause in goal.clauses:
        target = _one(clause.target, world)
        if target is None:
            problems.append(f"no {clause.target.text().removeprefix('the ')} in the scene")
            missing.append(clause.target)
            continue
        relation = clause.relation or ("in" if world[target].is_container else "on")
        if world[target].is_container:
            relation = "in"
        if clause.clear_table:
            table = _table(world)
            subjects = [
                o.ref
                for o in world.values()
                if _movable(o) and (o.on == table or o.held or o.inside == target)
            ]
        elif clause.subject.every:
            subjects = [
                o.ref for o in world.values() if _movable(o) and _matches(clause.subject, o)
            ]
            if (
                brief.omitted
                and clause.subject.kind
                and clause.subject.kind in brief.omitted_summary
            ):
                missing.append(clause.subject)
        else:
            one = _one(clause.subject, world)
            if one is None:
                problems.append(f"no {clause.subject.text().removeprefix('the ')} in the scene")
                missing.append(clause.subject)
                continue
            subjects = [one]
        for ref in sorted(subjects):
            if ref != target and all(s.ref != ref for s in steps):
                steps.append(Step(ref=ref, target=target, relation=relation))
    return steps, problems, missing


def _movable(item: BriefObject) -> bool:
    return not item.is_container and item.kind not in {"table", "surface", "floor", "shelf"}


def _matches(phrase: Phrase, item: BriefObject) -> bool:
    if phrase.ref:
        return item.ref == phrase.ref
    if phrase.kind and item.kind != phrase.kind:
        return False
    return not (phrase.color and item.color != phrase.color)


def _one(phrase: Phrase, world: dict[str, BriefObject]) -> str | None:
    if phrase.ref:
        return phrase.ref if phrase.ref in world else None
    if phrase.kind == "table":
        return _table(world)
    candidates = sorted(o.ref for o in world.values() if _matches(phrase, o))
    return candidates[0] if candidates else None


def _table(world: dict[str, BriefObject]) -> str | None:
    tables = sorted(o.ref for o in world.values() if o.kind == "table")
    return tables[0] if tables else None


def _satisfied(step: Step, world: dict[str, BriefObject]) -> bool:
    item = world.get(step.ref)
    if item is None or item.held:
        return False
    return item.inside == step.target if step.relation == "in" else item.on == step.target


def _blocker(step: Step, world: dict[str, BriefObject]) -> str:
    if step.ref not in world:
        return f"{step.ref} is no longer in the scene"
    if step.relation == "on":
        on_target = [o.ref for o in world.values() if o.on == step.target and o.ref != step.ref]
        if on_target:
            return f"{', '.join(on_target)} already on {step.target}"
        on_subject = [o.ref for o in world.values() if o.on == step.ref]
        if on_subject:
            return f"{', '.join(on_subject)} is on top of {step.ref}"
    return ""


_WORKSPACE = re.compile(
    r"^Reachable workspace \(world frame\): x (?P<x0>-?[\d.]+)\.\.(?P<x1>-?[\d.]+), "
    r"y (?P<y0>-?[\d.]+)\.\.(?P<y1>-?[\d.]+)",
    re.MULTILINE,
)
REACH_MARGIN_M = 0.02
"""How far outside the stated workspace an object may be and still be tried (the envelope
clamps overshoots that small)."""


def _workspace(request: ModelRequest) -> tuple[float, float, float, float] | None:
    """The reachable x and y ranges the embodiment profile states, if it states them."""
    for block in request.system:
        if block.name == "embodiment" and (match := _WORKSPACE.search(block.text)):
            return tuple(float(match.group(k)) for k in ("x0", "x1", "y0", "y1"))  # type: ignore[return-value]
    return None


def _out_of_reach(
    step: Step, world: dict[str, BriefObject], reach: tuple[float, float, float, float] | None
) -> str:
    """Why ``step`` cannot be done within the workspace (the object or its target lies
    outside it), or "": a model that knows the profile declines instead of asking the
    safety envelope to block the motion."""
    if reach is None:
        return ""
    x0, x1, y0, y1 = reach
    for ref in (step.ref, step.target):
        item = world.get(ref)
        if item is None or item.held:
            continue
        x, y, _ = item.position
        if not (x0 - REACH_MARGIN_M <= x <= x1 + REACH_MARGIN_M) or not (
            y0 - REACH_MARGIN_M <= y <= y1 + REACH_MARGIN_M
        ):
            return (
                f"{ref} at ({x:.3f}, {y:.3f}) is out of reach (the workspace is x "
                f"{x0:.2f}..{x1:.2f}, y {y0:.2f}..{y1:.2f}); not attempted"
            )
    return ""


def _skipped(history: History, steps: list[Step]) -> dict[str, str]:
    skipped: dict[str, str] = {}
    for step in steps:
        failures = history.failed_picks(step.ref)
        if failures >= MAX_GRASP_ATTEMPTS:
            skipped[step.ref] = f"{failures} grasps failed"
        elif history.blocked(step.ref) >= MAX_BLOCKS:
            skipped[step.ref] = "the safety envelope blocked it"
    return skipped


def _reaction(history: History) -> str:
    if not history.results:
        return ""
    call, result = history.results[-1]
    if call is None or not _failed(result):
        return ""
    ref = call.arguments.get("ref", "")
    evidence = result.evaluation.evidence if result.evaluation else result.text.splitlines()[0]
    evidence = evidence.removeprefix(BLOCKED_PREFIX)  # said once, below
    if result.error_kind in UNSETTLED_KINDS:  # never ran, or ran and the outcome is lost
        return f"{call.name} of {ref or 'its target'} did not finish ({evidence}); looking again."
    if call.name == "pick" and result.error_kind != "blocked":
        attempts = history.failed_picks(ref)
        if attempts < MAX_GRASP_ATTEMPTS:
            return (
                f"The grasp of {ref} failed ({evidence}); retrying "
                f"(attempt {attempts + 1} of {MAX_GRASP_ATTEMPTS})."
            )
        return f"The grasp of {ref} failed {attempts} times; giving up on it."
    if result.error_kind == "blocked":
        return f"{call.name} was blocked by the safety envelope: {evidence}"
    return f"{call.name} did not succeed ({evidence})."


def _grasp_failures(history: History) -> Counter[str]:
    failures: Counter[str] = Counter()
    for call, result in history.results:
        if (
            call is not None
            and call.name == "pick"
            and _failed(result)
            and result.error_kind != "blocked"
            and result.error_kind not in UNSETTLED_KINDS
        ):
            failures[call.arguments.get("ref", "")] += 1
    return failures


# ====================================================================== responses


def _call(name: str, arguments: dict[str, Any], text: str = "") -> ModelResponse:
    return ModelResponse(
        text=text, tool_calls=[ToolCall(id=new_id("call"), name=name, arguments=arguments)]
    )


def _say(text: str) -> ModelResponse:
    return ModelResponse(text=text)


def _claimed(text: str, achieved: bool) -> str:
    """A final report ending with the planner's own claim (the ``Outcome:`` line)."""
    return f"{text}\n{OUTCOME_ACHIEVED_LINE if achieved else OUTCOME_NOT_ACHIEVED_LINE}"


def _join(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def _clause_text(clause: Clause) -> str:
    if clause.clear_table:
        return "clear the table into the tray"
    relation = clause.relation or "in/on"
    return f"{clause.subject.text()} {relation} {clause.target.text()}"


def _plan_text(steps: list[Step]) -> str:
    return ", ".join(f"{s.ref} {s.relation} {s.target}" for s in steps)


def _plan_notes(steps: list[Step], problems: list[str]) -> list[str]:
    notes = [f"plan: {s.ref} {s.relation} {s.target}" for s in steps]
    notes.extend(f"problem: {p}" for p in problems)
    return notes or ["nothing needs to move"]


def _done_lines(history: History, steps: list[Step], world: dict[str, BriefObject] | None) -> str:
    lines = []
    for step in steps:
        verdict = history.last_verdict("place", step.ref)
        where = f"{step.ref} is {step.relation} {step.target}"
        remembered = next(
            (w for w in history.memory.get("completed_work", []) if w.startswith(f"{where} (")),
            None,
        )
        if verdict is not None and verdict.status == "success":
            lines.append(f"- {where} (evaluator: {verdict.evidence})")
        elif remembered is not None:
            lines.append(f"- {remembered}")
        elif world is not None:
            lines.append(f"- {where} (per the scene brief)")
    return "\n".join(lines)


# ====================================================================== as a sub-agent


def _search(request: ModelRequest, history: History, tools: dict[str, Any]) -> ModelResponse:
    """A sub-agent's search for the object its goal names (see the module docstring)."""
    phrase = search_phrase(history.instruction)
    if phrase is None:
        return _handoff(
            "failed",
            "I can only search for objects",
            unresolved=[f"cannot read a search in the goal {history.instruction!r}"],
        )
    wanted = phrase.text()
    brief = parse_brief(request.refreshed.brief) if request.refreshed else ParsedBrief()
    world = {**history.found, **brief.objects}
    matches = sorted(ref for ref, item in world.items() if _matches(phrase, item))
    evidence = [
        result.archive
        for call, result in history.results
        if call is not None and call.name in SEARCH_TOOLS and result.archive and not result.is_error
    ]
    looks = [c for c in history.calls if c.name == "look"]
    searched = [f"{c.name}({json.dumps(c.arguments, sort_keys=True)})" for c in history.calls]
    if matches:
        ref = matches[0]
        item = world[ref]
        if "get_object_image" in tools and not history.count("get_object_image", ref=ref):
            return _call("get_object_image", {"ref": ref}, f"Found {ref}; a closer look.")
        where = ", ".join(f"{v:.3f}" for v in item.position)
        source = "the Scene Brief" if ref in brief.objects else "find_objects"
        verification = [f"listed by {source}"]
        if looks:
            verification.append(f"appeared after look with {looks[-1].arguments.get('camera')}")
        if history.count("get_object_image", ref=ref):
            verification.append("a crop of the latest camera image was taken (get_object_image)")
        return _handoff(
            "completed",
            f"{ref} ({item.label or wanted}) is at ({where})",
            findings=[
                {
                    "ref": ref,
                    "label": item.label,
                    "position": list(item.position),
                    "confidence": item.confidence if item.confidence is not None else 1.0,
                }
            ],
            decisions=[f"searched with {', '.join(searched)}"] if searched else [],
            verification=verification,
            evidence=evidence,
        )
    last = history.calls[-1].name if history.calls else ""
    if "find_objects" in tools and last != "find_objects":
        return _call(
            "find_objects",
            _find_arguments(tools, _query_for(phrase)),
            f"Is {wanted} known to the scene graph?",
        )
    cameras = _cameras(tools.get("look"))
    looked = [c.arguments.get("camera") for c in looks]
    remaining = [camera for camera in cameras if camera not in looked]
    if "look" in tools and remaining:
        camera = remaining[0]
        return _call(
            "look",
            {"camera": camera} if camera else {},
            f"{wanted.capitalize()} is not known yet: looking with the {camera or 'main'} camera.",
        )
    return _handoff(
        "failed",
        f"{wanted} was not found",
        decisions=[f"searched with {', '.join(searched)}"] if searched else [],
        unresolved=[f"no camera ({', '.join(c for c in cameras if c) or 'none'}) shows {wanted}"],
        evidence=evidence,
    )


def _cameras(look: Any) -> list[str | None]:
    """The cameras ``look`` names in its description (``cameras: front, top``)."""
    if look is None:
        return []
    found = re.search(r"cameras?: ([a-z0-9_, ]+)", look.description or "")
    names = [name.strip() for name in found.group(1).split(",")] if found else []
    return [name for name in names if name] or [None]


def _handoff(status: str, summary: str, **fields: Any) -> ModelResponse:
    data: dict[str, Any] = {"status": status, "summary": summary, "findings": []}
    data.update({key: value for key, value in fields.items() if value})
    return _say(json.dumps(data))
