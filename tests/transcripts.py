"""Wire transcripts recorded once from a real server, and replayed by the wire server.

A :class:`Transcript` is the list of HTTP exchanges one scenario had with a real server:
each request body (images replaced by their length, see
:func:`~tests.wire_server.strip_images`) and the response exactly as it came, status,
content type and body bytes (SSE streams included, so an empty stream stays empty). They
live as JSON under ``tests/fixtures/llamacpp/`` and are written by
``python -m tests.real.record_llamacpp`` through a :class:`RecordingProxy`, a loopback
HTTP proxy in front of the real server.

In tests, :meth:`Transcript.replies` programs a :class:`~tests.wire_server.WireServer`
with the recorded responses in order, so the adapters meet the real server's behaviour
(its empty streams, its 500 for ``"content": null``, its missing usage) without the
server, and the test checks what they sent against what was recorded.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.wire_server import Reply, strip_images

__all__ = ["CHAT_PATH", "FIXTURES", "UPSTREAM", "Exchange", "RecordingProxy", "Transcript"]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "llamacpp"
"""Recorded from ``llama-cpp-python``'s server (``llama_cpp.server``)."""
UPSTREAM = Path(__file__).resolve().parent / "fixtures" / "llamaserver"
"""Recorded from llama.cpp's own ``llama-server`` (the upstream server)."""
CHAT_PATH = "/v1/chat/completions"


@dataclass
class Exchange:
    """One request and the real server's response to it."""

    path: str
    request: Any
    status: int
    content_type: str
    body: str
    seconds: float = 0.0
    """How long the real server took (for the record; replays answer at once)."""
    method: str = "POST"

    @property
    def is_chat(self) -> bool:
        """A chat completion (the API), not one of the server's own endpoints."""
        return self.path.rstrip("/").endswith("/chat/completions")

    def reply(self) -> Reply:
        return Reply(
            status=self.status,
            raw=self.body.encode("utf-8"),
            headers={"Content-Type": self.content_type},
        )

    def json(self) -> Any:
        return json.loads(self.body) if self.body.strip() else None

    def sse_data(self) -> list[str]:
        """The ``data:`` payloads of an SSE body, in order."""
        return [
            line[len("data: ") :] for line in self.body.splitlines() if line.startswith("data: ")
        ]


@dataclass
class Transcript:
    name: str
    recorded_with: dict[str, str]
    exchanges: list[Exchange] = field(default_factory=list)
    notes: str = ""

    @classmethod
    def load(cls, name: str, folder: Path = FIXTURES) -> Transcript:
        data = json.loads((folder / f"{name}.json").read_text())
        exchanges = [Exchange(**exchange) for exchange in data.pop("exchanges")]
        return cls(exchanges=exchanges, **data)

    def save(self, folder: Path = FIXTURES) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.json"
        path.write_text(json.dumps(asdict(self), indent=1, ensure_ascii=False) + "\n")
        return path

    def replies(self) -> list[Reply]:
        return [exchange.reply() for exchange in self.exchanges]


class RecordingProxy:
    """A loopback proxy that forwards each POST to ``upstream`` and records the exchange.

    ``upstream`` is the server's origin (``http://127.0.0.1:8765``); clients use
    :attr:`openai_url` as their ``base_url``. The response is read whole and then sent on
    (timing is not replayed; bytes are).
    """

    def __init__(self, upstream: str, *, timeout_s: float = 600.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._in_flight = 0
        self._idle = threading.Condition(self._lock)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ProxyHandler)
        self._httpd.daemon_threads = True
        self._httpd.proxy = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def forward(
        self,
        path: str,
        raw: bytes,
        send: Callable[[int, str, bytes], None],
        *,
        method: str = "POST",
    ) -> None:
        """Forward one request; pass the response on piece by piece as it arrives
        (``send(status, content_type, piece)``, an empty piece first), then record it."""
        started = time.monotonic()
        with self._lock:
            self._in_flight += 1
        request = urllib.request.Request(
            self.upstream + path,
            data=raw if method == "POST" else None,
            headers={"Content-Type": "application/json"},
            method=method,
        )
        pieces: list[bytes] = []
        try:
            response = urllib.request.urlopen(request, timeout=self.timeout_s)
        except urllib.error.HTTPError as error:
            response = error
        with response:
            status = response.status if hasattr(response, "status") else response.code
            content_type = response.headers.get("content-type", "")
            send(status, content_type, b"")
            while piece := response.read1(65536):
                pieces.append(piece)
                send(status, content_type, piece)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        exchange = Exchange(
            path=path,
            request=strip_images(body),
            status=status,
            content_type=content_type,
            body=b"".join(pieces).decode("utf-8"),
            seconds=round(time.monotonic() - started, 2),
            method=method,
        )
        with self._lock:
            self.exchanges.append(exchange)
            self._in_flight -= 1
            self._idle.notify_all()

    def settled(self, timeout_s: float = 600.0) -> list[Exchange]:
        """The exchanges, once no request is still being answered (a client may stop
        reading at ``[DONE]`` before the proxy has recorded the rest)."""
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout_s)
            return list(self.exchanges)


class _ProxyHandler(BaseHTTPRequestHandler):
    """Passes each response on as it arrives (``Connection: close`` delimits the body),
    so the client sees the server's timing, keep-alive comments included."""

    protocol_version = "HTTP/1.1"
    server: Any

    def do_GET(self) -> None:
        self.do_POST(method="GET")

    def do_POST(self, method: str = "POST") -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        started = False
        client_gone = False

        def send(status: int, content_type: str, piece: bytes) -> None:
            nonlocal started, client_gone
            if client_gone:
                return
            try:
                if not started:
                    started = True
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Connection", "close")
                    self.end_headers()
                if piece:
                    self.wfile.write(piece)
                    self.wfile.flush()
            except OSError:  # the client gave up (a cancel, a deadline): keep recording
                client_gone = True

        self.server.proxy.forward(self.path, raw, send, method=method)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass
