"""A test stand-in for the scene graph: renders the Brief straight from ground-truth
detections, keeping to BRIEF_CONTRACT.md. Used to test the planner against exactly the
text the contract promises, with or without the real scene package."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.components import SceneRefresh
from harness.messages import Verdict
from harness.tools import Tool


def xyz(point: Any) -> str:
    return "(" + ", ".join(f"{float(v):.3f}" for v in point) + ")"


def render_brief(detections: list[Any], *, t: float = 0.0, limit: int | None = None) -> str:
    gripper = next((d for d in detections if d.ref == "gripper"), None)
    objects = [d for d in detections if d.category in ("object", "container", "surface")]
    contains: dict[str, list[str]] = {}
    for d in objects:
        for relation, other in d.relations:
            if relation == "inside":
                contains.setdefault(other, []).append(d.ref)
    shown = objects if limit is None else objects[:limit]
    lines = [f"Scene (world frame, metres; t={t:.3f})"]
    if gripper is not None:
        holding = gripper.attributes.get("holding") or "nothing"
        state = gripper.attributes.get("state", "open")
        lines.append(f"robot: gripper at {xyz(gripper.position)}, {state}, holding {holding}")
    lines.append(f"objects ({len(shown)} of {len(objects)} shown, most relevant first):")
    for d in shown:
        tags = " [container, open]" if d.category == "container" else ""
        clauses = []
        if d.size:
            clauses.append(f"size {d.size[0]:.3f}x{d.size[1]:.3f}x{d.size[2]:.3f}")
        holding = gripper.attributes.get("holding") if gripper else None
        if d.ref == holding:
            clauses.append("held")
        for relation, other in d.relations:
            clauses.append(f"{'in' if relation == 'inside' else relation} {other}")
        if d.ref in contains:
            clauses.append("contains " + ", ".join(contains[d.ref]))
        clauses.append("conf 1.00")
        lines.append(f"- {d.ref}: {d.label}{tags} at {xyz(d.position)} " + "; ".join(clauses))
    if limit is not None and len(objects) > limit:
        lines.append(f"+{len(objects) - limit} more objects: some cubes; use find_objects")
    return "\n".join(lines)


class ContractScene:
    """A SceneProvider over a Perception that renders the contract Brief."""

    def __init__(self, perception: Any) -> None:
        self.perception = perception
        self.briefs: list[str] = []
        self.verdicts: list[tuple[str, str]] = []

    def refresh(self, observation: Any, *, focus: str) -> SceneRefresh:
        brief = render_brief(self.perception.perceive(observation))
        self.briefs.append(brief)
        return SceneRefresh(brief=brief)

    def tools(self) -> list[Tool]:
        return []

    def on_verdict(self, tool: str, arguments: Mapping[str, Any], verdict: Verdict) -> None:
        self.verdicts.append((tool, verdict.status))
