"""The scene graph's state and what every change is built from: the nodes and edges, the
read-only views of them, the write primitives (a node's fields, an edge, an asserted
relation dropped), the geometric relations recomputed after a change, and the change log
:meth:`GraphState.take_changes` returns.

:class:`scene.graph.SceneGraph` is the class to use; it adds observations
(:mod:`scene.observing`) and confirmed outcomes on top of this.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from scene.geometry import Body, RelationTolerances, compute_relations, grasped_body
from scene.nodes import (
    GRIPPER_REF,
    EdgeOrigin,
    RelationName,
    SceneEdge,
    SceneNode,
    label_matches,
    slug,
)
from scene.perception import Perception, Provenance
from scene.robot import RobotView
from scene.snapshot import SceneDiff, SceneSnapshot, diff, value_changes

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["GraphState", "UnknownRefError"]

_GEOMETRY_FIELDS = frozenset({"position", "size", "category", "attributes", "frame"})


class UnknownRefError(KeyError):
    """A ref that names no node; ``suggestions`` are close refs (for error results)."""

    def __init__(self, ref: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(ref)
        self.ref = ref
        self.suggestions = list(suggestions)

    def __str__(self) -> str:
        hint = f"; close matches: {', '.join(self.suggestions)}" if self.suggestions else ""
        return f"unknown object {self.ref!r}{hint}"


class GraphState:
    """The nodes, edges and change log of a scene graph, and the reads and writes on them.

    Args:
        perception: Turns observations into detections; None leaves objects to explicit
            ``apply`` calls and confirmations (the robot state still updates).
        tolerances: Geometric relation tolerances.
        stale_after_s: Seconds without an observation after which a node is stale.
        association_gate_m: Largest centre distance at which a ref-less detection can be
            the same object as a known node.
    """

    def __init__(
        self,
        perception: Perception | None = None,
        *,
        tolerances: RelationTolerances | None = None,
        stale_after_s: float = 30.0,
        association_gate_m: float = 0.10,
    ) -> None:
        if stale_after_s <= 0:
            raise ValueError(f"stale_after_s must be > 0, got {stale_after_s}")
        if association_gate_m <= 0:
            raise ValueError(f"association_gate_m must be > 0, got {association_gate_m}")
        self.perception = perception
        self.tolerances = tolerances or RelationTolerances()
        self.stale_after_s = stale_after_s
        self.association_gate_m = association_gate_m
        self.now = 0.0
        import networkx  # when a graph is built: a Harness without a scene never loads it

        self._g: nx.MultiDiGraph = networkx.MultiDiGraph()
        self._used_refs: set[str] = set()
        self._counters: dict[str, int] = {}
        self._dirty = False
        self._holding_known = False
        self._holders: set[str] = set()
        """Sources of holding edges (so held() need not scan every edge)."""
        self._asserted: set[str] = set()
        """Nodes that may have non-geometry edges (so an update need not scan every node's)."""
        self._supports_stated: set[str] = set()
        """Nodes whose last detection named all their supports (``Detection.supports_stated``):
        the geometry derives no on/inside for them."""
        # change log since the last take_changes()
        self._before: dict[str, SceneNode | None] = {}
        self._edges_at_take: dict[tuple[str, str, str], tuple[str, float, float | None]] = {}
        self._take_time: float | None = None

    # ================================================================== reading

    @property
    def nx(self) -> nx.MultiDiGraph:
        """The underlying networkx graph (read it; change the scene through this class)."""
        return self._g

    def __contains__(self, ref: object) -> bool:
        return ref in self._g

    def __len__(self) -> int:
        return self._g.number_of_nodes()

    def get(self, ref: str) -> SceneNode | None:
        data = self._g.nodes.get(ref)
        return data["node"] if data is not None else None

    def node(self, ref: str) -> SceneNode:
        """The node, or :class:`UnknownRefError` with close matches."""
        found = self.get(ref)
        if found is None:
            raise UnknownRefError(ref, self.suggest(ref))
        return found

    def refs(self) -> list[str]:
        return sorted(self._g.nodes)

    def nodes(self) -> Iterator[SceneNode]:
        for _, data in self._g.nodes(data="node"):
            yield data

    def objects(self) -> list[SceneNode]:
        """Every node that is not the robot or one of its parts."""
        return [node for node in self.nodes() if not node.is_robot]

    def edges(self, relation: str | None = None) -> list[SceneEdge]:
        """Every relation as a record, sorted."""
        records = [
            SceneEdge(
                source=u,
                relation=key,
                target=v,
                origin=data["origin"],
                since=data["since"],
                distance_m=data.get("distance"),
            )
            for u, v, key, data in self._g.edges(keys=True, data=True)
            if relation is None or key == relation
        ]
        records.sort(key=lambda edge: edge.key)
        return records

    def robot(self) -> RobotView:
        gripper = self.get(GRIPPER_REF)
        if gripper is None:
            return RobotView(holding=self.held())
        return RobotView(
            gripper=gripper.position, gripper_open=gripper.is_open, holding=self.held()
        )

    def held(self) -> list[str]:
        """Refs of held objects."""
        self._holders &= self._g.nodes.keys()
        return sorted(
            v
            for holder in self._holders
            for _, v, key in self._g.out_edges(holder, keys=True)
            if key == "holding"
        )

    def relations_of(self, ref: str) -> dict[str, Any]:
        """One node's relations, read both ways, with stable keys.

        ``on`` / ``in`` / ``held_by``: a ref; ``supports`` / ``contains`` / ``holding``: refs
        sorted; ``near``: refs closest first. Only relations that exist appear.
        """
        self.node(ref)
        out: dict[str, Any] = {}
        near: list[tuple[float, str]] = []
        for _, target, key, data in self._g.out_edges(ref, keys=True, data=True):
            if key == "on":
                out["on"] = target
            elif key == "inside":
                out["in"] = target
            elif key == "holding":
                out.setdefault("holding", []).append(target)
            elif key == "near":
                near.append((data.get("distance") or 0.0, target))
            elif key == "part_of":
                out["part_of"] = target
        for source, _, key in self._g.in_edges(ref, keys=True):
            if key == "on":
                out.setdefault("supports", []).append(source)
            elif key == "inside":
                out.setdefault("contains", []).append(source)
            elif key == "holding":
                out["held_by"] = source
        for key in ("holding", "supports", "contains"):
            if key in out:
                out[key].sort()
        if near:
            out["near"] = [target for _, target in sorted(near)]
        return out

    def relation_origins(self, ref: str) -> dict[str, str]:
        """Who asserted each of a node's outgoing relations (``{"on": "geometry"}``)."""
        self.node(ref)
        origins: dict[str, str] = {}
        for _, _, key, data in self._g.out_edges(ref, keys=True, data=True):
            name = "in" if key == "inside" else key
            origins.setdefault(name, data["origin"])
        for _, _, key, data in self._g.in_edges(ref, keys=True, data=True):
            if key == "holding":
                origins["held_by"] = data["origin"]
        return origins

    def body(self, node: SceneNode) -> Body:
        """The node's axis-aligned box, as the relation rules see it."""
        size = node.size or (self.tolerances.assumed_size_m,) * 3
        x, y, z = node.position
        dx, dy, dz = (s / 2 for s in size)
        return Body(
            ref=node.ref,
            lo=(x - dx, y - dy, z - dz),
            hi=(x + dx, y + dy, z + dz),
            sized=node.size is not None,
            container=node.category == "container" or node.attributes.get("container") is True,
            surface=node.category == "surface",
        )

    def suggest(self, text: str, n: int = 5) -> list[str]:
        """Refs a mistyped ref or a label probably meant: objects whose label ``text``
        names ("red cube"), then refs spelled alike ("red_cub_1")."""
        by_label = sorted(node.ref for node in self.objects() if label_matches(text, node))
        fuzzy = difflib.get_close_matches(slug(text), self.refs(), n=n, cutoff=0.5)
        return list(dict.fromkeys([*by_label, *fuzzy]))[:n]

    # ================================================================== writing

    def _write(self, ref: str, values: dict[str, Any], *, provenance: Provenance) -> None:
        """Create or update one node; field changes below display resolution are ignored
        (a deadband, so sensor noise neither creeps nor floods the change log)."""
        node = self.get(ref)
        if node is None:
            self._touch(ref)
            node = SceneNode(
                ref=ref,
                provenance=provenance,
                first_seen=self.now,
                last_seen=self.now,
                changed_at=self.now,
                **values,
            )
            self._g.add_node(ref, node=node)
            self._used_refs.add(ref)
            self._dirty = True
            return
        fields = value_changes(node, values)
        if fields or node.stale:
            self._touch(ref)
        for name, (_, new) in fields.items():
            setattr(node, name, new)
        if fields:
            node.changed_at = self.now
            if _GEOMETRY_FIELDS & fields.keys():
                self._dirty = True
        node.provenance = provenance
        node.last_seen = max(node.last_seen, self.now)
        node.stale = False

    def _drop_asserted(self, ref: str, *, origins: Sequence[str]) -> None:
        if ref not in self._asserted:
            return
        doomed = [
            (u, v, key)
            for u, v, key, origin in self._g.out_edges(ref, keys=True, data="origin")
            if origin in origins
        ]
        doomed += [
            (u, v, key)
            for u, v, key, origin in self._g.in_edges(ref, keys=True, data="origin")
            if origin in origins and key in ("holding", "near")
        ]
        for u, v, key in doomed:
            self._g.remove_edge(u, v, key)
            self._dirty = True

    # ================================================================== relations

    def _set_edge(
        self,
        source: str,
        relation: RelationName,
        target: str,
        origin: EdgeOrigin,
        distance: float | None = None,
    ) -> None:
        existing = self._g.get_edge_data(source, target, relation)
        if existing is not None and existing["origin"] == origin:
            existing["distance"] = distance
            return
        self._g.add_edge(
            source, target, key=relation, origin=origin, since=self.now, distance=distance
        )
        if relation == "holding":
            self._holders.add(source)
        if origin != "geometry":
            self._asserted.update((source, target))
            self._dirty = True

    def _recompute(self) -> None:
        """Recompute geometric relations if anything that affects them changed."""
        if not self._dirty:
            return
        self._dirty = False
        asserted_support: set[str] = set()
        asserted_pairs: set[tuple[str, str]] = set()
        held: set[str] = set()
        old: dict[tuple[str, str, str], dict[str, Any]] = {}
        for u, v, key, data in self._g.edges(keys=True, data=True):
            if data["origin"] == "geometry":
                old[(u, key, v)] = data
            elif key in ("on", "inside"):
                asserted_support.add(u)
                asserted_pairs.add((u, v))
            if key == "holding" and data["origin"] != "geometry":
                held.add(v)

        asserted_support |= self._supports_stated & self._g.nodes.keys()
        bodies = [
            self.body(node) for node in self.nodes() if not node.is_robot and node.frame == "world"
        ]
        new: dict[tuple[str, str, str], float] = {}
        gripper = self.get(GRIPPER_REF)
        if (
            gripper is not None
            and gripper.is_open is False
            and not held
            and not self._holding_known
        ):
            grasp = grasped_body(bodies, GRIPPER_REF, gripper.position, self.tolerances)
            if grasp is not None:
                new[(grasp.source, grasp.relation, grasp.target)] = grasp.distance_m
                held.add(grasp.target)
        bodies = [body._replace(held=body.ref in held) for body in bodies]
        for rel in compute_relations(
            bodies,
            self.tolerances,
            fixed_support=frozenset(asserted_support),
            fixed_pairs=frozenset(asserted_pairs),
        ):
            new[(rel.source, rel.relation, rel.target)] = rel.distance_m

        for u, key, v in old:
            if (u, key, v) not in new:
                self._g.remove_edge(u, v, key)
                self._mark_relation_change(u, key)
        for (u, key, v), distance in new.items():
            existing = self._g.get_edge_data(u, v, key)
            if existing is not None:
                existing["distance"] = distance
                continue
            self._g.add_edge(u, v, key=key, origin="geometry", since=self.now, distance=distance)
            if key == "holding":
                self._holders.add(u)
            self._mark_relation_change(u, key)

    def _mark_relation_change(self, source: str, relation: str) -> None:
        if relation in ("on", "inside"):
            self.node(source).changed_at = self.now

    # ================================================================== records

    def _touch(self, ref: str) -> None:
        """Remember a node as it was before its first change since the last take."""
        if ref not in self._before:
            node = self.get(ref)
            self._before[ref] = node.model_copy(deep=True) if node is not None else None

    def _raw_edges(self) -> dict[tuple[str, str, str], tuple[str, float, float | None]]:
        return {
            (u, key, v): (data["origin"], data["since"], data.get("distance"))
            for u, v, key, data in self._g.edges(keys=True, data=True)
        }

    def take_changes(self) -> SceneDiff:
        """What changed since the previous call (everything, the first time)."""
        edges = self._raw_edges()
        old_edges, self._edges_at_take = self._edges_at_take, edges
        before_nodes = [node for node in self._before.values() if node is not None]
        after_nodes = [
            node.model_copy(deep=True)
            for ref in self._before
            if (node := self.get(ref)) is not None
        ]
        before = SceneSnapshot(
            time=self._take_time if self._take_time is not None else self.now,
            nodes=before_nodes,
            edges=[_edge(k, v) for k, v in old_edges.items() if k not in edges],
        )
        after = SceneSnapshot(
            time=self.now,
            nodes=after_nodes,
            edges=[_edge(k, v) for k, v in edges.items() if k not in old_edges],
        )
        first = self._take_time is None
        self._before = {}
        self._take_time = self.now
        result = diff(before, after)
        return result.model_copy(update={"time_before": None}) if first else result


# ====================================================================== helpers


def _edge(key: tuple[str, str, str], value: tuple[str, float, float | None]) -> SceneEdge:
    (source, relation, target), (origin, since, distance) = key, value
    return SceneEdge(
        source=source,
        relation=relation,  # type: ignore[arg-type]
        target=target,
        origin=origin,  # type: ignore[arg-type]
        since=since,
        distance_m=distance,
    )
