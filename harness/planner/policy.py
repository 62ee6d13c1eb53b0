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

import re
from collections import Counter
from typing import Any

from harness.messages import ModelRequest, ModelResponse
from harness.planner.brief import BriefObject, ParsedBrief, parse_brief
from harness.planner.episodes import shape as shape_episodes
from harness.planner.grammar import Clause, Goal, parse_instruction
from harness.planner.history import (
    BLOCKED_PREFIX,
    REVISION_PREFIX,
    UNSETTLED_KINDS,
    History,
    failed_result,
    find_arguments,
    goal_of,
    history_of,
    query_for,
)
from harness.planner.household import applies as household_applies
from harness.planner.household import decide as household_decide
from harness.planner.resolve import (
    Step,
    blocker_of,
    out_of_reach,
    resolve_phrase,
    satisfied,
    step_text,
    table_ref,
    workspace_of,
)
from harness.planner.responses import claimed, join_sentences, say, tool_call
from harness.planner.search import SEARCH_MAX_TURNS, SEARCH_TOOLS, search_step

__all__ = ["MAX_GRASP_ATTEMPTS", "History", "Planner"]

MAX_GRASP_ATTEMPTS = 3
MAX_BLOCKS = 2
MAX_REPEATS = 4


class Planner:
    """Deterministic offline planner; see the module docstring."""

    def decide(self, request: ModelRequest) -> ModelResponse:
        history = history_of(request)
        tools = {spec.name: spec for spec in request.tools}
        if not history.instruction:
            return say(claimed("There is no instruction to act on.", achieved=False))
        if history.subagent:
            return search_step(request, history, tools)
        if household_applies(tools) and not history.revisions:
            # tools for drawers, doors and switches: a household's language
            return household_decide(
                request,
                history.instruction,
                tools,
                found=history.found,
                queried=history.find_queries,
            )
        prefix = ""
        if history.acknowledged < len(history.revisions):
            # 1. a revision waiting for an answer
            answer, prefix = self._acknowledge(history, tools)
            if answer is not None:
                return answer
            history.acknowledged += 1
        response = self._decide(request, history, tools)
        if prefix:
            response = response.model_copy(update={"text": join_sentences(prefix, response.text)})
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
        goal = goal_of(history)
        if goal.stop:
            return say(claimed(self._report(history, goal, None, [], stopped=True), False))
        if goal.problem:
            return say(claimed(goal.problem, achieved=False))
        brief_text = request.refreshed.brief if request.refreshed else ""
        if not brief_text:
            if "find_objects" in tools and not history.called("find_objects"):
                return tool_call(
                    "find_objects",
                    find_arguments(tools, "object"),
                    "No scene brief; looking objects up.",
                )
            return say(
                claimed(
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
            return tool_call("load_skill", {"name": skill}, f"Loading the {skill} skill.")
        steps, problems, missing = resolve_phrase(goal, world, brief)
        reach = workspace_of(request)

        # 3. objects the Brief left out
        if missing and "find_objects" in tools:
            for phrase in missing:
                query = query_for(phrase)
                if query not in history.find_queries:
                    return tool_call(
                        "find_objects",
                        find_arguments(tools, query),
                        f"Looking for {phrase.text()} (not all objects are in the brief).",
                    )
        if missing and "delegate" in tools:
            for phrase in missing:
                if phrase.every or history.delegated_for(query_for(phrase)):
                    continue
                return tool_call(
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
            return tool_call(
                "update_task_notes",
                {"phase": "planned", "add_notes": _plan_notes(steps, problems)},
                f"Plan: {_plan_text(steps) or 'nothing to move'}.",
            )

        # 4. the last result
        skipped = _skipped(history, steps)
        note = reaction_to(history)

        # 5. something in hand
        if brief.holding:
            held = brief.holding
            step = next((s for s in steps if s.ref == held and s.ref not in skipped), None)
            blocker = blocker_of(step, world) if step is not None else ""
            if step is not None and step.relation == "held":
                pass  # picked up as asked: hold it (the next object, or the report)
            elif blocker:
                skipped[held] = blocker
                note = join_sentences(
                    note,
                    f"Cannot put {held} {step.relation} {step.target}: {blocker}.",  # type: ignore[union-attr]
                )
            elif step is not None and not satisfied(step, world):
                return tool_call(
                    "place",
                    {"ref": held, "target": step.target, "relation": step.relation},
                    join_sentences(note, f"Placing {held} {step.relation} {step.target}."),
                )
            table = table_ref(world)
            if step is not None and step.relation == "held":
                pass
            elif table is not None and history.count("place", ref=held, target=table) < MAX_REPEATS:
                return tool_call(
                    "place",
                    {"ref": held, "target": table, "relation": "on"},
                    join_sentences(note, f"Putting {held} back on {table}."),
                )
            elif "open_gripper" in tools:
                return tool_call("open_gripper", {}, join_sentences(note, f"Releasing {held}."))

        # 6. the next object to move
        for index, step in enumerate(steps):
            if step.ref in skipped or satisfied(step, world):
                continue
            blocker = blocker_of(step, world) or out_of_reach(step, world, reach)
            if blocker:
                skipped[step.ref] = blocker
                continue
            if history.count("pick", ref=step.ref) >= MAX_REPEATS + MAX_GRASP_ATTEMPTS:
                skipped[step.ref] = "too many attempts"
                continue
            remaining = sum(1 for s in steps if not satisfied(s, world) and s.ref not in skipped)
            return tool_call(
                "pick",
                {"ref": step.ref},
                join_sentences(
                    note, f"Picking {step.ref} ({index + 1} of {len(steps)}; {remaining} to go)."
                ),
            )

        # 7. done
        return say(
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
            goal = goal_of(history, upto=history.acknowledged + 1)
            summary = "; ".join(_clause_text(c) for c in goal.clauses)
            text = f"{REVISION_PREFIX} the goal is now: {summary}."
            notes = {"phase": "replanned", "add_notes": [f"goal revised to: {summary}"]}
        if "update_task_notes" in tools:
            return tool_call("update_task_notes", notes, text), text
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
        done = [s for s in steps if satisfied(s, world)]
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
            lines.append(f"- NOT done: {step_text(step)}: {reason}")
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
        return claimed("\n".join(lines), achieved=achieved)


def _progress(request: ModelRequest, history: History) -> tuple[dict[str, str], int]:
    """(ref -> where it ended up, with the evaluator's words; objects still to move)."""
    brief_text = request.refreshed.brief if request.refreshed else ""
    if not brief_text:
        return {}, 0
    brief = parse_brief(brief_text)
    world = {**history.found, **brief.objects}
    steps, _, _ = resolve_phrase(goal_of(history), world, brief)
    outcome = {}
    for step in steps:
        verdict = history.last_verdict("pick" if step.relation == "held" else "place", step.ref)
        where = f"{step.ref} is {step_text(step).removeprefix(step.ref + ' ')}"
        if verdict is not None and verdict.status == "success":
            outcome[step.ref] = f"{where} (evaluator: {verdict.evidence})"
        elif satisfied(step, world):
            outcome[step.ref] = f"{where} (per the scene brief)"
    return outcome, sum(1 for step in steps if not satisfied(step, world))


def _skipped(history: History, steps: list[Step]) -> dict[str, str]:
    skipped: dict[str, str] = {}
    for step in steps:
        failures = history.failed_picks(step.ref)
        if failures >= MAX_GRASP_ATTEMPTS:
            skipped[step.ref] = f"{failures} grasps failed"
        elif history.blocked(step.ref) >= MAX_BLOCKS:
            skipped[step.ref] = "the safety envelope blocked it"
    return skipped


def reaction_to(history: History) -> str:
    if not history.results:
        return ""
    call, result = history.results[-1]
    if call is None or not failed_result(result):
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
            and failed_result(result)
            and result.error_kind != "blocked"
            and result.error_kind not in UNSETTLED_KINDS
        ):
            failures[call.arguments.get("ref", "")] += 1
    return failures


def _clause_text(clause: Clause) -> str:
    if clause.clear_table:
        return "clear the table into the tray"
    if clause.relation == "held":
        return f"{clause.subject.text()} picked up"
    relation = clause.relation or "in/on"
    return f"{clause.subject.text()} {relation} {clause.target.text()}"


def _plan_text(steps: list[Step]) -> str:
    return ", ".join(step_text(s) for s in steps)


def _plan_notes(steps: list[Step], problems: list[str]) -> list[str]:
    notes = [f"plan: {step_text(s)}" for s in steps]
    notes.extend(f"problem: {p}" for p in problems)
    return notes or ["nothing needs to move"]


def _done_lines(history: History, steps: list[Step], world: dict[str, BriefObject] | None) -> str:
    lines = []
    for step in steps:
        verdict = history.last_verdict("pick" if step.relation == "held" else "place", step.ref)
        where = f"{step.ref} is {step_text(step).removeprefix(step.ref + ' ')}"
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
