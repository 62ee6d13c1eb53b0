"""A real MCP server, in this process, that records the arguments each call carried
(needs the ``mcp`` extra and uvicorn).

Built on the SDK's low-level ``Server`` (no argument model of its own: what a handler sees
is exactly what arrived on the wire) and served over streamable HTTP by uvicorn on a
daemon thread, so an attack (or a test) reads what reached the "hardware" from
:attr:`RecordingServer.received` without trusting the harness. The advertised tools are
:attr:`schemas` (a caller may change them); ``grow`` adds a tool and announces the new
list (``list_changed``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.lowlevel
import mcp.types as types
import uvicorn
from mcp.server import lowlevel

__all__ = ["RecordingServer"]


class RecordingServer:
    """See the module docstring. Use as a context manager (it stops the server)."""

    def __init__(self, schemas: Mapping[str, Mapping[str, Any]]) -> None:
        self.schemas: dict[str, dict[str, Any]] = {k: dict(v) for k, v in schemas.items()}
        self.received: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        from mcp.server.subscriptions import ListenHandler

        self._bus = _Bus()
        server = lowlevel.Server(
            "rec",
            on_list_tools=self._list,
            on_call_tool=self._call,
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        config = uvicorn.Config(
            server.streamable_http_app(), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run, name="mcp-rec", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._uvicorn.started:
            assert time.monotonic() < deadline and self._thread.is_alive(), "server did not start"
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def calls(self, name: str) -> list[dict[str, Any]]:
        return [arguments for tool, arguments in self.received if tool == name]

    async def _list(self, ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=f"{name} (recording)", input_schema=schema)
                for name, schema in self.schemas.items()
            ]
        )

    async def _call(self, ctx: Any, params: Any) -> Any:
        arguments = dict(params.arguments or {})
        if params.name == "grow":
            self.schemas[str(arguments["tool_name"])] = dict(arguments.get("schema") or {})
            from mcp.shared.subscriptions import ToolsListChanged

            await ctx.session.send_tool_list_changed()  # handshake-era protocol versions
            # 2026-07-28: subscriptions/listen, which the client opens right after it
            # connects; an event published before that stream is up would be lost.
            for _ in range(500):
                if self._bus.listeners:
                    break
                await anyio.sleep(0.01)
            await self._bus.publish(ToolsListChanged())
            return _text(f"added {arguments['tool_name']}")
        with self._lock:
            self.received.append((params.name, arguments))
        return _text(f"{params.name} executed")

    def close(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(10)

    def __enter__(self) -> RecordingServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Bus:
    """The SDK's in-memory subscription bus, plus whether anyone listens yet."""

    def __init__(self) -> None:
        self.listeners: dict[object, Any] = {}

    async def publish(self, event: Any) -> None:
        for listener in list(self.listeners.values()):
            listener(event)
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Any) -> Any:
        token = object()
        self.listeners[token] = listener
        return lambda: self.listeners.pop(token, None)


def _text(text: str) -> Any:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
