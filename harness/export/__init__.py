"""Runs in the viewers robotics engineers already use: MCAP files for Foxglove, Rerun
recordings, and both live while a task runs.

- :mod:`~harness.export.records`: what a viewer is shown (frames, poses, boxes, log lines,
  event payloads, scalars), independent of the viewer;
- :mod:`~harness.export.translate`: events to records (the one place that decides it);
- :mod:`~harness.export.recorded`: a stored task's records, read from the run store;
- :mod:`~harness.export.foxglove_messages`: records as Foxglove messages (schemas, encodings);
- :mod:`~harness.export.mcap_file`: MCAP files (``harness export RUN --format mcap``);
- :mod:`~harness.export.rerun_log`: Rerun recordings (``--format rrd``, and live);
- :mod:`~harness.export.live`: live streams, a consumer of the event stream that never
  slows the loop (``--foxglove``, ``--rerun``).

The viewer SDKs (``mcap``, ``foxglove-sdk``, ``rerun-sdk``) are the ``viz`` extra and are
imported only when an export or a live stream is asked for.
"""

from harness.export.records import Box, Boxes, Frame, LogLine, Payload, Pose, Record, Scalar
from harness.export.translate import Translator

__all__ = [
    "Box",
    "Boxes",
    "Frame",
    "LogLine",
    "Payload",
    "Pose",
    "Record",
    "Scalar",
    "Translator",
]
