"""A local HTTP server that speaks the OpenAI and Anthropic wire formats, for offline tests.

It is a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0), so the official SDKs talk to
it exactly as they talk to the real APIs: ``base_url=server.openai_url`` (``.../v1``) for
``openai`` and ``server.anthropic_url`` for ``anthropic``. Every request is recorded (path,
headers, parsed JSON body); every answer is programmed per request, either queued
(:meth:`WireServer.reply`) or computed by a ``responder`` from the recorded request.

The builders below produce the providers' real shapes: JSON bodies, SSE streams (OpenAI
``data:`` chunks ending in ``[DONE]``; Anthropic named events from ``message_start`` to
``message_stop``) and error bodies with their status codes and headers. A reply can also
be exact bytes (``raw``: recorded transcripts, empty bodies), wait before its first byte
(``delay_s``), trickle its events (``event_delay_s``) or follow them with SSE keep-alive
comments until the client goes away (``keep_alive``). The server notes when it saw the
client close the connection (``Recorded.closed_at``), so tests can tell an aborted request
from an abandoned one.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Recorded",
    "Reply",
    "Responder",
    "WireServer",
    "anthropic_error",
    "anthropic_message",
    "anthropic_stream",
    "anthropic_usage",
    "cut_stream",
    "empty_body",
    "openai_completion",
    "openai_error",
    "openai_stream",
    "openai_usage",
    "redacted_block",
    "sse_bytes",
    "strip_images",
    "text_block",
    "thinking_block",
    "tool_use_block",
]


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = 0.0
    """``time.monotonic()`` when the request was read."""
    closed_at: float | None = None
    """When the server saw the client close the connection while it was still answering
    (waiting, trickling or keeping alive); None if it never did."""


@dataclass
class Reply:
    """One programmed answer: a JSON body, or an SSE stream when ``events`` is set."""

    status: int = 200
    body: Any = None
    events: list[tuple[str | None, str]] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Wait this long before answering (interrupted when the server closes): timeouts."""
    drop: bool = False
    """Close the connection without answering: a dropped connection."""
    raw: bytes | None = None
    """Send exactly these body bytes (a recorded body, an empty one); ``headers`` should
    name the content type."""
    event_delay_s: float = 0.0
    """Wait this long before each SSE event: a slow trickle."""
    keep_alive: bytes | None = None
    """After the events, send these bytes (an SSE comment like ``b": ping\\n\\n"``) every
    ``keep_alive_every_s`` until the client goes away or the server closes."""
    keep_alive_every_s: float = 0.05


Responder = Callable[[Recorded], Reply]


class WireServer:
    """The server; use as a context manager."""

    def __init__(
        self, responder: Responder | None = None, *, tls: ssl.SSLContext | None = None
    ) -> None:
        """``tls``: serve HTTPS with this server-side context (the URLs become https)."""
        self.responder = responder
        self.requests: list[Recorded] = []
        self._queue: deque[Reply | Responder] = deque()
        self.routes: dict[str, deque[Reply]] = {}
        """Replies for one path (any method), taken before the queue: a server's own
        endpoints beside the API (``/props``, ``/tokenize``) in a replayed transcript. A
        GET to a path without a route is answered 404, as by a server without it, and
        kept in :attr:`unrouted` rather than :attr:`requests`."""
        self.unrouted: list[Recorded] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.scheme = "http"
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"
        self._httpd.daemon_threads = True
        self._httpd.wire = self  # type: ignore[attr-defined]
        # A short poll interval: shutdown() waits for the serve loop to notice.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def openai_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def reply(self, *replies: Reply | Responder) -> WireServer:
        """Queue answers for the next requests, in order (before the ``responder``)."""
        with self._lock:
            self._queue.extend(replies)
        return self

    def bodies(self) -> list[Any]:
        return [request.body for request in self.requests]

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def route(self, path: str, *replies: Reply) -> None:
        """Answer requests to ``path`` with ``replies``, in order (see :attr:`routes`)."""
        with self._lock:
            self.routes.setdefault(path, deque()).extend(replies)

    def _answer(self, request: Recorded) -> Reply:
        with self._lock:
            routed = self.routes.get(request.path)
            if request.method != "POST" and not routed:
                # A server without the endpoint; not one of the API calls tests count.
                self.unrouted.append(request)
                return Reply(404, {"error": {"message": "File Not Found"}})
            self.requests.append(request)
            if routed:
                return routed.popleft()
            step = self._queue.popleft() if self._queue else self.responder
        if step is None:
            return Reply(500, {"error": {"message": "wire server: no reply programmed"}})
        return step if isinstance(step, Reply) else step(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_GET(self) -> None:
        self.do_POST(method="GET")

    def do_POST(self, method: str = "POST") -> None:
        wire: WireServer = self.server.wire
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Recorded(
            method=method,
            path=self.path,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=body,
        )
        request.received_at = time.monotonic()
        reply = wire._answer(request)
        self._recorded = request
        if reply.delay_s and not self._wait(reply.delay_s):
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            if reply.drop:
                self.close_connection = True
                return
            if reply.raw is not None:
                self._send_raw(reply)
            elif reply.events is not None:
                self._send_events(reply)
            else:
                self._send_json(reply)

    def _client_gone(self) -> bool:
        """The client closed (or shut down) its end: the socket reads as end-of-file."""
        sock: socket.socket = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _wait(self, seconds: float) -> bool:
        """Wait, watching the client; False (and ``closed_at`` noted) if it went away."""
        wire: WireServer = self.server.wire
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if self._client_gone():
                self._recorded.closed_at = time.monotonic()
                self.close_connection = True
                return False
            if wire._closing.wait(min(0.01, remaining)):
                return False
        return True

    def _send_raw(self, reply: Reply) -> None:
        data = reply.raw or b""
        self.send_response(reply.status)
        if "content-length" not in {key.lower() for key in reply.headers}:
            self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        # Said, not only done: a client that reused the connection would race the close.
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True  # a body shorter than its Content-Length ends here

    def _send_json(self, reply: Reply) -> None:
        data = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.close_connection = True
        for event, data in reply.events or []:
            if reply.event_delay_s and not self._wait(reply.event_delay_s):
                return
            frame = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
            self.wfile.write(frame.encode())
            self.wfile.flush()
        while reply.keep_alive is not None:
            try:
                self.wfile.write(reply.keep_alive)
                self.wfile.flush()
            except OSError:
                self._recorded.closed_at = time.monotonic()
                return
            if not self._wait(reply.keep_alive_every_s):
                return

    def log_message(self, format: str, *args: Any) -> None:
        pass


def sse_bytes(events: Iterable[tuple[str | None, str]]) -> bytes:
    """SSE events as the bytes the server writes for them."""
    frames = (
        (f"event: {event}\n" if event else "") + f"data: {data}\n\n" for event, data in events
    )
    return "".join(frames).encode()


def cut_stream(reply: Reply, *, keep: int | None = None, at_byte: int | None = None) -> Reply:
    """The stream of ``reply`` cut off: after its first ``keep`` events, or after
    ``at_byte`` bytes of its body (the connection then closes cleanly, as a server that
    crashed or a proxy that gave up would leave it)."""
    assert reply.events is not None
    if keep is not None:
        return Reply(status=reply.status, events=reply.events[:keep], headers=dict(reply.headers))
    body = sse_bytes(reply.events)
    return Reply(
        status=reply.status,
        raw=body[: at_byte if at_byte is not None else len(body)],
        headers={"Content-Type": "text/event-stream", **reply.headers},
    )


def empty_body(content_type: str = "application/json") -> Reply:
    """HTTP 200 with nothing in the body."""
    return Reply(raw=b"", headers={"Content-Type": content_type})


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


def strip_images(value: Any) -> Any:
    """Replace base64 image payloads with their length (for readable snapshots)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "data" and isinstance(item, str) and len(item) > 64:
                out[key] = f"<{len(item)} base64 chars>"
            elif key == "url" and isinstance(item, str) and item.startswith("data:"):
                head = item.split(",", 1)[0]
                out[key] = f"{head},<{len(item)} chars>"
            else:
                out[key] = strip_images(item)
        return out
    if isinstance(value, list):
        return [strip_images(item) for item in value]
    return value


# =========================================================================== OpenAI

ToolCallSpec = tuple[str, str, "str | dict[str, Any]"]
"""(id, name, arguments as JSON text or an object)."""


def openai_usage(prompt: int, completion: int, *, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _arguments_text(arguments: str | dict[str, Any]) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def openai_completion(
    text: str = "",
    *,
    tool_calls: Sequence[ToolCallSpec] = (),
    reasoning: str | None = None,
    reasoning_field: str = "reasoning_content",
    usage: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "gpt-test",
) -> Reply:
    """A non-streamed ``chat.completion``."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if reasoning is not None:
        message[reasoning_field] = reasoning
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": _arguments_text(arguments)},
            }
            for call_id, name, arguments in tool_calls
        ]
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": usage or openai_usage(100, 10),
    }
    return Reply(body=body)


def openai_stream(
    text: str = "",
    *,
    tool_calls: Sequence[ToolCallSpec] = (),
    reasoning: str | None = None,
    reasoning_field: str = "reasoning_content",
    usage: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    model: str = "gpt-test",
    piece: int = 5,
) -> Reply:
    """A streamed ``chat.completion.chunk`` sequence: reasoning, text and tool-call argument
    fragments ``piece`` characters long, the finish chunk, a usage chunk, ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
        data = {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return None, json.dumps(data)

    events: list[tuple[str | None, str]] = [chunk({"role": "assistant", "content": ""})]
    for fragment in _pieces(reasoning or "", piece):
        events.append(chunk({reasoning_field: fragment}))
    for fragment in _pieces(text, piece):
        events.append(chunk({"content": fragment}))
    for index, (call_id, name, arguments) in enumerate(tool_calls):
        opening = {"index": index, "id": call_id, "type": "function"}
        opening["function"] = {"name": name, "arguments": ""}
        events.append(chunk({"tool_calls": [opening]}))
        for fragment in _pieces(_arguments_text(arguments), piece):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            )
    events.append(chunk({}, finish_reason or ("tool_calls" if tool_calls else "stop")))
    final_usage = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [],
        "usage": usage or openai_usage(100, 10),
    }
    events.append((None, json.dumps(final_usage)))
    events.append((None, "[DONE]"))
    return Reply(events=events)


def openai_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    body = {"error": {"message": message, "type": type, "param": None, "code": code}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


# =========================================================================== Anthropic


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def thinking_block(thinking: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def redacted_block(data: str) -> dict[str, Any]:
    return {"type": "redacted_thinking", "data": data}


def tool_use_block(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def anthropic_usage(
    input_tokens: int, output_tokens: int, *, cache_read: int = 0, cache_write: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


def _stop_reason(blocks: Iterable[dict[str, Any]], stop_reason: str | None) -> str:
    if stop_reason:
        return stop_reason
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def anthropic_message(
    blocks: Sequence[dict[str, Any]],
    *,
    usage: dict[str, Any] | None = None,
    stop_reason: str | None = None,
    model: str = "claude-test",
) -> Reply:
    """A non-streamed ``message``."""
    body = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks),
        "stop_reason": _stop_reason(blocks, stop_reason),
        "stop_sequence": None,
        "usage": usage or anthropic_usage(100, 10),
    }
    return Reply(body=body)


def anthropic_stream(
    blocks: Sequence[dict[str, Any]],
    *,
    usage: dict[str, Any] | None = None,
    stop_reason: str | None = None,
    model: str = "claude-test",
    piece: int = 5,
) -> Reply:
    """A streamed message: ``message_start``, per block ``content_block_start`` / deltas /
    ``content_block_stop``, a ``ping``, ``message_delta`` with the stop reason and output
    usage, ``message_stop``."""
    usage = usage or anthropic_usage(100, 10)
    start_usage = dict(usage, output_tokens=1)

    def event(name: str, data: dict[str, Any]) -> tuple[str, str]:
        return name, json.dumps({"type": name, **data})

    message = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events = [event("message_start", {"message": message}), event("ping", {})]
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], piece)]
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], piece)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "redacted_thinking":
            opening, deltas = dict(block), []
        elif kind == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = block.get("raw_json", json.dumps(block["input"]))
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw, piece)]
        else:
            raise ValueError(f"unknown block type {kind!r}")
        events.append(event("content_block_start", {"index": index, "content_block": opening}))
        for delta in deltas:
            events.append(event("content_block_delta", {"index": index, "delta": delta}))
        events.append(event("content_block_stop", {"index": index}))
    delta = {"stop_reason": _stop_reason(blocks, stop_reason), "stop_sequence": None}
    events.append(
        event("message_delta", {"delta": delta, "usage": {"output_tokens": usage["output_tokens"]}})
    )
    events.append(event("message_stop", {}))
    return Reply(events=events)


def anthropic_error(
    status: int, type: str, message: str, *, headers: dict[str, str] | None = None
) -> Reply:
    body = {"type": "error", "error": {"type": type, "message": message}}
    return Reply(status=status, body=body, headers=dict(headers or {}))
