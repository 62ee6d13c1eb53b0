"""Folding an observation into the scene graph: perception's detections matched to known
nodes by ref, or by label and distance (:mod:`scene.association`), new nodes with fresh
refs, relations perception asserted, the robot's own state (gripper, what it holds), a held
object carried along, and nodes not seen for a while marked stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scene.association import Candidate, Query, associate
from scene.frames import Placed, place_in_world
from scene.graph_state import GraphState
from scene.nodes import (
    GRIPPER_REF,
    ROBOT_REF,
    EdgeOrigin,
    RelationName,
    display_label,
    label_words,
    slug,
)
from scene.perception import Detection
from scene.robot import RobotState, read_robot_state

__all__ = ["ObservingGraph", "UpdateReport"]

_RELATION_ALIASES: dict[str, RelationName] = {
    "on": "on",
    "on_top_of": "on",
    "in": "inside",
    "inside": "inside",
    "near": "near",
    "holding": "holding",
}
_HELD_ALIASES = frozenset({"held", "held_by", "in_gripper"})


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


class ObservingGraph(GraphState):
    """A scene graph that takes observations (``update``) and explicit detections (``apply``)."""

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

    def _apply_asserted_relations(self, seen: dict[str, Detection], report: UpdateReport) -> None:
        """A fresh observation replaces what perception or the evaluator asserted before
        about the objects seen; then what these detections assert is added (in two passes,
        so one detection's assertion is never dropped by another's refresh). Whether a
        detection named all its supports is replaced likewise."""
        for ref in seen:
            self._drop_asserted(ref, origins=("perception", "evaluator", "user"))
        stated = {ref for ref, det in seen.items() if det.supports_stated}
        if stated ^ (self._supports_stated & seen.keys()):
            self._dirty = True
        self._supports_stated = (self._supports_stated - seen.keys()) | stated
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


# ====================================================================== helpers


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
