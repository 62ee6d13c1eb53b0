"""Opening an MCP client session with the installed SDK (2.x, or 1.x from 1.20).

Everything past this module sees a :class:`Session` that lists tools and calls them, with
results as the protocol's wire-format dicts: the SDK's model classes renamed their fields
between major versions, the wire format did not.

``tools/list_changed`` reaches ``on_tools_changed`` either way the server announces it:
as the handshake-era notification, or (2026-07-28 protocol and later, 2.x only) through a
``subscriptions/listen`` stream opened right after connecting.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio

from harness.mcp.convert import wire
from harness.mcp.logs import ServerLog

__all__ = [
    "CONNECTION_CLOSED",
    "INVALID_REQUEST",
    "Endpoint",
    "Session",
    "SessionHealth",
    "describe",
    "is_connection_error",
    "leaf_error",
    "open_session",
    "sdk_major",
]

CONNECTION_CLOSED = -32000
"""JSON-RPC error code the SDK uses when the transport closed under a pending request."""
INVALID_REQUEST = -32600
"""The spec's code for a request on a session the server no longer knows."""

MAX_LIST_PAGES = 100
"""A server whose tools/list never ends cannot hang the harness."""

TOOLS_CHANGED = "notifications/tools/list_changed"
SERVER_LOG_LEVEL = "info"
"""Log notifications at this level and above are asked for and written to ``<name>.log``."""


@dataclass(frozen=True)
class Endpoint:
    """Where a server is, resolved from its config (paths, environment, token)."""

    name: str
    transport: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]


class Session:
    """An open client session (see the module docstring).

    ``instructions`` are what the server asked clients to tell the model (may be empty);
    ``resources`` says whether it serves ``resources/read``;
    ``broken`` is set, from the transport, when the connection failed under the session:
    a request still waiting then gets no answer, and its caller stops waiting.
    """

    def __init__(
        self,
        *,
        list_page: Callable[[str | None], Awaitable[Any]],
        call: Callable[[str, dict[str, Any], ProgressCallback | None], Awaitable[Any]],
        read: Callable[[str], Awaitable[Any]],
        protocol_version: str,
        instructions: str,
        resources: bool,
        health: SessionHealth,
    ) -> None:
        self._list_page = list_page
        self._call = call
        self._read = read
        self._health = health
        self.protocol_version = protocol_version
        self.instructions = instructions
        self.resources = resources

    @property
    def broken(self) -> str | None:
        return self._health.broken

    @property
    def unsent_calls(self) -> int:
        """``tools/call`` requests that never reached the server (its connection could not
        be opened); a caller compares the count before and after its call."""
        return self._health.unsent_calls

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server offers (all pages), as wire-format dicts."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = wire(await self._list_page(cursor))
            tools.extend(page.get("tools") or [])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        return wire(await self._call(name, dict(arguments), progress))

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read`` as its wire-format result (``contents``)."""
        return wire(await self._read(uri))


@dataclass
class SessionHealth:
    """Written by the session's message handler, read by callers on other threads."""

    broken: str | None = None
    unsent_calls: int = 0


def _connect_watching(httpx_module: Any, health: SessionHealth) -> Any:
    """An HTTP transport that counts ``tools/call`` requests whose connection could not
    be opened (the server was already down): those never reached it, so they did not run.
    A request sent and then cut off (the server died during it) is not counted."""

    class ConnectWatch(httpx_module.AsyncHTTPTransport):  # type: ignore[misc, name-defined]
        async def handle_async_request(self, request: Any) -> Any:
            try:
                return await super().handle_async_request(request)
            except httpx_module.ConnectError:
                if request.method == "POST" and b"tools/call" in (request.content or b""):
                    health.unsent_calls += 1
                raise

    return ConnectWatch()


def sdk_major() -> int:
    """2 when the installed SDK has the unified ``mcp.Client``, else 1."""
    try:
        import mcp
    except ImportError:
        raise ImportError(
            "MCP servers are configured (mcp.servers) but the `mcp` package is not "
            "installed: pip install 'embodied-harness[mcp]'"
        ) from None
    return 2 if hasattr(mcp, "Client") else 1


def _client_info() -> Any:
    from importlib.metadata import PackageNotFoundError, version

    import mcp

    try:
        ours = version("embodied-harness")
    except PackageNotFoundError:
        ours = "0"
    return mcp.types.Implementation(name="embodied-harness", version=ours)


def notification_handler(
    on_tools_changed: Callable[[], None], health: SessionHealth | None = None
) -> Callable[[Any], Awaitable[None]]:
    health = health or SessionHealth()

    async def handle(message: Any) -> None:
        if isinstance(message, Exception):
            # The transport failed (a dropped HTTP stream, a server killed mid-call);
            # requests still waiting on this session will get no answer.
            health.broken = describe(message)
            return
        notification = getattr(message, "root", message)
        if getattr(notification, "method", None) == TOOLS_CHANGED:
            on_tools_changed()

    return handle


def _logging_callback(log: ServerLog) -> Callable[[Any], Awaitable[None]]:
    async def on_log(params: Any) -> None:
        log.notification(str(params.level), params.logger, params.data)

    return on_log


@asynccontextmanager
async def open_session(
    endpoint: Endpoint,
    *,
    errlog: TextIO,
    log: ServerLog,
    on_tools_changed: Callable[[], None],
) -> AsyncIterator[Session]:
    """Connect (starting the subprocess for stdio), hand back the session, and shut the
    connection and the subprocess down on exit (the SDK's bounded shutdown).

    ``errlog`` receives a stdio server's stderr; ``log`` its log notifications and the
    SDK's own log lines about this connection.
    """
    opener = _open_v2 if sdk_major() >= 2 else _open_v1
    with log.active():
        async with opener(endpoint, errlog, log, on_tools_changed) as session:
            yield session


@asynccontextmanager
async def _open_v2(
    endpoint: Endpoint, errlog: TextIO, log: ServerLog, on_tools_changed: Callable[[], None]
) -> AsyncIterator[Session]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    health = SessionHealth()
    async with AsyncExitStack() as stack:
        target: Any
        if endpoint.transport == "stdio":
            assert endpoint.command is not None
            params = StdioServerParameters(
                command=endpoint.command, args=endpoint.args, env=endpoint.env, cwd=endpoint.cwd
            )
            target = stdio_client(params, errlog=errlog)
        else:
            import httpx2

            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=endpoint.headers or None,
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    transport=_connect_watching(httpx2, health),
                )
            )
            target = streamable_http_client(endpoint.url or "", http_client=http)
        client = await stack.enter_async_context(
            Client(
                target,
                message_handler=notification_handler(on_tools_changed, health),
                logging_callback=_logging_callback(log),
                log_level=SERVER_LOG_LEVEL,  # the opt-in of 2026-07-28 connections
                client_info=_client_info(),
                cache=None,  # tools/list must always reach the server (probes, refreshes)
            )
        )
        if getattr(client.server_capabilities, "logging", None) is not None:
            await _set_log_level(client)
        group = await stack.enter_async_context(anyio.create_task_group())
        await group.start(_listen_v2, client, on_tools_changed)

        async def list_page(cursor: str | None) -> Any:
            return await client.list_tools(cursor=cursor)

        async def call(name: str, arguments: dict[str, Any], progress: Any) -> Any:
            return await client.call_tool(name, arguments, progress_callback=progress)

        async def read(uri: str) -> Any:
            return await client.read_resource(uri)

        try:
            yield Session(
                list_page=list_page,
                call=call,
                read=read,
                protocol_version=client.protocol_version,
                instructions=client.instructions or "",
                resources=getattr(client.server_capabilities, "resources", None) is not None,
                health=health,
            )
        finally:
            group.cancel_scope.cancel()


async def _set_log_level(client: Any) -> None:
    """Ask a handshake-era server for its log notifications (``logging/setLevel``); the
    request is deprecated from 2026-07-28 on, and a server may refuse it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.suppress(Exception):
            await client.set_logging_level(SERVER_LOG_LEVEL)


async def _listen_v2(
    client: Any,
    on_tools_changed: Callable[[], None],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Follow tools/list changes on a ``subscriptions/listen`` stream (2026-07-28+).

    Older protocol versions refuse it at once (they send the notification instead); a
    stream that ends because the server went away ends quietly: the next call notices.
    """
    started = False
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            task_status.started()
            started = True
            async for _event in subscription:
                on_tools_changed()
    except Exception:
        pass
    finally:
        if not started:
            with contextlib.suppress(RuntimeError):
                task_status.started()


@asynccontextmanager
async def _open_v1(
    endpoint: Endpoint, errlog: TextIO, log: ServerLog, on_tools_changed: Callable[[], None]
) -> AsyncIterator[Session]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    health = SessionHealth()
    async with AsyncExitStack() as stack:
        if endpoint.transport == "stdio":
            assert endpoint.command is not None
            params = StdioServerParameters(
                command=endpoint.command, args=endpoint.args, env=endpoint.env, cwd=endpoint.cwd
            )
            read_stream, write = await stack.enter_async_context(
                stdio_client(params, errlog=errlog)
            )
        else:
            from mcp.client import streamable_http

            if hasattr(streamable_http, "streamable_http_client"):  # 1.25 and later
                import httpx

                http = await stack.enter_async_context(
                    httpx.AsyncClient(
                        headers=endpoint.headers, timeout=httpx.Timeout(30.0, read=300.0)
                    )
                )
                transport = streamable_http.streamable_http_client(
                    endpoint.url or "", http_client=http
                )
            else:
                transport = streamable_http.streamablehttp_client(
                    endpoint.url or "", headers=endpoint.headers or None
                )
            read_stream, write, _ = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(
            ClientSession(
                read_stream,
                write,
                message_handler=notification_handler(on_tools_changed, health),
                logging_callback=_logging_callback(log),
                client_info=_client_info(),
            )
        )
        initialized = await session.initialize()
        if getattr(initialized.capabilities, "logging", None) is not None:
            await _set_log_level(session)

        async def list_page(cursor: str | None) -> Any:
            return await (session.list_tools(cursor) if cursor else session.list_tools())

        async def call(name: str, arguments: dict[str, Any], progress: Any) -> Any:
            return await session.call_tool(name, arguments, progress_callback=progress)

        async def read(uri: str) -> Any:
            from pydantic import AnyUrl

            return await session.read_resource(AnyUrl(uri))

        yield Session(
            list_page=list_page,
            call=call,
            read=read,
            protocol_version=str(initialized.protocolVersion),
            instructions=initialized.instructions or "",
            resources=getattr(initialized.capabilities, "resources", None) is not None,
            health=health,
        )


def leaf_error(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def is_connection_error(exc: BaseException) -> bool:
    """The transport is gone (the server exited or the connection dropped), as opposed to
    the server answering with an error."""
    exc = leaf_error(exc)
    if isinstance(exc, BaseExceptionGroup):
        return any(is_connection_error(inner) for inner in exc.exceptions)
    code = getattr(exc, "code", None)
    if code is None:
        code = getattr(getattr(exc, "error", None), "code", None)
    if code == CONNECTION_CLOSED:
        return True
    if isinstance(
        exc,
        anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | ConnectionError,
    ):
        return True
    module = type(exc).__module__ or ""
    return module.startswith(("httpx", "httpcore")) and "Timeout" not in type(exc).__name__


def describe(exc: BaseException) -> str:
    """One readable line for an exception from the SDK or a transport."""
    exc = leaf_error(exc)
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions[:3])
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
