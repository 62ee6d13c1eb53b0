"""Viewer records as Foxglove messages: the bytes both the MCAP file and the live
WebSocket server carry.

**Encodings.** Foxglove's well-known schemas are written in **protobuf**, encoded by
``foxglove-sdk`` itself (``foxglove.messages.*.encode()``) with the schema it ships
(``get_schema()``: the official ``FileDescriptorSet``): images stay binary (JSON would
base64 them, a third larger), every MCAP reader and Foxglove decode them from the schema in
the file, and the bytes cannot drift from the published schema because we do not write
them. The harness's own channels (tool calls, safety checks, context usage, episodes...)
are **JSON** with the event class's **JSON Schema** (pydantic's ``model_json_schema()``):
they are the events exactly as ``harness run --json`` prints them, readable by any tool,
and their schema follows the event models without a second definition to keep in step.

Topics:

=========================== ============================ ===================================
topic                       schema                       from
=========================== ============================ ===================================
``/camera/<name>/image``    ``foxglove.CompressedImage`` each observation's frames
``/tf``                     ``foxglove.FrameTransform``  gripper (and mobile base) pose
``/<frame>/pose``           ``foxglove.PoseInFrame``     the same pose, for plots and 3D
``/scene/objects``          ``foxglove.SceneUpdate``     the scene graph's objects (cubes)
``/scene/zones``            ``foxglove.SceneUpdate``     workspace and keep-out zones
``/log``                    ``foxglove.Log``             every event in words
``/harness/<event type>``   ``harness.<EventClass>``     tool_call, tool_result,
                                                         safety_check, hook_decision,
                                                         evaluation, prompt_snapshot,
                                                         context_pressure, compaction,
                                                         episode, done
=========================== ============================ ===================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from harness.export.records import Box, Boxes, Frame, LogLine, Payload, Pose, Record, Scalar

__all__ = [
    "FoxgloveMessage",
    "FoxgloveSchema",
    "encode_record",
    "payload_schema",
    "wellknown_schema",
]

WORLD_FRAME = "world"


@dataclass(frozen=True, slots=True)
class FoxgloveSchema:
    name: str
    encoding: str
    """``protobuf`` or ``jsonschema``."""
    data: bytes
    message_encoding: str
    """``protobuf`` or ``json``."""


@dataclass(frozen=True, slots=True)
class FoxgloveMessage:
    topic: str
    schema: FoxgloveSchema
    data: bytes
    time_ns: int


def _fg() -> Any:
    import foxglove.messages as messages

    return messages


@cache
def wellknown_schema(name: str) -> FoxgloveSchema:
    schema = getattr(_fg(), name).get_schema()
    return FoxgloveSchema(
        name=schema.name,
        encoding=schema.encoding,
        data=bytes(schema.data),
        message_encoding="protobuf",
    )


@cache
def payload_schema(event_class: type) -> FoxgloveSchema:
    """The JSON channel schema of one event class (its pydantic JSON Schema)."""
    schema = event_class.model_json_schema()  # type: ignore[attr-defined]
    return FoxgloveSchema(
        name=f"harness.{event_class.__name__}",
        encoding="jsonschema",
        data=json.dumps(schema, sort_keys=True).encode(),
        message_encoding="json",
    )


def _ns(t: float) -> int:
    return max(0, round(t * 1e9))


def _stamp(t: float) -> Any:
    ns = _ns(t)
    return _fg().Timestamp(ns // 1_000_000_000, ns % 1_000_000_000)


def _pose(position: tuple[float, ...], rotation: tuple[float, ...]) -> Any:
    m = _fg()
    x, y, z = position
    qx, qy, qz, qw = rotation
    return m.Pose(
        position=m.Vector3(x=x, y=y, z=z), orientation=m.Quaternion(x=qx, y=qy, z=qz, w=qw)
    )


def _entity(box: Box, t: float) -> Any:
    m = _fg()
    r, g, b, a = box.color
    sx, sy, sz = box.size
    cx, cy, cz = box.center
    label = m.TextPrimitive(
        pose=_pose((cx, cy, cz + sz / 2 + 0.02), (0.0, 0.0, 0.0, 1.0)),
        billboard=True,
        font_size=12.0,
        scale_invariant=True,
        color=m.Color(r=1.0, g=1.0, b=1.0, a=1.0),
        text=box.label,
    )
    return m.SceneEntity(
        timestamp=_stamp(t),
        frame_id=WORLD_FRAME,
        id=box.id,
        metadata=[m.KeyValuePair(key="kind", value=box.kind)],
        cubes=[
            m.CubePrimitive(
                pose=_pose(box.center, box.rotation),
                size=m.Vector3(x=sx, y=sy, z=sz),
                color=m.Color(r=r, g=g, b=b, a=a),
            )
        ],
        texts=[label],
    )


_LEVELS = {"debug": "Debug", "info": "Info", "warning": "Warning", "error": "Error"}


def _message(topic: str, schema_name: str, message: Any, t: float) -> FoxgloveMessage:
    return FoxgloveMessage(topic, wellknown_schema(schema_name), bytes(message.encode()), _ns(t))


def encode_record(record: Record) -> list[FoxgloveMessage]:
    """The Foxglove messages of one record (none for a scalar: the ``prompt_snapshot``
    channel carries the same numbers, which Foxglove plots by field path)."""
    m = _fg()
    t = record.time
    if isinstance(record, Frame):
        image = m.CompressedImage(
            timestamp=_stamp(t),
            frame_id=f"camera_{record.camera}",
            data=record.data,
            format=record.media_type.rpartition("/")[2] or "jpeg",
        )
        return [_message(f"/camera/{record.camera}/image", "CompressedImage", image, t)]
    if isinstance(record, Pose):
        x, y, z = record.position
        qx, qy, qz, qw = record.rotation
        transform = m.FrameTransform(
            timestamp=_stamp(t),
            parent_frame_id=record.parent,
            child_frame_id=record.child,
            translation=m.Vector3(x=x, y=y, z=z),
            rotation=m.Quaternion(x=qx, y=qy, z=qz, w=qw),
        )
        pose = m.PoseInFrame(
            timestamp=_stamp(t),
            frame_id=record.parent,
            pose=_pose(record.position, record.rotation),
        )
        return [
            _message("/tf", "FrameTransform", transform, t),
            _message(f"/{record.child}/pose", "PoseInFrame", pose, t),
        ]
    if isinstance(record, Boxes):
        deletions = [
            m.SceneEntityDeletion(
                timestamp=_stamp(t), type=m.SceneEntityDeletionType.MatchingId, id=ref
            )
            for ref in record.removed
        ]
        update = m.SceneUpdate(
            deletions=deletions, entities=[_entity(box, t) for box in record.boxes]
        )
        return [_message(f"/scene/{record.group}", "SceneUpdate", update, t)]
    if isinstance(record, LogLine):
        log = m.Log(
            timestamp=_stamp(t),
            level=getattr(m.LogLevel, _LEVELS[record.level]),
            message=record.text,
            name=record.source,
        )
        return [_message("/log", "Log", log, t)]
    if isinstance(record, Payload):
        data = record.event.model_dump_json().encode()
        schema = payload_schema(type(record.event))
        return [FoxgloveMessage(f"/harness/{record.kind}", schema, data, _ns(t))]
    if isinstance(record, Scalar):
        return []
    raise TypeError(f"not a viewer record: {record!r}")
