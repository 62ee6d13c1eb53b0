"""The offline planner's use of episodes and ``condense_context``, as a model would.

When the harness offers ``begin_episode`` (and the planner's own next step is known), the
decision is shaped by the structure of the work:

- a search (``find_objects``) runs inside an **exploration** ``find-...``; an object the
  Brief already shows is confirmed in a short exploration ``locate-<ref>`` whose
  conclusion is its Brief line;
- the pick and place of one object run inside an **action** ``move-<ref>`` that depends on
  the exploration that found it, and ends with the evaluator's verdict as its conclusion;
- after each completed object of a task with more to go, ``condense_context`` replaces the
  finished work with a memory the planner reads back (:func:`read_memory`), so the final
  report still cites every verdict.

Stateless like the planner: the episodes' state is read from the request (the status the
harness shows with the observation), never remembered between calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from harness.messages import (
    Item,
    ModelRequest,
    ModelResponse,
    NoticeItem,
    ToolCall,
    ToolResultItem,
    new_id,
)

__all__ = ["EpisodeStatus", "read_memory", "shape", "status_of"]

STATUS_LINE = re.compile(r"^- (active|completed|abandoned) (exploration|action) ([^\s:(]+)(.*)$")
EXPLORING = frozenset({"find_objects", "look", "get_object_relations", "get_object_image"})
ACTING = frozenset({"pick", "place", "open_gripper", "close_gripper", "move_to", "home"})
CONCLUSION_CHARS = 300
REFERENCES_KEPT = 6


@dataclass
class EpisodeStatus:
    """What the request shows of the task's episodes."""

    active: tuple[str, str] | None = None
    """(kind, name) of the active episode."""
    completed: list[tuple[str, str, str]] = field(default_factory=list)
    """(kind, name, conclusion) of ended episodes, oldest first."""


def status_of(request: ModelRequest) -> EpisodeStatus:
    status = EpisodeStatus()
    text = request.refreshed.observation if request.refreshed else ""
    for line in text.splitlines():
        match = STATUS_LINE.match(line)
        if match is None:
            continue
        state, kind, name, rest = match.groups()
        if state == "active":
            status.active = (kind, name)
        else:
            conclusion = rest.split(": ", 1)[1] if ": " in rest else ""
            status.completed.append((kind, name, conclusion))
    return status


def read_memory(items: list[Item]) -> dict[str, list[str]]:
    """The planner's own condensed memory (the JSON ``condense_context`` stored), if any."""
    for item in items:
        if isinstance(item, NoticeItem) and item.purpose == "memory":
            body = item.text.split("\n", 1)[1] if "\n" in item.text else ""
            body = body.split("\nReplaced exchanges", 1)[0]
            try:
                loaded = json.loads(body)
            except ValueError:
                return {}
            return loaded if isinstance(loaded, dict) else {}
    return {}


def _call(name: str, arguments: dict[str, Any], text: str) -> ModelResponse:
    return ModelResponse(
        text=text, tool_calls=[ToolCall(id=new_id("call"), name=name, arguments=arguments)]
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-")[:40] or "objects"


def _last_result(items: list[Item]) -> ToolResultItem | None:
    return next((i for i in reversed(items) if isinstance(i, ToolResultItem)), None)


def _about(conclusion: str, ref: str) -> bool:
    """An exploration found ``ref``: its conclusion starts with it (a Brief line) or lists
    it as found (a search result), not merely mentions it as a neighbour."""
    return conclusion.startswith(ref) or bool(
        re.search(rf"(^|[\s,:]){re.escape(ref)}:", conclusion)
    )


def _brief_line(request: ModelRequest, ref: str) -> str:
    brief = request.refreshed.brief if request.refreshed else ""
    line = next((x for x in brief.splitlines() if x.startswith(f"- {ref}:")), "")
    return line[2:] if line else f"{ref} is in the scene brief"


def shape(
    request: ModelRequest,
    response: ModelResponse,
    *,
    outcome: dict[str, str],
    retries: list[str],
    remaining: int,
) -> ModelResponse:
    """The decision to send instead of ``response`` (or ``response`` itself).

    ``outcome`` maps each object ref to the line that says where it ended up (the
    evaluator's verdict); ``retries`` are grasp recoveries worth remembering;
    ``remaining`` counts the objects still to move.
    """
    tools = {spec.name for spec in request.tools}
    if not {"begin_episode", "end_episode"} <= tools:
        return response
    status = status_of(request)
    items = list(request.items)
    turn = max((item.turn for item in items), default=0)
    call = response.tool_calls[0] if response.tool_calls else None
    if status.active is not None:
        ending = _end_if_done(request, status.active, call, outcome)
        return ending if ending is not None else response
    last = _last_result(items)
    just_acted = (
        last is not None
        and last.name == "end_episode"
        and not last.is_error
        and last.text.startswith("action episode")
    )
    if just_acted and remaining > 0 and "condense_context" in tools:
        return _condense(items, status, retries, remaining)
    if call is None:
        return response
    if call.name == "find_objects":
        query = " ".join(str(v) for v in call.arguments.values()) or "objects"
        return _call(
            "begin_episode",
            {"kind": "exploration", "name": f"find-{_slug(query)}-t{turn}"},
            f"Exploring: searching for {query}.",
        )
    if call.name == "pick":
        ref = str(call.arguments.get("ref", ""))
        explorations = [c for c in status.completed if c[0] == "exploration" and c[1]]
        relevant = [name for _, name, conclusion in explorations if _about(conclusion, ref)]
        if not relevant:
            return _call(
                "begin_episode",
                {"kind": "exploration", "name": f"locate-{_slug(ref)}-t{turn}"},
                f"Exploring: confirming where {ref} is before acting.",
            )
        return _call(
            "begin_episode",
            {"kind": "action", "name": f"move-{_slug(ref)}-t{turn}", "depends_on": relevant[-1:]},
            f"Acting: moving {ref} (relying on {relevant[-1]}).",
        )
    return response


def _end_if_done(
    request: ModelRequest,
    active: tuple[str, str],
    call: ToolCall | None,
    outcome: dict[str, str],
) -> ModelResponse | None:
    kind, name = active
    if kind == "exploration":
        if call is not None and call.name not in ACTING:
            return None
        if name.startswith("locate-") and call is not None:
            ref = str(call.arguments.get("ref", ""))
            conclusion = _brief_line(request, ref)
        else:
            last = _last_result(list(request.items))
            found = last.text.splitlines()[0] if last is not None and last.text else ""
            conclusion = found or "nothing relevant found"
        return _call(
            "end_episode",
            {"name": name, "conclusion": conclusion[:CONCLUSION_CHARS]},
            f"Exploration {name} done.",
        )
    ref = _ref_of(name)
    if call is not None and call.name not in ACTING and call.name not in EXPLORING:
        return None  # bookkeeping (Task Notes, a skill) inside the action
    if call is not None and call.name in ACTING and call.arguments.get("ref") in (ref, None):
        return None  # still moving this object (a retried grasp, the place, a release)
    conclusion = outcome.get(ref, f"{ref}: not placed")
    return _call(
        "end_episode", {"name": name, "conclusion": conclusion[:CONCLUSION_CHARS]}, f"{name} done."
    )


def _ref_of(action_name: str) -> str:
    """``move-red_cube_1-t12`` -> ``red_cube_1``."""
    body = action_name.removeprefix("move-")
    return body.rsplit("-t", 1)[0]


def _condense(
    items: list[Item], status: EpisodeStatus, retries: list[str], remaining: int
) -> ModelResponse:
    done = [conclusion for kind, _, conclusion in status.completed if kind == "action"]
    earlier = read_memory(items)
    completed = list(dict.fromkeys([*earlier.get("completed_work", []), *done]))
    strategies = list(dict.fromkeys([*earlier.get("strategies", []), *retries]))
    references = [
        item.archive
        for item in items
        if isinstance(item, ToolResultItem) and item.name == "place" and item.archive
    ]
    references = list(dict.fromkeys([*earlier.get("references", []), *references]))
    memory = {
        "completed_work": completed,
        "strategies": strategies,
        "environment_changes": done,
        "constraints": [],
        "open_questions": [f"{remaining} object(s) still to move"],
        "references": references[-REFERENCES_KEPT:],
    }
    return _call("condense_context", memory, "Milestone: condensing the finished work.")
