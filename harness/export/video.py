"""Camera frames as MP4 video with PyAV, many episodes end to end in one file.

A :class:`VideoFile` encodes frames at a fixed rate with exact timestamps: frame ``i`` of
the file is shown at ``i / fps`` (time base ``1/fps``, no B-frames to reorder), so an
episode that starts at frame ``k`` of a file starts at ``k / fps`` and a reader that seeks
to ``from_timestamp + t`` finds the frame recorded at ``t``.

Codecs: ``libsvtav1`` (AV1, LeRobot's default: GOP 2, CRF 30, preset 12) or ``h264``
(libx264, plays everywhere). Frames are RGB, encoded as ``yuv420p``, so width and height
must be even.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

__all__ = ["CODECS", "VideoCodec", "VideoFile", "encoder_info", "probe_video"]

VideoCodec = Literal["libsvtav1", "h264"]
CODECS: dict[str, dict[str, Any]] = {
    "libsvtav1": {
        "encoder": "libsvtav1",
        "options": {"crf": "30", "g": "2", "preset": "12"},
    },
    "h264": {
        "encoder": "libx264",
        "options": {"crf": "23", "g": "2", "bf": "0", "preset": "veryfast"},
    },
}
"""Encoder and options per ``--vcodec`` (GOP 2: any frame is at most one frame from a key
frame, as LeRobot encodes for random access while training)."""

PIXEL_FORMAT = "yuv420p"

log = logging.getLogger(__name__)


@contextlib.contextmanager
def scheduling_kept() -> Iterator[None]:
    """Give the calling thread back the scheduling policy it had, whatever the encoder did.

    SVT-AV1 (4.1, in PyAV's wheels) checks once per process whether it may raise thread
    priorities by setting the *calling* thread to ``SCHED_FIFO`` 99, and leaves it there:
    a process allowed to (root, or ``CAP_SYS_NICE``) went on as a real-time task after its
    first AV1 frame, and every process it started inherited that. A robot's control loop
    or an eval worker that exported a dataset would then starve the machine's other work
    on its core. The check runs inside the encoder's first ``encode``; each call into the
    encoder is made inside this guard, which costs two system calls."""
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    except (AttributeError, OSError):  # no POSIX scheduling API here (not Linux)
        yield
        return
    try:
        yield
    finally:
        if (os.sched_getscheduler(0), os.sched_getparam(0)) != (policy, param):
            log.debug("the video encoder changed this thread's scheduling; restored")
            os.sched_setscheduler(0, policy, param)


class VideoFile:
    """One MP4 file of one camera, written frame by frame (see the module docstring)."""

    def __init__(self, path: Path, *, fps: int, width: int, height: int, codec: VideoCodec) -> None:
        import av

        if width % 2 or height % 2:
            raise ValueError(
                f"{width}x{height} frames cannot be encoded as {PIXEL_FORMAT} video (width "
                "and height must be even)"
            )
        os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1's banner and notices: errors only
        self.path = path
        self.fps = fps
        self.width = width
        self.height = height
        self.codec = codec
        path.parent.mkdir(parents=True, exist_ok=True)
        self._container = av.open(str(path), mode="w")
        spec = CODECS[codec]
        self._stream = self._container.add_stream(spec["encoder"], rate=fps)
        self._stream.width = width
        self._stream.height = height
        self._stream.pix_fmt = PIXEL_FORMAT
        self._stream.time_base = Fraction(1, fps)
        self._stream.options = dict(spec["options"])
        self.frames = 0
        self.encoded_bytes = 0
        """Bytes of encoded video muxed so far (the file on disk may lag behind)."""
        self.closed = False

    @property
    def seconds(self) -> float:
        """Where the next frame will be shown."""
        return self.frames / self.fps

    def add(self, frame: np.ndarray) -> None:
        """Encode an HxWx3 uint8 RGB frame of this file's size."""
        import av

        array = np.ascontiguousarray(frame, dtype=np.uint8)
        if array.shape != (self.height, self.width, 3):
            raise ValueError(
                f"a {array.shape} frame in a {self.height}x{self.width}x3 video ({self.path})"
            )
        video_frame = av.VideoFrame.from_ndarray(array, format="rgb24")
        video_frame.pts = self.frames
        video_frame.time_base = Fraction(1, self.fps)
        with scheduling_kept():
            packets = self._stream.encode(video_frame)
        self._mux(packets)
        self.frames += 1

    def _mux(self, packets: Any) -> None:
        for packet in packets:
            self.encoded_bytes += packet.size
            self._container.mux(packet)

    def size_mb(self) -> float:
        """Encoded megabytes so far (what is still in the encoder is not counted)."""
        return self.encoded_bytes / 2**20

    def close(self) -> None:
        """Flush the encoder and write the file's index (idempotent)."""
        if self.closed:
            return
        self.closed = True
        try:
            with scheduling_kept():
                packets = self._stream.encode()
            self._mux(packets)
        finally:
            self._container.close()


def probe_video(path: Path) -> dict[str, Any]:
    """What a written file's video stream is, read back from the file (LeRobot's
    ``video.*`` keys of a camera feature)."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return {
            "video.height": stream.height,
            "video.width": stream.width,
            "video.codec": stream.codec_context.codec.canonical_name,
            "video.pix_fmt": stream.codec_context.pix_fmt,
            "video.fps": round(float(stream.base_rate or stream.average_rate or 0)),
            "video.channels": 3,
            "has_audio": bool(container.streams.audio),
            "is_depth_map": False,
        }


def encoder_info(codec: VideoCodec) -> dict[str, Any]:
    """The encoder settings a file was written with (``video.g``, ``video.crf``...)."""
    options = CODECS[codec]["options"]
    info: dict[str, Any] = {"video.g": int(options["g"]), "video.crf": int(options["crf"])}
    preset = options["preset"]
    info["video.preset"] = int(preset) if preset.isdigit() else preset
    return info
