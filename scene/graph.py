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

import difflib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field

from scene.association import Candidate, Query, associate
from scene.frames import Placed, place_in_world
from scene.geometry import Body, RelationTolerances, compute_relations, grasped_body
from scene.nodes import (
    GRIPPER_REF,
    ROBOT_REF,
    EdgeOrigin,
    RelationName,
    SceneEdge,
    SceneNode,
    Vec3,
    display_label,
    label_matches,
    label_words,
    slug,
)
from scene.perception import Detection, Perception, Provenance
from scene.robot import RobotState, RobotView, read_robot_state
from scene.snapshot import SceneDiff, SceneSnapshot, diff, value_changes

__all__ = ["SceneGraph", "UnknownRefError", "UpdateReport"]

_RELATION_ALIASES: dict[str, RelationName] = {
    "on": "on",
    "on_top_of": "on",
    "in": "inside",
    "inside": "inside",
    "near": "near",
    "holding": "holding",
}
_HELD_ALIASES = frozenset({"held", "held_by", "in_gripper"})
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


class UpdateReport(BaseModel):
    """What one update did (for tests, logs and the adapter's notes)."""

    model_config = ConfigDict(extra="forbid")

    time: float
    detections: int = 0
    matched_by_ref: list[str] = Field(default_factory=list)
    matched_by_label: list[str] = Field(default_factory=list)
    created: list[str] = Field(default_factory=list)
    rejected: list[str] = Field(default_factory=list)
    """Detections or state entries that could not be used, with the reason."""
    newly_stale: list[str] = Field(default_factory=list)
    perception_error: str | None = None


class SceneGraph:
    """The scene graph (see the module docstring).

    Args:
        perception: Turns observations into detections; None leaves objects to explicit
            :meth:`apply` calls and confirmations (the robot state still updates).
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
        self._g: nx.MultiDiGraph = nx.MultiDiGraph()
        self._used_refs: set[str] = set()
        self._counters: dict[str, int] = {}
        self._dirty = False
        self._holding_known = False
        self._holders: set[str] = set()
        """Sources of holding edges (so held() need not scan every edge)."""
        self._asserted: set[str] = set()
        """Nodes that may have non-geometry edges (so an update need not scan every node's)."""
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

    # ================================================================== updating

    def update(self, observation: Any) -> UpdateReport:
        """Perceive ``observation`` and apply what was seen plus the robot state.

        A perception failure does not stop the update: the robot state and staleness still
        apply, and the failure is in ``report.perception_error``.
        """
        detections: list[Detection] = []
        error: str | None = None
        if self.perception is not None:
            try:
                detections = list(self.perception.perceive(observation))
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
        report = self.apply(
            detections,
            timestamp=float(getattr(observation, "timestamp", self.now)),
            state=getattr(observation, "state", None) or {},
        )
        report.perception_error = error
        return report

    def apply(
        self,
        detections: Iterable[Detection],
        *,
        timestamp: float,
        state: Mapping[str, Any] | None = None,
    ) -> UpdateReport:
        """Apply detections (and robot state) observed at ``timestamp``."""
        self.now = float(timestamp)
        state = state or {}
        detections = list(detections)
        report = UpdateReport(time=self.now, detections=len(detections))
        resolved, problems = place_in_world(detections, state)
        report.rejected.extend(problems)

        seen: dict[str, Detection] = {}
        unmatched: list[Placed] = []
        for placed in resolved:
            det = placed.detection
            if det.ref:
                ref = slug(det.ref)
                if ref in seen:
                    report.rejected.append(f"{ref}: detected twice in one observation")
                    continue
                if ref in self._g:
                    report.matched_by_ref.append(ref)
                else:
                    report.created.append(ref)
                self._upsert(ref, placed)
                seen[ref] = det
            else:
                unmatched.append(placed)
        if unmatched:
            self._associate(unmatched, seen, report)

        self._apply_asserted_relations(seen, report)
        robot, problems = read_robot_state(state)
        report.rejected.extend(problems)
        self._apply_robot_state(robot, report)
        # What is held is known when the state says so or perception saw the gripper
        # (and so asserted whatever it holds); only otherwise may geometry guess.
        self._holding_known = robot.holding is not None or GRIPPER_REF in seen
        self._follow_held(seen)
        self._mark_stale(report)
        self._recompute()
        return report

    def _associate(
        self,
        unmatched: list[Placed],
        seen: dict[str, Detection],
        report: UpdateReport,
    ) -> None:
        queries = [
            Query(_base_label(p.detection), _colour(p.detection.color), p.position)
            for p in unmatched
        ]
        candidates = (
            Candidate(node.ref, node.label, node.color, node.position)
            for node in self.nodes()
            if node.ref not in seen
        )
        matches = associate(queries, candidates, gate_m=self.association_gate_m)
        for placed, match in zip(unmatched, matches, strict=True):
            det = placed.detection
            if match is None:
                ref = self._new_ref(display_label(_base_label(det), _colour(det.color)))
                report.created.append(ref)
            else:
                ref = match
                report.matched_by_label.append(ref)
            self._upsert(ref, placed)
            seen[ref] = det

    def _new_ref(self, label: str) -> str:
        base = slug(label)
        n = self._counters.get(base, 0)
        while True:
            n += 1
            ref = f"{base}_{n}"
            if ref not in self._used_refs:
                self._counters[base] = n
                return ref

    def _upsert(self, ref: str, placed: Placed) -> None:
        det = placed.detection
        values: dict[str, Any] = {
            "label": _base_label(det),
            "category": det.category,
            "color": _colour(det.color),
            "attributes": dict(det.attributes),
            "position": tuple(placed.position),
            "orientation": placed.orientation,
            "frame": placed.frame,
            "confidence": det.confidence,
        }
        if det.size is not None:
            values["size"] = tuple(det.size)
        if det.is_open is not None:
            values["is_open"] = det.is_open
        self._write(ref, values, provenance=det.provenance)

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

    def _apply_asserted_relations(self, seen: dict[str, Detection], report: UpdateReport) -> None:
        """A fresh observation replaces what perception or the evaluator asserted before
        about the objects seen; then what these detections assert is added (in two passes,
        so one detection's assertion is never dropped by another's refresh)."""
        for ref in seen:
            self._drop_asserted(ref, origins=("perception", "evaluator", "user"))
        for ref, det in seen.items():
            origin: EdgeOrigin = "user" if det.provenance == "user" else "perception"
            for relation, target in det.relations:
                name = relation.strip().lower()
                target_ref = slug(target) if target else GRIPPER_REF
                if target_ref not in self._g or target_ref == ref:
                    report.rejected.append(f"{ref}: {relation} {target!r}: no such object")
                    continue
                if name in _HELD_ALIASES:
                    self._set_edge(target_ref, "holding", ref, origin)
                elif name in _RELATION_ALIASES:
                    key = _RELATION_ALIASES[name]
                    self._set_edge(ref, key, target_ref, origin)
                    if key == "near":
                        self._set_edge(target_ref, "near", ref, origin)
                else:
                    report.rejected.append(f"{ref}: unknown relation {relation!r}")

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

    def _apply_robot_state(self, robot: RobotState, report: UpdateReport) -> None:
        values: dict[str, Any] = {}
        if robot.ee_position is not None:
            values = {
                "label": "gripper",
                "category": "robot_part",
                "position": robot.ee_position,
                "orientation": robot.ee_orientation,
            }
        if robot.gripper_open is not None:
            values["is_open"] = robot.gripper_open
        if "position" in values or (values and GRIPPER_REF in self._g):
            self._write(GRIPPER_REF, values, provenance="ground_truth")
        if robot.base_position is not None:
            self._write(
                ROBOT_REF,
                {"label": "robot", "category": "robot", "position": robot.base_position},
                provenance="ground_truth",
            )
            if GRIPPER_REF in self._g:
                self._set_edge(GRIPPER_REF, "part_of", ROBOT_REF, "state")
        if robot.holding is None or GRIPPER_REF not in self._g:
            return
        for _, target, key in list(self._g.out_edges(GRIPPER_REF, keys=True)):
            if key == "holding" and target not in robot.holding:
                self._g.remove_edge(GRIPPER_REF, target, "holding")
                self._dirty = True
        for ref in robot.holding:
            if ref in self._g:
                self._set_edge(GRIPPER_REF, "holding", ref, "state")
            else:
                report.rejected.append(f"holding: {ref!r} is not a known object")

    def _follow_held(self, seen: Mapping[str, Detection]) -> None:
        gripper = self.get(GRIPPER_REF)
        if gripper is None:
            return
        for ref in self.held():
            if ref not in seen:
                self._write(
                    ref, {"position": gripper.position}, provenance=self.node(ref).provenance
                )

    def _mark_stale(self, report: UpdateReport) -> None:
        for node in self.nodes():
            stale = self.now - node.last_seen > self.stale_after_s
            if stale != node.stale:
                self._touch(node.ref)
                node.stale = stale
                if stale:
                    report.newly_stale.append(node.ref)

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


def _colour(color: str | None) -> str | None:
    words = label_words(color or "")
    return " ".join(words) if words else None


def _base_label(det: Detection) -> str:
    """The label without a leading colour word (the colour is its own field)."""
    words = label_words(det.label)
    colour = label_words(det.color or "")
    if colour and words[: len(colour)] == colour and len(words) > len(colour):
        words = words[len(colour) :]
    return " ".join(words) or "thing"
