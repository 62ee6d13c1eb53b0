"""Viewer records as a Rerun recording (``rerun-sdk``): one ``rr.log`` per record, on two
timelines, ``time`` (the run store's event time) and ``turn``.

========================== ===================================================
entity                     archetype
========================== ===================================================
``camera/<name>``          ``EncodedImage`` (the frame's JPEG/PNG bytes)
``world/<frame>``          ``Transform3D`` + ``TransformAxes3D`` (gripper pose)
``world/objects``          ``Boxes3D`` (the scene graph's objects)
``world/fixtures``         ``Boxes3D``, see-through (surfaces and containers)
``world/zones``            ``Boxes3D``, static (workspace and keep-out zones)
``log``                    ``TextLog`` (every event in words, with its level)
``harness/<event type>``   ``TextDocument`` (the event's JSON)
``context/...``            ``Scalars`` (context tokens per section and in total)
========================== ===================================================

The same :class:`RerunSink` writes an ``.rrd`` file (:func:`write_rrd`) or a live stream
(:mod:`harness.export.live`): only the recording's sink differs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from harness.export.records import Box, Boxes, Frame, LogLine, Payload, Pose, Record, Scalar

__all__ = ["APPLICATION_ID", "RerunSink", "blueprint", "new_recording", "write_rrd"]

APPLICATION_ID = "embodied-harness"
_LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARN", "error": "ERROR"}


def _rgba(color: tuple[float, float, float, float]) -> list[int]:
    return [max(0, min(255, round(c * 255))) for c in color]


class RerunSink:
    """Logs records to one Rerun recording stream (``recording``)."""

    def __init__(self, recording: Any) -> None:
        self.recording = recording
        self.logged = 0

    def write(self, record: Record) -> None:
        import rerun as rr

        rec = self.recording
        rec.set_time("time", timestamp=record.time)
        rec.set_time("turn", sequence=record.turn)
        if isinstance(record, Frame):
            rec.log(
                f"camera/{record.camera}",
                rr.EncodedImage(contents=record.data, media_type=record.media_type),
            )
        elif isinstance(record, Pose):
            rec.log(
                f"world/{record.child}",
                rr.Transform3D(
                    translation=record.position, quaternion=rr.Quaternion(xyzw=record.rotation)
                ),
                rr.TransformAxes3D(0.08),
            )
        elif isinstance(record, Boxes):
            if record.group == "zones":
                self._boxes(rr, "world/zones", record.boxes, wireframe=True, static=record.static)
            else:
                solid = [b for b in record.boxes if b.kind != "fixture"]
                fixtures = [b for b in record.boxes if b.kind == "fixture"]
                self._boxes(rr, "world/objects", solid, wireframe=False, static=record.static)
                self._boxes(rr, "world/fixtures", fixtures, wireframe=True, static=record.static)
        elif isinstance(record, LogLine):
            rec.log("log", rr.TextLog(record.text, level=_LEVELS[record.level]))
        elif isinstance(record, Payload):
            rec.log(
                f"harness/{record.kind}",
                rr.TextDocument(record.event.model_dump_json(indent=1), media_type="text/plain"),
            )
        elif isinstance(record, Scalar):
            rec.log(record.name, rr.Scalars([record.value]))
        else:
            raise TypeError(f"not a viewer record: {record!r}")
        self.logged += 1

    def _boxes(
        self, rr: Any, entity: str, boxes: Sequence[Box], *, wireframe: bool, static: bool
    ) -> None:
        fill = rr.components.FillMode
        self.recording.log(
            entity,
            rr.Boxes3D(
                centers=[b.center for b in boxes],
                sizes=[b.size for b in boxes],
                quaternions=[rr.Quaternion(xyzw=b.rotation) for b in boxes],
                colors=[_rgba(b.color) for b in boxes],
                labels=[b.label for b in boxes],
                fill_mode=fill.TransparentFillMajorWireframe if wireframe else fill.Solid,
            ),
            static=static,
        )


def blueprint() -> Any:
    """The layout a recording opens with: the camera over the log on the left, the 3D
    world over the context plot on the right (the viewer's panels stay movable)."""
    import rerun.blueprint as rrb

    return rrb.Blueprint(
        rrb.Horizontal(
            rrb.Vertical(
                rrb.Spatial2DView(name="camera", origin="camera"),
                rrb.TextLogView(name="events", origin="log"),
            ),
            rrb.Vertical(
                rrb.Spatial3DView(name="world", origin="world"),
                rrb.TimeSeriesView(name="context tokens", origin="context"),
                row_shares=[3, 2],
            ),
            column_shares=[1, 1],
        ),
        collapse_panels=True,
    )


def new_recording(recording_id: str) -> Any:
    import rerun as rr

    return rr.RecordingStream(APPLICATION_ID, recording_id=recording_id)


def write_rrd(records: Iterable[Record], path: str | os.PathLike[str], *, recording_id: str) -> int:
    """Write ``records`` to the ``.rrd`` file ``path``; returns the number logged."""
    recording = new_recording(recording_id)
    recording.save(os.fspath(path), default_blueprint=blueprint())
    sink = RerunSink(recording)
    try:
        for record in records:
            sink.write(record)
    finally:
        recording.flush()
        recording.disconnect()
    return sink.logged
