"""Reading a scene Brief back into data (the grammar in BRIEF_CONTRACT.md).

The offline planner sees the world only as a model would: through this text. Lines it does
not recognise are ignored, so a Brief with extra lines or extra text after the listed parts
still parses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BriefObject", "ParsedBrief", "parse_brief", "parse_find_objects"]

_NUMBER = r"-?\d+(?:\.\d+)?"
_POINT = rf"\(({_NUMBER}), ({_NUMBER}), ({_NUMBER})\)"
_OBJECT = re.compile(
    rf"^- (?P<ref>[a-z0-9_]+): (?P<label>[a-z][a-z0-9 ]*?)(?: \[(?P<tags>[^\]]*)\])? at "
    rf"{_POINT}(?P<rest>.*)$"
)
_ROBOT = re.compile(
    rf"^robot: gripper at {_POINT}, (?P<state>open|closed)[^,]*, holding "
    r"(?P<holding>[a-z0-9_]+)"
)
_TAIL = re.compile(r"^\+(?P<count>\d+) more objects?: (?P<summary>.*?); use find_objects")


@dataclass
class BriefObject:
    ref: str
    label: str
    position: tuple[float, float, float]
    tags: list[str] = field(default_factory=list)
    on: str | None = None
    inside: str | None = None
    held: bool = False
    contains: list[str] = field(default_factory=list)
    confidence: float | None = None

    @property
    def color(self) -> str | None:
        words = self.label.split()
        return words[0] if len(words) > 1 else None

    @property
    def kind(self) -> str:
        return self.label.split()[-1] if self.label else ""

    @property
    def is_container(self) -> bool:
        return "container" in self.tags or self.kind in {"tray", "box", "bin", "basket"}


@dataclass
class ParsedBrief:
    objects: dict[str, BriefObject] = field(default_factory=dict)
    gripper: tuple[float, float, float] | None = None
    gripper_state: str | None = None
    holding: str | None = None
    omitted: int = 0
    omitted_summary: str = ""


def parse_brief(text: str) -> ParsedBrief:
    brief = ParsedBrief()
    for raw in text.splitlines():
        line = raw.strip()
        if match := _ROBOT.match(line):
            brief.gripper = _point(match, 1)
            brief.gripper_state = match.group("state")
            holding = match.group("holding")
            brief.holding = None if holding == "nothing" else holding
        elif match := _OBJECT.match(line):
            item = BriefObject(
                ref=match.group("ref"),
                label=match.group("label").strip(),
                position=_point(match, 4),
                tags=[t.strip() for t in (match.group("tags") or "").split(",") if t.strip()],
            )
            for clause in match.group("rest").split(";"):
                _apply_clause(item, clause.strip())
            brief.objects[item.ref] = item
        elif match := _TAIL.match(line):
            brief.omitted = int(match.group("count"))
            brief.omitted_summary = match.group("summary")
    if brief.holding and brief.holding in brief.objects:
        brief.objects[brief.holding].held = True
    return brief


def _point(match: re.Match[str], first_group: int) -> tuple[float, float, float]:
    groups = match.groups()
    offset = first_group - 1
    return (float(groups[offset]), float(groups[offset + 1]), float(groups[offset + 2]))


def _apply_clause(item: BriefObject, clause: str) -> None:
    if clause == "held":
        item.held = True
    elif match := re.fullmatch(r"on ([a-z0-9_]+)", clause):
        item.on = match.group(1)
    elif match := re.fullmatch(r"in ([a-z0-9_]+)", clause):
        item.inside = match.group(1)
    elif match := re.fullmatch(r"contains (.+)", clause):
        item.contains = [ref.strip() for ref in match.group(1).split(",") if ref.strip()]
    elif match := re.fullmatch(r"conf (\d+(?:\.\d+)?)", clause):
        item.confidence = float(match.group(1))


def parse_find_objects(text: str) -> list[BriefObject]:
    """Objects from a ``find_objects`` result (a JSON list; see the contract)."""
    start = text.find("[")
    if start < 0:
        return []
    try:  # the list, and nothing after it (a line naming the archive address may follow)
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        return []
    found = []
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict) or "ref" not in entry or "position" not in entry:
            continue
        relations = entry.get("relations") or {}
        item = BriefObject(
            ref=str(entry["ref"]),
            label=str(entry.get("label", "")),
            position=tuple(float(v) for v in entry["position"][:3]),  # type: ignore[arg-type]
            tags=[str(t) for t in entry.get("tags", []) or []],
        )
        if isinstance(entry.get("confidence"), (int, float)):
            item.confidence = float(entry["confidence"])
        if isinstance(relations, dict):
            item.on = _first(relations.get("on"))
            item.inside = _first(relations.get("inside") or relations.get("in"))
            item.held = bool(relations.get("held") or relations.get("held_by"))
        found.append(item)
    return found


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return str(value) if value else None
