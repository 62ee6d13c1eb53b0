"""JSON snapshots of a scene graph and the diff between two of them.

A snapshot is what the run store keeps; a diff is what changed between two snapshots (one
turn, or any two points of a run), used by ``scene_update`` events and the run report.
Changes smaller than the Brief can show (positions and sizes to the millimetre,
confidence to the hundredth) are not changes, so sensor noise does not flood the record.
Bookkeeping fields (first/last seen, changed_at, provenance) are not compared; staleness
is reported in its own lists.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scene.nodes import SceneEdge, SceneNode

__all__ = [
    "NodeChange",
    "SceneDiff",
    "SceneSnapshot",
    "diff",
    "node_changes",
    "value_changes",
]

POSITION_TOLERANCE_M = 0.0005
"""Half the Brief's display resolution (3 decimals, metres)."""
CONFIDENCE_TOLERANCE = 0.005
ORIENTATION_TOLERANCE = 1e-3

_IGNORED = frozenset({"first_seen", "last_seen", "changed_at", "provenance", "stale"})


class SceneSnapshot(BaseModel):
    """The whole graph at one moment (nodes and edges sorted, so equal graphs give equal
    JSON)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["scene-graph/1"] = "scene-graph/1"
    time: float
    nodes: list[SceneNode] = Field(default_factory=list)
    edges: list[SceneEdge] = Field(default_factory=list)


class NodeChange(BaseModel):
    """The fields of one node that changed: ``{field: [old, new]}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    fields: dict[str, tuple[Any, Any]]


class SceneDiff(BaseModel):
    """What changed between two snapshots."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    time_before: float | None = None
    time_after: float
    added: list[SceneNode] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[NodeChange] = Field(default_factory=list)
    stale: list[str] = Field(default_factory=list)
    """Refs that became stale."""
    refreshed: list[str] = Field(default_factory=list)
    """Refs that were stale and were observed again."""
    relations_added: list[SceneEdge] = Field(default_factory=list)
    relations_removed: list[SceneEdge] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.changed
            or self.stale
            or self.refreshed
            or self.relations_added
            or self.relations_removed
        )

    def changed_refs(self, *, include_near: bool = False) -> list[str]:
        """Refs whose fields or relations changed (``near`` only when asked: it flickers
        whenever anything moves past)."""
        refs = {change.ref for change in self.changed}
        added = {node.ref for node in self.added}
        for edge in (*self.relations_added, *self.relations_removed):
            if include_near or edge.relation != "near":
                refs.add(edge.source)
        return sorted(refs - added - set(self.removed))


def _close(a: Any, b: Any, tolerance: float) -> bool:
    if a is None or b is None:
        return a is b
    return all(
        math.isclose(x, y, rel_tol=0.0, abs_tol=tolerance) for x, y in zip(a, b, strict=True)
    )


def _same(name: str, old: Any, new: Any) -> bool:
    if name in ("position", "size"):
        return _close(old, new, POSITION_TOLERANCE_M)
    if name == "orientation":
        return _close(old, new, ORIENTATION_TOLERANCE)
    if name == "confidence":
        return abs(old - new) < CONFIDENCE_TOLERANCE
    return bool(old == new)


def value_changes(node: SceneNode, values: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Which of ``values`` would change ``node`` beyond display resolution
    (``{field: (old, new)}``); bookkeeping fields are never changes."""
    return {
        name: (getattr(node, name), new)
        for name, new in values.items()
        if name not in _IGNORED and not _same(name, getattr(node, name), new)
    }


def node_changes(before: SceneNode, after: SceneNode) -> dict[str, tuple[Any, Any]]:
    """Fields that differ beyond display resolution (``{field: (old, new)}``)."""
    return value_changes(before, {name: getattr(after, name) for name in SceneNode.model_fields})


def diff(before: SceneSnapshot | None, after: SceneSnapshot) -> SceneDiff:
    """What changed from ``before`` to ``after`` (everything is added when ``before`` is
    None).

    The graph's own change log calls this with snapshots holding only the nodes touched
    since its last diff (and every edge): the rule is the same, a node absent before is
    added and a node absent after is removed.
    """
    old_nodes: Mapping[str, SceneNode] = {n.ref: n for n in before.nodes} if before else {}
    new_nodes = {n.ref: n for n in after.nodes}
    added = [new_nodes[ref] for ref in sorted(new_nodes.keys() - old_nodes.keys())]
    removed = sorted(old_nodes.keys() - new_nodes.keys())
    changed: list[NodeChange] = []
    stale: list[str] = []
    refreshed: list[str] = []
    for ref in sorted(old_nodes.keys() & new_nodes.keys()):
        old, new = old_nodes[ref], new_nodes[ref]
        fields = node_changes(old, new)
        if fields:
            changed.append(NodeChange(ref=ref, fields=fields))
        if new.stale and not old.stale:
            stale.append(ref)
        elif old.stale and not new.stale:
            refreshed.append(ref)
    stale.extend(node.ref for node in added if node.stale)
    old_edges = _edge_index(before.edges if before else ())
    new_edges = _edge_index(after.edges)
    return SceneDiff(
        time_before=before.time if before else None,
        time_after=after.time,
        added=added,
        removed=removed,
        changed=changed,
        stale=sorted(stale),
        refreshed=refreshed,
        relations_added=[new_edges[k] for k in sorted(new_edges.keys() - old_edges.keys())],
        relations_removed=[old_edges[k] for k in sorted(old_edges.keys() - new_edges.keys())],
    )


def _edge_index(edges: Iterable[SceneEdge]) -> dict[tuple[str, str, str], SceneEdge]:
    return {edge.key: edge for edge in edges}
