"""What a viewer is shown of a run, independent of the viewer: frames, poses, boxes, log
lines, event payloads and scalars, each with its time and turn.

Both file formats (MCAP, Rerun) and both live streams are written from these records, so
a run looks the same in every viewer and a record that one writer knows, the others know
too. :class:`~harness.export.translate.Translator` makes them from events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.events import EventBase

__all__ = [
    "Box",
    "Boxes",
    "Frame",
    "LogLevel",
    "LogLine",
    "Payload",
    "Pose",
    "Record",
    "Scalar",
]

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
"""(x, y, z, w)."""
Rgba = tuple[float, float, float, float]
LogLevel = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Frame:
    """One camera image as the model saw it (the encoded bytes of the run store)."""

    time: float
    turn: int
    camera: str
    media_type: str
    data: bytes
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Pose:
    """Where frame ``child`` is in frame ``parent`` (the gripper in the world)."""

    time: float
    turn: int
    child: str
    parent: str
    position: Vec3
    rotation: Quat


@dataclass(frozen=True, slots=True)
class Box:
    """A box in the world: an object of the scene graph (``fixture``: a surface or a
    container, drawn see-through), the workspace or a keep-out zone."""

    id: str
    label: str
    kind: Literal["object", "fixture", "workspace", "keep_out"]
    center: Vec3
    size: Vec3
    rotation: Quat
    color: Rgba


@dataclass(frozen=True, slots=True)
class Boxes:
    """Every box of a group as it is now (``removed``: ids gone since the last one)."""

    time: float
    turn: int
    group: Literal["objects", "zones"]
    boxes: tuple[Box, ...]
    removed: tuple[str, ...] = ()
    static: bool = False
    """True for what never changes during a run (the workspace and keep-out zones)."""


@dataclass(frozen=True, slots=True)
class LogLine:
    """One event in words, for a viewer's log panel."""

    time: float
    turn: int
    level: LogLevel
    source: str
    """The event type (``tool_call``, ``safety_check``...)."""
    text: str


@dataclass(frozen=True, slots=True)
class Payload:
    """An event kept whole (tool calls, safety checks, context usage, episodes...): its
    JSON is the event's own JSON, its schema the event class's JSON Schema."""

    time: float
    turn: int
    event: EventBase = field(repr=False)

    @property
    def kind(self) -> str:
        return str(getattr(self.event, "type", type(self.event).__name__))


@dataclass(frozen=True, slots=True)
class Scalar:
    """A number to plot over time (``context/total_tokens``)."""

    time: float
    turn: int
    name: str
    value: float


Record = Frame | Pose | Boxes | LogLine | Payload | Scalar
