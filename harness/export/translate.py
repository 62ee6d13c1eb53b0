"""From events to viewer records: the one place that decides what a viewer is shown.

The recorded export (:mod:`harness.export.recorded`) and the live streams
(:mod:`harness.export.live`) both feed events through a :class:`Translator`, so a file and a
live view of the same run carry the same frames, poses, boxes and lines.

- ``observation``: each camera image (bytes looked up by hash: the run store keeps them)
  and the gripper's pose (``state.ee_position``, ``state.ee_yaw``; a mobile base's
  ``state.base_pose``);
- ``scene_update``: the scene graph's objects as boxes, tracked from the full snapshot and
  each turn's diff;
- the embodiment profile's workspace and keep-out zones as static boxes, in the world frame;
- every event a log line (:mod:`harness.export.describe`); tool calls and results, safety
  checks, hook decisions, evaluations, context usage, compaction, episodes and the outcome
  also whole (:class:`~harness.export.records.Payload`); context tokens as scalars.

Times are the events' own (the run store's ``time``), made non-decreasing so a viewer's
timeline never runs backwards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from harness.events import EventBase
from harness.export.describe import describe
from harness.export.records import Box, Boxes, Frame, LogLine, Payload, Pose, Record, Scalar
from harness.messages import ImagePart

__all__ = ["PAYLOAD_TYPES", "Translator", "profile_zones", "yaw_quaternion"]

PAYLOAD_TYPES = frozenset(
    {
        "tool_call",
        "tool_result",
        "safety_check",
        "hook_decision",
        "evaluation",
        "prompt_snapshot",
        "context_pressure",
        "compaction",
        "episode",
        "done",
    }
)
"""Event types kept whole on a channel of their own (JSON, with the event's JSON Schema)."""

_COLORS: dict[str, tuple[float, float, float]] = {
    "red": (0.9, 0.15, 0.15),
    "green": (0.15, 0.75, 0.25),
    "blue": (0.2, 0.35, 0.95),
    "yellow": (0.95, 0.85, 0.1),
    "orange": (1.0, 0.55, 0.1),
    "purple": (0.6, 0.25, 0.8),
    "white": (0.95, 0.95, 0.95),
    "black": (0.1, 0.1, 0.1),
    "gray": (0.55, 0.55, 0.55),
    "grey": (0.55, 0.55, 0.55),
    "brown": (0.55, 0.35, 0.2),
    "pink": (1.0, 0.5, 0.7),
}
_DEFAULT_COLOR = (0.6, 0.6, 0.65)
_FIXTURES = frozenset({"surface", "container"})
"""Scene categories drawn see-through (what objects stand on or in)."""
_WORKSPACE_COLOR = (0.2, 0.6, 1.0, 0.08)
_KEEP_OUT_COLOR = (1.0, 0.1, 0.1, 0.3)
_IDENTITY = (0.0, 0.0, 0.0, 1.0)

ImageLookup = Callable[[str], ImagePart | None]


def yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation by ``yaw`` radians about z."""
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def _vec3(value: Any) -> tuple[float, float, float] | None:
    if not isinstance(value, list | tuple) or len(value) != 3:
        return None
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError):
        return None
    return (x, y, z) if all(math.isfinite(v) for v in (x, y, z)) else None


def profile_zones(profile: Any) -> tuple[Box, ...]:
    """The profile's workspace and keep-out zones as world-frame boxes (a box in a frame
    turned about z keeps that turn as its rotation)."""
    if profile is None:
        return ()
    boxes = [_profile_box(profile, profile.workspace, "workspace", "workspace")]
    for zone in profile.keep_out:
        boxes.append(_profile_box(profile, zone, f"keep_out/{zone.name}", "keep_out"))
    return tuple(boxes)


def _profile_box(profile: Any, box: Any, box_id: str, kind: Any) -> Box:
    centre = tuple((low + high) / 2 for low, high in zip(box.min, box.max, strict=True))
    size = tuple(high - low for low, high in zip(box.min, box.max, strict=True))
    _, yaw = profile.frame_pose_in_world(box.frame)
    label = getattr(box, "name", "") or box_id
    return Box(
        id=box_id,
        label=label if kind == "keep_out" else "workspace",
        kind=kind,
        center=profile.to_world(centre, box.frame),
        size=size,  # type: ignore[arg-type]
        rotation=yaw_quaternion(yaw),
        color=_WORKSPACE_COLOR if kind == "workspace" else _KEEP_OUT_COLOR,
    )


class Translator:
    """Events in, records out; it remembers the scene graph's nodes between updates.

    Args:
        images: Looks an image up by its sha256 (the run store's ``image``); a frame whose
            bytes were not kept (``run.image_retention_every``) is skipped.
        profile: The embodiment profile whose zones are drawn (None: no zones).
        repeat_scene: Send the zones and objects again with every observation (a live
            viewer that connects late still sees them).
    """

    def __init__(
        self, *, images: ImageLookup, profile: Any = None, repeat_scene: bool = False
    ) -> None:
        self.images = images
        self.zones = profile_zones(profile)
        self.repeat_scene = repeat_scene
        self.nodes: dict[str, dict[str, Any]] = {}
        self._time = -math.inf
        self._zones_sent = False

    def translate(self, event: EventBase) -> list[Record]:
        self._time = max(self._time, event.time)
        t, turn = self._time, event.turn
        out: list[Record] = []
        if self.zones and (not self._zones_sent or self._repeat(event)):
            out.append(Boxes(time=t, turn=turn, group="zones", boxes=self.zones, static=True))
            self._zones_sent = True
        kind = str(getattr(event, "type", ""))
        if kind == "observation":
            out.extend(self._observation(event, t))
            if self._repeat(event) and self.nodes:
                out.append(self._objects(t, turn, ()))
        elif kind == "scene_update":
            out.extend(self._scene(event, t))
        elif kind == "prompt_snapshot":
            out.append(Scalar(t, turn, "context/total_tokens", float(event.total_tokens)))  # type: ignore[attr-defined]
            out.append(Scalar(t, turn, "context/threshold_tokens", float(event.threshold_tokens)))  # type: ignore[attr-defined]
            for section, tokens in event.sections.items():  # type: ignore[attr-defined]
                out.append(Scalar(t, turn, f"context/sections/{section}", float(tokens)))
        line = describe(event)
        if line is not None:
            out.append(LogLine(time=t, turn=turn, level=line[0], source=kind, text=line[1]))
        if kind in PAYLOAD_TYPES:
            out.append(Payload(time=t, turn=turn, event=event))
        return out

    def _repeat(self, event: EventBase) -> bool:
        return self.repeat_scene and getattr(event, "type", "") == "observation"

    # ------------------------------------------------------------------ observation

    def _observation(self, event: Any, t: float) -> list[Record]:
        out: list[Record] = []
        for sha in event.images:
            image = self.images(sha)
            if image is None:
                continue
            out.append(
                Frame(
                    time=t,
                    turn=event.turn,
                    camera=image.label or "camera",
                    media_type=image.media_type,
                    data=image.data,
                    width=image.width,
                    height=image.height,
                )
            )
        state = event.state or {}
        position = _vec3(state.get("ee_position"))
        if position is not None:
            yaw = state.get("ee_yaw")
            rotation = yaw_quaternion(float(yaw)) if isinstance(yaw, int | float) else _IDENTITY
            out.append(Pose(t, event.turn, "gripper", "world", position, rotation))
        base = _vec3(state.get("base_pose"))
        if base is not None:
            x, y, yaw = base
            out.append(Pose(t, event.turn, "base", "world", (x, y, 0.0), yaw_quaternion(yaw)))
        return out

    # ------------------------------------------------------------------ scene graph

    def _scene(self, event: Any, t: float) -> list[Record]:
        before = set(self.nodes)
        if event.snapshot:
            self.nodes = {
                str(node["ref"]): dict(node)
                for node in event.snapshot.get("nodes", [])
                if isinstance(node, dict) and "ref" in node
            }
        elif event.diff:
            self._apply_diff(event.diff)
        else:
            for ref in event.removed:
                self.nodes.pop(ref, None)
        removed = tuple(sorted(before - set(self.nodes)))
        return [self._objects(t, event.turn, removed)]

    def _apply_diff(self, diff: dict[str, Any]) -> None:
        for node in diff.get("added", []):
            if isinstance(node, dict) and "ref" in node:
                self.nodes[str(node["ref"])] = dict(node)
        for ref in diff.get("removed", []):
            self.nodes.pop(str(ref if not isinstance(ref, dict) else ref.get("ref")), None)
        for change in diff.get("changed", []):
            node = self.nodes.get(str(change.get("ref")))
            if node is None:
                continue
            for name, values in (change.get("fields") or {}).items():
                if isinstance(values, list | tuple) and len(values) == 2:
                    node[name] = values[1]

    def _objects(self, t: float, turn: int, removed: tuple[str, ...]) -> Boxes:
        boxes = []
        for ref, node in sorted(self.nodes.items()):
            box = _node_box(ref, node)
            if box is not None:
                boxes.append(box)
        return Boxes(time=t, turn=turn, group="objects", boxes=tuple(boxes), removed=removed)


def _node_box(ref: str, node: dict[str, Any]) -> Box | None:
    """A scene node as a box: it needs a position and a size (the robot itself has none)."""
    if node.get("category") == "robot" or node.get("frame", "world") != "world":
        return None
    center, size = _vec3(node.get("position")), _vec3(node.get("size"))
    if center is None or size is None:
        return None
    rotation = node.get("orientation")
    quat = (
        tuple(float(v) for v in rotation)
        if isinstance(rotation, list | tuple) and len(rotation) == 4
        else _IDENTITY
    )
    rgb = _COLORS.get(str(node.get("color") or "").lower(), _DEFAULT_COLOR)
    fixture = node.get("category") in _FIXTURES
    alpha = 0.25 if fixture else 0.35 if node.get("stale") else 0.95
    label = " ".join(part for part in (node.get("color"), node.get("label")) if part) or ref
    return Box(
        id=ref,
        label=f"{ref} ({label})",
        kind="fixture" if fixture else "object",
        center=center,
        size=size,
        rotation=quat,  # type: ignore[arg-type]
        color=(*rgb, alpha),
    )
