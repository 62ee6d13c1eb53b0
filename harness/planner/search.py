"""The offline planner as a search sub-agent: it looks for the object its goal names with
``find_objects``, then camera by camera, takes a closer look, and answers with the handoff
JSON (or a ``failed`` handoff when no camera shows it)."""

from __future__ import annotations

import json
import re
from typing import Any

from harness.messages import ModelRequest, ModelResponse
from harness.planner.brief import ParsedBrief, parse_brief
from harness.planner.grammar import search_phrase
from harness.planner.history import History, find_arguments, query_for
from harness.planner.resolve import phrase_matches
from harness.planner.responses import say, tool_call

__all__ = ["SEARCH_MAX_TURNS", "SEARCH_TOOLS"]

SEARCH_TOOLS = ("look", "find_objects", "get_object_image")
"""What a search sub-agent is given (those of them the planner itself is offered)."""
SEARCH_MAX_TURNS = 10


def search_step(request: ModelRequest, history: History, tools: dict[str, Any]) -> ModelResponse:
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
    matches = sorted(ref for ref, item in world.items() if phrase_matches(phrase, item))
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
            return tool_call("get_object_image", {"ref": ref}, f"Found {ref}; a closer look.")
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
        return tool_call(
            "find_objects",
            find_arguments(tools, query_for(phrase)),
            f"Is {wanted} known to the scene graph?",
        )
    cameras = _cameras(tools.get("look"))
    looked = [c.arguments.get("camera") for c in looks]
    remaining = [camera for camera in cameras if camera not in looked]
    if "look" in tools and remaining:
        camera = remaining[0]
        return tool_call(
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
    return say(json.dumps(data))
