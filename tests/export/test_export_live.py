"""Live viewers of a real simulator task: a Foxglove WebSocket client (the documented
protocol spoken with the ``websockets`` package) receives every channel while the task
runs; Rerun's bundled web viewer, served by ``harness demo --rerun web``, loads the stream
in headless Chromium (Playwright driving /usr/bin/chromium).

The client decodes each protobuf message with the schema the server advertised (the
FileDescriptorSet, base64) and each JSON one with ``json``; what it receives must match
what ``run_stream()`` yielded, in order, and hold no byte of the planted secret.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("foxglove")
pytest.importorskip("rerun")

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from websockets.sync.client import connect

from harness.export.live import open_live
from tests.viz_helpers import SECRET_PATTERN, SimRun, run_sim_task, secret_fragments

pytestmark = pytest.mark.long

SUBPROTOCOLS = ["foxglove.websocket.v1", "foxglove.sdk.v1"]
"""The protocol's documented name, and the name foxglove-sdk 0.30 serves it under."""
HANG_GUARD_S = 60.0


def _message_class(schema_name: str, schema_b64: str) -> Any:
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(schema_b64))
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema_name))


class FoxgloveClient:
    """A Foxglove WebSocket client: subscribes to every advertised channel and keeps what
    arrives (topic -> decoded messages), on a thread of its own."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.subprotocol = self.ws.subprotocol
        self.channels: dict[int, dict[str, Any]] = {}
        self.decoders: dict[int, Any] = {}
        self.received: dict[str, list[Any]] = {}
        self.raw = bytearray()
        self.server_info: dict[str, Any] = {}
        self._subscriptions: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def wait_for_channels(self, topics: set[str]) -> None:
        deadline = time.monotonic() + HANG_GUARD_S
        while not topics <= {c["topic"] for c in self.channels.values()}:
            assert time.monotonic() < deadline, "channels were never advertised"
            self._handle(self.ws.recv(timeout=HANG_GUARD_S))
        self._thread.start()

    def _handle(self, message: str | bytes) -> None:
        if isinstance(message, str):
            self.raw += message.encode()
            data = json.loads(message)
            if data["op"] == "serverInfo":
                self.server_info = data
            elif data["op"] == "advertise":
                subscribe = []
                for channel in data["channels"]:
                    self.channels[channel["id"]] = channel
                    sub = len(self._subscriptions) + 1
                    self._subscriptions[sub] = channel["id"]
                    subscribe.append({"id": sub, "channelId": channel["id"]})
                    if channel["encoding"] == "protobuf":
                        self.decoders[channel["id"]] = _message_class(
                            channel["schemaName"], channel["schema"]
                        )
                self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subscribe}))
            return
        self.raw += message
        if message[0] != 0x01:  # message data
            return
        sub, _log_time = struct.unpack_from("<IQ", message, 1)
        payload = message[13:]
        channel_id = self._subscriptions[sub]
        topic = self.channels[channel_id]["topic"]
        decoder = self.decoders.get(channel_id)
        value = decoder.FromString(payload) if decoder else json.loads(payload)
        self.received.setdefault(topic, []).append(value)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._handle(self.ws.recv(timeout=0.2))
            except TimeoutError:
                continue
            except Exception:
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(HANG_GUARD_S)


@pytest.fixture(scope="module")
def foxglove_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[SimRun, FoxgloveClient, Any]:
    """One real task streamed live to a connected client."""
    state: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:

        def attach(harness: Any) -> None:
            sink = open_live(harness, foxglove_port=0)
            assert sink is not None
            ws = stack.enter_context(
                connect(sink.outputs[0].url, subprotocols=SUBPROTOCOLS, open_timeout=10)  # type: ignore[arg-type]
            )
            client = FoxgloveClient(ws)
            client.wait_for_channels({"/camera/front/image", "/tf", "/log", "/harness/tool_call"})
            # The protocol does not acknowledge a subscription: the server's channels say
            # when it has taken it (a message logged before that is not sent to the client).
            server = sink.outputs[0]
            wait_until(
                lambda: all(channel.has_sinks() for channel in server.channels.values()),
                "the server never registered the client's subscriptions",
            )
            state.update(sink=sink, client=client)

        def feed(event: Any) -> None:
            state["sink"](event)

        run = run_sim_task(tmp_path_factory.mktemp("live") / "store", sink=feed, before=attach)
        sink, client = state["sink"], state["client"]
        # Every event sent to the server, then every event's /log message and the done
        # message received (channels are not ordered against each other: /log's last
        # message may come after /harness/done), and only then the server stopped: it has
        # no flush, and stopping drops what it still queues for a client.
        wait_until(
            lambda: sink.sent + sink.dropped + sink.failures >= len(run.events), "events unsent"
        )
        logged = sum(1 for e in run.events if e.type != "model_delta")  # type: ignore[attr-defined]
        wait_until(
            lambda: (
                bool(client.received.get("/harness/done"))
                and len(client.received.get("/log", [])) >= logged
            ),
            "the client never received every message",
        )
        sink.close()
        client.close()
    return run, client, sink


def wait_until(condition: Any, what: str) -> None:
    """Until ``condition()`` holds (a hang guard, not a timing: the test fails only if it
    never holds)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_foxglove_client_receives_every_channel_while_the_task_runs(
    foxglove_run: tuple[SimRun, FoxgloveClient, Any],
) -> None:
    run, client, sink = foxglove_run
    assert client.subprotocol in SUBPROTOCOLS
    assert sink.dropped == 0 and sink.failures == 0 and sink.sent == len(run.events)
    got = client.received
    observations = [e for e in run.events if e.type == "observation"]  # type: ignore[attr-defined]
    assert len(got["/camera/front/image"]) == sum(len(e.images) for e in observations) > 0
    assert all(m.data[:2] == b"\xff\xd8" for m in got["/camera/front/image"])
    tf = [(m.translation.x, m.translation.y, m.translation.z) for m in got["/tf"]]
    assert tf == [tuple(e.state["ee_position"]) for e in observations]
    zones = got["/scene/zones"][0]
    assert {e.id for e in zones.entities} == {"workspace", "keep_out/robot_base"}
    assert any(e.id == "red_cube_1" for u in got["/scene/objects"] for e in u.entities)
    names = [m.name for m in got["/log"]]
    assert names == [e.type for e in run.events if e.type != "model_delta"]  # type: ignore[attr-defined]
    calls = [m["call_id"] for m in got["/harness/tool_call"]]
    assert calls == [e.call_id for e in run.events if e.type == "tool_call"]  # type: ignore[attr-defined]
    assert got["/harness/done"][0]["outcome"] == "achieved"


def test_no_secret_reaches_the_foxglove_client(
    foxglove_run: tuple[SimRun, FoxgloveClient, Any],
) -> None:
    _, client, _ = foxglove_run
    assert secret_fragments(bytes(client.raw)) == 0
    assert b"[REDACTED]" in client.raw  # the planted secret did flow to the viewer


# ====================================================================== Rerun web viewer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _table_pixels(png: bytes) -> int:
    """Pixels of the simulator's tan table top: there only when the camera frame shows."""
    import io

    import numpy as np
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    tan = np.array([185, 156, 124])
    return int((np.abs(rgb - tan).max(axis=2) < 18).sum())


def _ui_painted(png: bytes) -> bool:
    """Whether the viewer has drawn its interface (its dark text and icons): not a blank page."""
    import io

    import numpy as np
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int((rgb.max(axis=2) < 80).sum()) > 1000


def _poll_screenshots(page: Any, until: Any, tries: int, path: str | None = None) -> bytes:
    """Screenshots every 300 ms until `until(png)` holds or the tries run out; the last one."""
    png = b""
    for _ in range(tries):
        page.wait_for_timeout(300)
        png = page.screenshot(path=path, timeout=180_000)
        if until(png):
            break
    return png


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs /usr/bin/chromium")
def test_rerun_web_viewer_loads_the_stream_in_headless_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    web, grpc = _free_port(), _free_port()
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "demo",
        "put the red cube in the tray",
        "-s",
        f"run.store={tmp_path / 'store'}",
        "-s",
        f"run.secret_patterns=[{json.dumps(SECRET_PATTERN)}]",
        "--rerun",
        f"web:{web}:{grpc}",
        "--linger",
    ]
    demo = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    try:
        url = ""
        deadline = time.monotonic() + HANG_GUARD_S
        assert demo.stderr is not None
        while time.monotonic() < deadline:
            line = demo.stderr.readline()
            if line.startswith("Rerun viewer: "):
                url = line.split(": ", 1)[1].strip()
            if "serving the viewers" in line:
                break
            assert line or demo.poll() is None, "the demo exited early"
        assert url.startswith(f"http://127.0.0.1:{web}/?url=")
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                # A small viewport: the software rasterizer paints it in a fraction of the time.
                page = browser.new_page(viewport={"width": 640, "height": 420})
                # Control: the same viewer, once it has painted its interface, shows no camera
                # frame without the stream (else the pixel check would be blind).
                page.goto(f"http://127.0.0.1:{web}/")
                control = _poll_screenshots(page, _ui_painted, tries=100)
                painted, empty = _ui_painted(control), _table_pixels(control)
                page.goto(url)
                frame = _poll_screenshots(
                    page, lambda png: _table_pixels(png) > 1200, 200, str(tmp_path / "viewer.png")
                )
                seen = _table_pixels(frame)
            finally:
                browser.close()
        assert painted, "the viewer never painted its interface"
        assert empty < 120, f"the empty viewer shows {empty} table pixels: the check is blind"
        assert seen > 1200, f"the camera frame never appeared ({seen} table pixels)"
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(timeout=30)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait()
    assert demo.returncode == 0, demo.stderr.read() if demo.stderr else ""


def test_off_costs_nothing(tmp_path: Path) -> None:
    """Without --foxglove/--rerun a demo imports no viewer SDK and starts no sender thread."""
    script = (
        "import sys, threading\n"
        "from harness.cli import main\n"
        f"code = main(['demo', 'put the red cube in the tray', '-s', 'run.store={tmp_path}'])\n"
        "viewers = sorted(m for m in ('foxglove', 'rerun', 'mcap') if m in sys.modules)\n"
        "live = [t.name for t in threading.enumerate() if t.name.startswith('harness-live')]\n"
        "print('RESULT', code, viewers, live)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S * 2,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert "RESULT 0 [] []" in done.stdout, done.stdout[-500:] + done.stderr[-2000:]
