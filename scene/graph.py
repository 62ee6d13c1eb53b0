"""The working scene graph: what the robot currently believes about the world.

A networkx ``MultiDiGraph`` whose nodes carry a typed :class:`SceneNode` and whose edges are
keyed by relation (``on``, ``inside``, ``holding``, ``near``, ``part_of``). It changes in
three ways:

1. :meth:`SceneGraph.update` asks the :class:`Perception` for detections in the latest
   observation. A detection with a ref updates that node; one without is associated with a
   known node by label and distance (:mod:`scene.association`), or becomes a new node
   with a fresh ref (``red_cube_3``; refs are never reused). Nodes not observed for
   ``stale_after_s`` are marked stale, never silently deleted.
2. The robot's own state (``Observation.state``) places the gripper and says what it holds:
   ``ee_position`` [x, y, z], optional ``ee_orientation`` (x, y, z, w), ``gripper_open``
   (bool), ``holding`` (a ref, a list of refs, or None; authoritative when present) and
   optional ``base_position``. ``frames`` and ``cameras`` declare coordinate frames (see
   :mod:`scene.frames` and :mod:`scene.camera`). A held object that perception does not
   see moves with the gripper.
3. Confirmed outcomes (:meth:`confirm_pick`, :meth:`confirm_place`, ...) update the graph
   at once, before the next observation, e.g. when ``evaluate_run`` says a place succeeded.

Relations are recomputed geometrically after every change (:mod:`scene.geometry`), except
where perception, the evaluator, the robot state or a user asserted them: an asserted
relation stands until the object is observed again. Changes are logged between calls to
:meth:`take_changes`, which returns them as a :class:`SceneDiff`.
"""

from __future__ import annotations

from typing import Any, Literal

from scene.graph_state import GraphState, UnknownRefError
from scene.nodes import GRIPPER_REF, SceneNode, Vec3
from scene.observing import ObservingGraph, UpdateReport
from scene.snapshot import SceneSnapshot

__all__ = ["GraphState", "SceneGraph", "UnknownRefError", "UpdateReport"]


class SceneGraph(ObservingGraph):
    """The scene graph (see the module docstring): the state and its reads
    (:class:`scene.graph_state.GraphState`), observations (:mod:`scene.observing`), and here
    the outcomes the evaluator confirmed and the snapshot records.

    Args:
        perception: Turns observations into detections; None leaves objects to explicit
            :meth:`apply` calls and confirmations (the robot state still updates).
        tolerances: Geometric relation tolerances.
        stale_after_s: Seconds without an observation after which a node is stale.
        association_gate_m: Largest centre distance at which a ref-less detection can be
            the same object as a known node.
    """

    # ================================================================== confirmations

    def confirm_pick(
        self, ref: str, *, holder: str = GRIPPER_REF, timestamp: float | None = None
    ) -> None:
        """An evaluator confirmed ``holder`` grasped ``ref``: it is held from now on."""
        node = self.node(ref)
        self._confirm_begin(timestamp)
        self._drop_asserted(ref, origins=("perception", "evaluator", "user"))
        for source, _, key in list(self._g.in_edges(ref, keys=True)):
            if key == "holding":
                self._g.remove_edge(source, ref, "holding")
        if holder in self._g:
            self._set_edge(holder, "holding", ref, "evaluator")
            self._write(holder, {"is_open": False}, provenance=self.node(holder).provenance)
            self._write(ref, {"position": self.node(holder).position}, provenance="evaluator")
        else:
            self._write(ref, {"position": node.position}, provenance="evaluator")
        self._dirty = True
        self._recompute()

    def confirm_place(
        self,
        ref: str,
        *,
        target: str | None = None,
        relation: Literal["on", "inside"] | None = None,
        position: Vec3 | None = None,
        timestamp: float | None = None,
    ) -> None:
        """An evaluator confirmed ``ref`` was placed (on or in ``target``, or at
        ``position``): it is released, and rests there until observed again.

        Without a position, the object is put at the target's centre (on its top, or on its
        floor when inside): approximate, and marked ``evaluator`` until seen.
        """
        node = self.node(ref)
        target_node = self.node(target) if target is not None else None
        self._confirm_begin(timestamp)
        self._drop_asserted(ref, origins=("perception", "evaluator", "user"))
        for source, _, key in list(self._g.in_edges(ref, keys=True)):
            if key == "holding":
                self._g.remove_edge(source, ref, "holding")
        if position is None and target_node is not None:
            position = self._resting_position(node, target_node, relation)
        values: dict[str, Any] = {"position": tuple(position) if position else node.position}
        self._write(ref, values, provenance="evaluator")
        if target_node is not None:
            kind = relation or ("inside" if self.body(target_node).container else "on")
            self._set_edge(ref, kind, target_node.ref, "evaluator")
        self._dirty = True
        self._recompute()

    def confirm_release(
        self, *, holder: str = GRIPPER_REF, timestamp: float | None = None
    ) -> list[str]:
        """The gripper let go: what it held rests wherever geometry says. Returns the refs."""
        self._confirm_begin(timestamp)
        released = []
        if holder in self._g:
            for _, target, key in list(self._g.out_edges(holder, keys=True)):
                if key == "holding":
                    self._g.remove_edge(holder, target, "holding")
                    released.append(target)
            # open, so geometry does not take a closed gripper for a grasp again
            self._write(holder, {"is_open": True}, provenance=self.node(holder).provenance)
        self._dirty = bool(released) or self._dirty
        self._recompute()
        return sorted(released)

    def confirm_open(self, ref: str, is_open: bool, *, timestamp: float | None = None) -> None:
        """A container (drawer, box lid) was confirmed opened or closed."""
        self.node(ref)
        self._confirm_begin(timestamp)
        self._write(ref, {"is_open": is_open}, provenance="evaluator")
        self._recompute()

    def remove(self, ref: str) -> None:
        """Delete a node and its relations (deliberately; staleness never deletes)."""
        self.node(ref)
        self._touch(ref)
        self._g.remove_node(ref)
        self._dirty = True
        self._recompute()

    def _confirm_begin(self, timestamp: float | None) -> None:
        if timestamp is not None:
            self.now = max(self.now, float(timestamp))

    def _resting_position(self, node: SceneNode, target: SceneNode, relation: str | None) -> Vec3:
        box = self.body(target)
        half = (node.size or (self.tolerances.assumed_size_m,) * 3)[2] / 2
        inside = relation == "inside" or (relation is None and box.container)
        floor = box.lo[2] + self.tolerances.rim_m if inside else box.hi[2]
        return (target.position[0], target.position[1], floor + half)

    # ================================================================== records

    def snapshot(self) -> SceneSnapshot:
        """The whole graph as a JSON-able record (``snapshot().model_dump_json()``)."""
        nodes = sorted((node.model_copy(deep=True) for node in self.nodes()), key=lambda n: n.ref)
        return SceneSnapshot(time=self.now, nodes=nodes, edges=self.edges())

    @classmethod
    def from_snapshot(cls, snapshot: SceneSnapshot, **options: Any) -> SceneGraph:
        """Rebuild a graph from a snapshot (e.g. when a session resumes from the store)."""
        graph = cls(**options)
        graph.now = snapshot.time
        for node in snapshot.nodes:
            graph._g.add_node(node.ref, node=node.model_copy(deep=True))
            graph._used_refs.add(node.ref)
        for edge in snapshot.edges:
            if edge.source in graph._g and edge.target in graph._g:
                if edge.relation == "holding":
                    graph._holders.add(edge.source)
                if edge.origin != "geometry":
                    graph._asserted.update((edge.source, edge.target))
                graph._g.add_edge(
                    edge.source,
                    edge.target,
                    key=edge.relation,
                    origin=edge.origin,
                    since=edge.since,
                    distance=edge.distance_m,
                )
        for ref in graph._used_refs:
            base, _, number = ref.rpartition("_")
            if base and number.isdigit():
                graph._counters[base] = max(graph._counters.get(base, 0), int(number))
        graph._edges_at_take = graph._raw_edges()
        graph._take_time = graph.now
        return graph
