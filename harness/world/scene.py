"""The scene graph as the loop sees it: a :class:`SceneProvider` plus the model's query tools.

:class:`SceneAdapter` updates the :class:`scene.SceneGraph` from each observation, renders
the bounded Brief with the harness's token estimator, reports what changed as a
``scene_update`` event (with the JSON diff, and a full snapshot on the first update and
every ``scene.snapshot_interval``-th, so the run store can rebuild the scene at any turn),
applies evaluator-confirmed outcomes at once, and offers three tools:

- ``find_objects(label, attribute, near, within_m, include_stale, limit)``: a JSON list of
  ``{"ref", "label", "position", "relations", ...}``.
- ``get_object_relations(ref, relation)``: one object's relations, read both ways.
- ``get_object_image(ref, camera)``: a crop around the object from the latest observation's
  frame (projected with ``state["cameras"]``; see :mod:`scene.camera`), sent as a transient
  image; the whole frame, with a note saying why, when the object cannot be projected.

Unknown refs give an error result listing close matches. The ``scene`` package never
imports the harness; this module is the only bridge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from embodiment.types import Observation
from harness.config import ObservationConfig, SceneConfig
from harness.events import SceneUpdateEvent
from harness.images import encode_frame
from harness.messages import Verdict
from harness.protocols import SceneRefresh
from harness.tokens import TokenEstimator
from harness.tools import Tool, ToolOutput, close_matches
from scene.brief import render_brief
from scene.camera import crop_frame, parse_cameras, project_box
from scene.graph import SceneGraph, UnknownRefError
from scene.nodes import SceneNode
from scene.query import find_objects

__all__ = ["SceneAdapter"]


_OBJECT_KEYS = ("ref", "object", "object_ref", "obj", "item")
_TARGET_KEYS: dict[str, Literal["on", "inside"] | None] = {
    "in": "inside",
    "into": "inside",
    "inside": "inside",
    "container": "inside",
    "on": "on",
    "onto": "on",
    "surface": "on",
    "target": None,
    "destination": None,
}


# ====================================================================== tool arguments


class FindObjectsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str | None = Field(
        None, description='Words of the label, e.g. "cube", "red cube", "trays" (or a ref).'
    )
    attribute: str | None = Field(
        None,
        description='Comma-separated terms that must all hold: a colour ("red"), a category '
        '("container"), "open"/"closed", "held", "stale"/"fresh", or "name=value".',
    )
    near: str | None = Field(None, description="Ref of an object: only objects close to it.")
    within_m: float | None = Field(
        None, gt=0, le=10, description="Largest gap (metres) for `near`; default: near tolerance."
    )
    include_stale: bool = Field(True, description="Include objects not seen recently.")
    limit: int = Field(25, ge=1, le=200, description="Most results to return.")


class ObjectRelationsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref: str = Field(description="The object's ref, e.g. red_cube_1.")
    relation: Literal["on", "in", "contains", "supports", "near", "held_by", "holding"] | None = (
        Field(None, description="Only this relation (default: all).")
    )


class ObjectImageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref: str = Field(description="The object's ref, e.g. red_cube_1.")
    camera: str | None = Field(
        None, description="Camera name; default: the camera that sees the object largest."
    )


# ====================================================================== adapter


class SceneAdapter:
    """Implements :class:`harness.protocols.SceneProvider` over a :class:`SceneGraph`.

    Args:
        graph: The working scene graph (with its perception).
        config: The ``scene`` section (budget, recency, confirmations, snapshots).
        estimate: Tokens of a text; defaults to the harness's character-based estimator.
        images: How crops are encoded (the ``observation`` section).
    """

    def __init__(
        self,
        graph: SceneGraph,
        *,
        config: SceneConfig | None = None,
        estimate: Callable[[str], int] | None = None,
        images: ObservationConfig | None = None,
    ) -> None:
        self.graph = graph
        self.config = config or SceneConfig()
        self.estimate = estimate or TokenEstimator().text
        self.images = images or ObservationConfig()
        self.observation: Observation | None = None
        self.last_targets: list[str] = []
        self._events = 0
        self._warnings: list[str] = []

    # ------------------------------------------------------------------ SceneProvider

    def refresh(self, observation: Observation | None, *, focus: str) -> SceneRefresh:
        notes: list[str] = []
        warnings = self._warnings
        self._warnings = []
        if observation is not None:
            self.observation = observation
            report = self.graph.update(observation)
            if report.perception_error:
                notes.append(
                    f"perception failed this turn ({report.perception_error}); "
                    "positions may be out of date"
                )
            warnings.extend(report.rejected)
        brief = render_brief(
            self.graph,
            max_tokens=self.config.brief_max_tokens,
            estimate=self.estimate,
            focus=focus,
            last_targets=self.last_targets,
            recent_s=self.config.recent_change_s,
            notes=notes,
        )
        changes = self.graph.take_changes()
        warnings = notes + warnings
        if changes.empty and not warnings and self._events > 0:
            return SceneRefresh(brief=brief.text)
        interval = self.config.snapshot_interval
        with_snapshot = self._events == 0 or (interval > 0 and self._events % interval == 0)
        self._events += 1
        event = SceneUpdateEvent(
            added=[node.ref for node in changes.added],
            removed=changes.removed,
            changed=changes.changed_refs(),
            stale=changes.stale,
            objects=len(self.graph.objects()),
            brief_tokens=brief.tokens,
            diff=changes.model_dump(mode="json"),
            snapshot=self.graph.snapshot().model_dump(mode="json") if with_snapshot else None,
            warnings=warnings,
        )
        return SceneRefresh(brief=brief.text, event=event)

    def tools(self) -> list[Tool]:
        return [
            Tool(
                "find_objects",
                "Search the scene graph (everything the robot knows, including objects the "
                "Brief left out). Returns a JSON list of objects, most relevant first: "
                '{"ref", "label", "position": [x, y, z], "relations": {...}, "size", '
                '"confidence", "stale", "seen_s_ago", ...}. Filters combine.',
                self._find_objects,
                input_model=FindObjectsArgs,
                source="scene",
                optional="scene queries",
            ),
            Tool(
                "get_object_relations",
                "One object's relations as JSON: on, in, contains, supports, near, held_by, "
                "holding, and who asserted each (geometry, perception, evaluator, state).",
                self._object_relations,
                input_model=ObjectRelationsArgs,
                source="scene",
                optional="scene queries",
            ),
            Tool(
                "get_object_image",
                "Look closely at one object: a crop around it from the latest camera image "
                "(shown to you on the next turn only).",
                self._object_image,
                input_model=ObjectImageArgs,
                source="scene",
                optional="scene queries",
            ),
        ]

    def on_verdict(self, tool: str, arguments: Mapping[str, Any], verdict: Verdict) -> None:
        kind = self.config.confirm_tools.get(tool)
        if kind is None:
            return
        graph = self.graph
        obj = _known_ref(graph, arguments, _OBJECT_KEYS)
        target, relation = _target(graph, arguments)
        self.last_targets = [ref for ref in (obj, target) if ref]
        if verdict.status != "success":
            return
        try:
            if kind == "pick":
                if obj is not None:
                    graph.confirm_pick(obj)
            elif kind == "place":
                held = graph.held()
                obj = obj or (held[0] if len(held) == 1 else None)
                if obj is not None:
                    graph.confirm_place(
                        obj, target=target, relation=relation, position=_position(arguments)
                    )
                    self.last_targets = [ref for ref in (obj, target) if ref]
            elif kind == "release":
                graph.confirm_release()
            elif obj is not None:
                graph.confirm_open(obj, kind == "open")
        except UnknownRefError as exc:
            self._warnings.append(f"evaluator-confirmed {tool}: {exc}")

    # ------------------------------------------------------------------ tools

    def _unknown(self, exc: UnknownRefError) -> ToolOutput:
        graph = self.graph
        matches = list(dict.fromkeys([*exc.suggestions, *close_matches(exc.ref, graph.refs())]))
        if matches:
            hint = f"; close matches: {', '.join(matches[:5])}"
        else:
            known = [node.ref for node in graph.objects()]
            shown = ", ".join(sorted(known)[:8]) or "none"
            hint = f"; known objects ({len(known)}): {shown}; use find_objects"
        return ToolOutput.error(f"unknown object {exc.ref!r}{hint}", "unknown_ref")

    def describe(self, node: SceneNode, *, distance: float | None = None) -> dict[str, Any]:
        """The JSON record of one object (``find_objects`` items)."""
        record: dict[str, Any] = {
            "ref": node.ref,
            "label": node.display_label,
            "category": node.category,
            "position": [round(v, 3) for v in node.position],
            "relations": self.graph.relations_of(node.ref),
        }
        if node.size is not None:
            record["size"] = [round(v, 3) for v in node.size]
        if node.color:
            record["color"] = node.color
        if node.is_open is not None:
            record["open"] = node.is_open
        if node.attributes:
            record["attributes"] = node.attributes
        if node.frame != "world":
            record["frame"] = node.frame
        if distance is not None:
            record["distance_m"] = round(distance, 3)
        record["confidence"] = round(node.confidence, 2)
        record["stale"] = node.stale
        record["seen_s_ago"] = round(max(0.0, self.graph.now - node.last_seen), 1)
        record["provenance"] = node.provenance
        return record

    def _find_objects(
        self,
        label: str | None = None,
        attribute: str | None = None,
        near: str | None = None,
        within_m: float | None = None,
        include_stale: bool = True,
        limit: int = 25,
    ) -> ToolOutput:
        try:
            found = find_objects(
                self.graph,
                label=label,
                attribute=attribute,
                near=near,
                within_m=within_m,
                include_stale=include_stale,
            )
        except UnknownRefError as exc:
            return self._unknown(exc)
        records = [self.describe(node, distance=gap) for node, gap in found[:limit]]
        return ToolOutput(data=records)

    def _object_relations(self, ref: str, relation: str | None = None) -> ToolOutput:
        try:
            node = self.graph.node(ref)
        except UnknownRefError as exc:
            return self._unknown(exc)
        relations = self.graph.relations_of(ref)
        origins = self.graph.relation_origins(ref)
        if relation is not None:
            relations = {relation: relations.get(relation)}
            origins = {k: v for k, v in origins.items() if k == relation}
        return ToolOutput(
            data={
                "ref": node.ref,
                "label": node.display_label,
                "relations": relations,
                "origins": origins,
            }
        )

    def _object_image(self, ref: str, camera: str | None = None) -> ToolOutput:
        try:
            node = self.graph.node(ref)
        except UnknownRefError as exc:
            return self._unknown(exc)
        observation = self.observation
        if observation is None or not observation.images:
            return ToolOutput.error("no camera image has been observed yet", "no_image")
        if camera is not None and camera not in observation.images:
            matches = close_matches(camera, observation.images) or sorted(observation.images)
            return ToolOutput.error(
                f"unknown camera {camera!r}; cameras: {', '.join(matches)}", "unknown_camera"
            )
        names = [camera] if camera is not None else sorted(observation.images)
        calibrations, problems = parse_cameras(observation.state)
        body = self.graph.body(node)
        best: tuple[int, str, tuple[int, int, int, int]] | None = None
        for name in names:
            calibration = calibrations.get(name)
            if calibration is None or node.frame != "world":
                continue
            height, width = observation.images[name].shape[:2]
            box = project_box(calibration, body.lo, body.hi, width, height)
            if box is None:
                continue
            area = (box[2] - box[0]) * (box[3] - box[1])
            if best is None or (-area, name) < (-best[0], best[1]):
                best = (area, name, box)
        where = (
            f"{node.ref} ({node.display_label}) at ({', '.join(f'{v:.3f}' for v in node.position)})"
        )
        if node.stale:
            where += f", last seen {self.graph.now - node.last_seen:.1f}s ago"
        if best is not None:
            _, name, box = best
            frame = observation.images[name]
            crop = crop_frame(frame, box)
            text = (
                f"{where}: crop of camera {name!r}, pixels x {box[0]}..{box[2]}, "
                f"y {box[1]}..{box[3]} of {frame.shape[1]}x{frame.shape[0]}"
            )
            return self._image_output(text, crop, f"{node.ref} ({name})")
        name = names[0]
        if node.frame != "world":
            reason = f"its position is in frame {node.frame!r}, not world"
        elif name in problems or (camera is None and problems):
            reason = "; ".join(problems.values())
        elif not any(n in calibrations for n in names):
            reason = "the observation has no camera calibration (state['cameras'])"
        else:
            reason = "it projects outside the camera's view"
        text = f"{where}: cannot crop ({reason}); showing the whole frame of camera {name!r}"
        return self._image_output(text, observation.images[name], f"{name} (whole frame)")

    def _image_output(self, text: str, frame: Any, label: str) -> ToolOutput:
        image = encode_frame(
            frame,
            label=label,
            fmt=self.images.image_format,
            quality=self.images.jpeg_quality,
            max_side=self.images.max_image_side,
        )
        return ToolOutput(text=text, images=[image])


# ====================================================================== helpers


def _known_ref(
    graph: SceneGraph, arguments: Mapping[str, Any], keys: tuple[str, ...]
) -> str | None:
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value in graph:
            return value
    return None


def _target(
    graph: SceneGraph, arguments: Mapping[str, Any]
) -> tuple[str | None, Literal["on", "inside"] | None]:
    explicit = str(arguments.get("relation") or "").lower()
    relation: Literal["on", "inside"] | None = (
        "inside"
        if explicit in ("in", "inside", "into")
        else "on"
        if explicit in ("on", "onto")
        else None
    )
    for key, implied in _TARGET_KEYS.items():
        value = arguments.get(key)
        if isinstance(value, str) and value in graph:
            return value, relation or implied
    return None, relation


def _position(arguments: Mapping[str, Any]) -> tuple[float, float, float] | None:
    try:
        if all(key in arguments for key in ("x", "y", "z")):
            return (float(arguments["x"]), float(arguments["y"]), float(arguments["z"]))
        value = arguments.get("position")
        if value is not None:
            x, y, z = (float(v) for v in value)
            return (x, y, z)
    except (TypeError, ValueError):
        return None
    return None
