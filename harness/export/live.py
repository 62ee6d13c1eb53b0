"""Live viewers: the running task streamed to Foxglove (``foxglove-sdk``'s WebSocket
server) and to Rerun (a running viewer, or the web viewer bundled in ``rerun-sdk``, served
offline), as a consumer of the event stream.

A viewer is a client of the loop (STYLE habit 11): :class:`LiveSink` is an event sink the
caller wraps around ``run_stream()``'s events (``harness run/demo --foxglove/--rerun`` do,
and so can a console or a control script)::

    live = open_live(harness, foxglove_port=8765, rerun="web")
    for event in harness.run_stream(instruction):
        live(event)            # never blocks: a bounded queue, drops when full
        ...
    live.close()

**It never slows the loop.** Calling the sink only puts the (immutable) event on a bounded
queue (``put_nowait``); a sender thread of its own does everything else: redaction, image
look-ups in the run store, the translation into viewer records, encoding and sending. When
the queue is full (a viewer or the machine too slow) the new event is dropped and counted
(:attr:`LiveSink.dropped`); the loop never waits. A viewer that is absent costs nothing
more: Foxglove's server sends only to subscribed clients (each client's backlog is bounded
by the SDK), Rerun's buffers for late viewers up to a memory limit. **Off costs nothing**:
without ``--foxglove``/``--rerun`` no sink exists, nothing is imported, no thread runs.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from harness.events import EventBase
from harness.export.foxglove_messages import (
    FoxgloveMessage,
    encode_record,
    payload_schema,
    wellknown_schema,
)
from harness.export.records import Record
from harness.export.translate import PAYLOAD_TYPES, ImageLookup, Translator
from harness.redact import Redactor

__all__ = [
    "DEFAULT_FOXGLOVE_PORT",
    "FoxgloveLive",
    "LiveOutput",
    "LiveSink",
    "RerunLive",
    "open_live",
    "parse_rerun_target",
    "store_images",
]

logger = logging.getLogger(__name__)

DEFAULT_FOXGLOVE_PORT = 8765
DEFAULT_RERUN_WEB_PORT = 9090
DEFAULT_RERUN_GRPC_PORT = 9876
QUEUE_SIZE = 1024
"""Events held for a slow viewer before new ones are dropped (about 40 turns)."""
SEND_GRACE_S = 0.5
"""How long the Foxglove server is left to send what it has queued before it stops."""


class LiveOutput(Protocol):
    """Where a live sink's records go (one viewer)."""

    def write(self, record: Record) -> None: ...

    def close(self) -> None: ...


# ====================================================================== the sink


class LiveSink:
    """An event sink that streams to live viewers without ever blocking its caller.

    Args:
        outputs: The viewers (:class:`FoxgloveLive`, :class:`RerunLive`).
        images: Makes the image look-up; called once, on the sender thread (a SQLite
            connection belongs to the thread that opened it).
        profile: The embodiment profile whose zones are drawn.
        redactor: Applied to every event before it leaves (events from ``run_stream()``
            are already redacted; this keeps a sink fed from elsewhere just as safe).
        maxsize: The queue bound.
    """

    def __init__(
        self,
        outputs: Sequence[LiveOutput],
        *,
        images: Callable[[], ImageLookup] = lambda: lambda sha: None,
        profile: Any = None,
        redactor: Redactor | None = None,
        maxsize: int = QUEUE_SIZE,
    ) -> None:
        self.outputs = list(outputs)
        self._images = images
        self._profile = profile
        self._redactor = redactor
        self._queue: queue.Queue[EventBase | None] = queue.Queue(maxsize=maxsize)
        self.received = 0
        self.dropped = 0
        self.sent = 0
        self.failures = 0
        self.closed = False
        self._thread = threading.Thread(target=self._drain, name="harness-live-viewers")
        self._thread.daemon = True
        self._thread.start()

    def __call__(self, event: EventBase) -> None:
        """Queue ``event`` for the viewers; drops it (counted) when the queue is full."""
        if self.closed:
            return
        self.received += 1
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def wrap(self, render: Callable[[EventBase], None]) -> Callable[[EventBase], None]:
        """``render`` that also feeds this sink (for ``follow_stream``-style callers)."""

        def both(event: EventBase) -> None:
            self(event)
            render(event)

        return both

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (up to ``timeout`` seconds), then close the viewers."""
        if self.closed:
            return
        self.closed = True
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            logger.warning("live viewers: gave up sending %d queued events", self._queue.qsize())
        self._thread.join(timeout)
        for output in self.outputs:
            try:
                output.close()
            except Exception:  # a viewer's failure to close must not hide the task's end
                logger.exception("live viewer %r did not close cleanly", output)

    def _drain(self) -> None:
        images = self._images()
        translator = Translator(images=images, profile=self._profile, repeat_scene=True)
        while True:
            event = self._queue.get()
            if event is None:
                return
            try:
                if self._redactor is not None:
                    event = self._redactor.model(event)
                records = translator.translate(event)
            except Exception:
                self.failures += 1
                logger.exception("live viewers: could not translate a %s event", event)
                continue
            for output in self.outputs:
                for record in records:
                    try:
                        output.write(record)
                    except Exception:
                        self.failures += 1
                        logger.debug("live viewer %r failed on a record", output, exc_info=True)
            self.sent += 1


# ====================================================================== Foxglove


class FoxgloveLive:
    """``foxglove-sdk``'s WebSocket server on ``host:port`` (``port=0``: any free port),
    with the harness's topics advertised from the start (a client can subscribe before the
    task begins) and the same messages as the MCAP export."""

    def __init__(
        self,
        *,
        port: int = DEFAULT_FOXGLOVE_PORT,
        host: str = "127.0.0.1",
        cameras: Sequence[str] = (),
    ) -> None:
        import foxglove

        self._foxglove = foxglove
        self.context = foxglove.Context()
        self.server = foxglove.start_server(
            name="embodied-harness", host=host, port=port, context=self.context
        )
        self.host = host
        self.port = int(self.server.port)
        self.channels: dict[str, Any] = {}
        self._advertise_known_topics(cameras)

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def _advertise_known_topics(self, cameras: Sequence[str]) -> None:
        for camera in cameras:
            self._channel(f"/camera/{camera}/image", wellknown_schema("CompressedImage"))
        for kind, cls in sorted(payload_classes().items()):
            self._channel(f"/harness/{kind}", payload_schema(cls))
        for topic, name in (
            ("/tf", "FrameTransform"),
            ("/gripper/pose", "PoseInFrame"),
            ("/scene/objects", "SceneUpdate"),
            ("/scene/zones", "SceneUpdate"),
            ("/log", "Log"),
        ):
            self._channel(topic, wellknown_schema(name))

    def _channel(self, topic: str, schema: Any) -> Any:
        channel = self.channels.get(topic)
        if channel is None:
            channel = self._foxglove.Channel(
                topic,
                schema=self._foxglove.Schema(
                    name=schema.name, encoding=schema.encoding, data=schema.data
                ),
                message_encoding=schema.message_encoding,
                context=self.context,
            )
            self.channels[topic] = channel
        return channel

    def write(self, record: Record) -> None:
        for message in encode_record(record):
            self.send(message)

    def send(self, message: FoxgloveMessage) -> None:
        self._channel(message.topic, message.schema).log(message.data, log_time=message.time_ns)

    def close(self) -> None:
        # The SDK sends from its own threads and has no flush: stop() drops what is still
        # queued for a client (seen under load: the task's last /log message, its ``done``).
        time.sleep(SEND_GRACE_S)
        self.server.stop()


def payload_classes() -> dict[str, type]:
    """Event type -> event class, for the types kept whole on a channel of their own."""
    from typing import get_args

    from harness.events import Event

    union = get_args(Event)[0]
    return {
        cls.model_fields["type"].default: cls
        for cls in get_args(union)
        if cls.model_fields["type"].default in PAYLOAD_TYPES
    }


# ====================================================================== Rerun


def parse_rerun_target(text: str) -> tuple[str, int, int] | str:
    """``web[:WEB_PORT[:GRPC_PORT]]`` -> ("web", web port, gRPC port); anything else is a
    running viewer's gRPC URL (``rerun+http://127.0.0.1:9876/proxy``). Raises ValueError
    naming the bad part."""
    if text == "web" or text.startswith("web:"):
        parts = text.split(":")[1:]
        if len(parts) > 2:
            raise ValueError(f"{text!r}: expected web, web:WEB_PORT or web:WEB_PORT:GRPC_PORT")
        ports = [DEFAULT_RERUN_WEB_PORT, DEFAULT_RERUN_GRPC_PORT]
        for index, part in enumerate(parts):
            if not part.isdigit() or not 0 < int(part) < 65536:
                raise ValueError(f"{text!r}: {part!r} is not a port number (1-65535)")
            ports[index] = int(part)
        return ("web", ports[0], ports[1])
    if text.startswith(("rerun://", "rerun+http://", "rerun+https://")):
        return text
    raise ValueError(
        f"{text!r}: expected web[:WEB_PORT[:GRPC_PORT]] (serve the bundled web viewer) or a "
        "viewer's URL such as rerun+http://127.0.0.1:9876/proxy"
    )


class RerunLive:
    """A Rerun recording streamed live: to the web viewer bundled in ``rerun-sdk``, served
    from a program of its own bound to ``host`` (``web``: a gRPC proxy that buffers for late
    viewers plus the viewer's HTTP server; works offline; see
    :mod:`harness.export.rerun_server`), or to a running viewer's URL."""

    def __init__(
        self, target: tuple[str, int, int] | str, *, recording_id: str, host: str = "127.0.0.1"
    ) -> None:
        from harness.export.rerun_log import RerunSink, blueprint, new_recording
        from harness.export.rerun_server import RerunServer

        self.recording = new_recording(recording_id)
        self.server: RerunServer | None = None
        if isinstance(target, tuple):
            _, web_port, grpc_port = target
            self.server = RerunServer(web_port=web_port, grpc_port=grpc_port, host=host)
            self.url = self.server.viewer_url
            uri = self.server.grpc_url
        else:
            self.url = uri = target
        try:
            self.recording.connect_grpc(uri, default_blueprint=blueprint())
        except BaseException:
            if self.server is not None:
                self.server.close()
            raise
        self.sink = RerunSink(self.recording)

    def write(self, record: Record) -> None:
        self.sink.write(record)

    def close(self) -> None:
        self.recording.flush()
        self.recording.disconnect()
        if self.server is not None:
            self.server.close()


# ====================================================================== assembly


def store_images(store: Any) -> Callable[[], ImageLookup]:
    """The image look-up for a harness's run store, made on the thread that will use it:
    an in-memory store's dict, or a read-only connection to the SQLite store's file."""

    def make() -> ImageLookup:
        kept = getattr(store, "images", None)
        if isinstance(kept, dict):
            return kept.get
        folder = getattr(store, "folder", None)
        if folder is None:
            return lambda sha: None
        from harness.store.reader import RunLog

        log: list[RunLog] = []

        def lookup(sha: str) -> Any:
            if not log:
                try:
                    log.append(RunLog(folder))
                except Exception:
                    return None
            return log[0].image(sha)

        return lookup

    return make


def _profile(harness: Any) -> Any:
    """The profile the harness's safety envelope guards with (None without one)."""
    return getattr(getattr(harness, "safety", None), "profile", None)


def open_live(
    harness: Any,
    *,
    foxglove_port: int | None = None,
    rerun: str | tuple[str, int, int] | None = None,
    host: str = "127.0.0.1",
    notice: Callable[[str], None] = logger.info,
) -> LiveSink | None:
    """The live sink for ``harness`` with the viewers asked for, or None when none is
    (nothing is imported and no thread starts). ``notice`` is told where each viewer is.

    The viewers' servers listen on ``host``, this machine only by default; any other
    address (``0.0.0.0``: every interface) shows the robot's cameras and events to whoever
    reaches it, and is warned about."""
    if foxglove_port is None and rerun is None:
        return None
    from harness.export.rerun_server import is_loopback_address

    if not is_loopback_address(host):
        warning = (
            f"the live viewers listen on {host}"
            + (" (every interface)" if host in ("0.0.0.0", "::") else "")
            + ": anyone who reaches it sees the cameras and events, without a password"
        )
        logger.warning(warning)
        notice(f"WARNING: {warning}")
    outputs: list[LiveOutput] = []
    try:
        if foxglove_port is not None:
            cameras = [c.name for c in getattr(_profile(harness), "cameras", [])]
            fox = FoxgloveLive(port=foxglove_port, host=host, cameras=cameras)
            outputs.append(fox)
            notice(f"Foxglove: open {fox.url} (Open connection > Foxglove WebSocket)")
        if rerun is not None:
            target = parse_rerun_target(rerun) if isinstance(rerun, str) else rerun
            live = RerunLive(target, recording_id=harness.session_id, host=host)
            outputs.append(live)
            notice(f"Rerun viewer: {live.url}")
    except BaseException:
        for output in outputs:
            output.close()
        raise
    return LiveSink(
        outputs,
        images=store_images(harness.store),
        profile=_profile(harness),
        redactor=getattr(harness.session, "redactor", None),
    )
