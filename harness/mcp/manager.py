"""The MCP servers one Harness owns, offered to it as tools.

:class:`MCPManager` starts every configured server (in parallel), lists their tools,
and is the Harness's *tool source*: the Harness registers :meth:`MCPManager.tools` at
construction and, between turns only, asks :meth:`MCPManager.tools_changed` whether a
server announced a new tool list. ``close()`` ends every session and every subprocess
(checked by pid); so does a failing start, and so does interpreter exit for a manager that
was never closed.

A server that fails to start does not stop the others: it is closed, its tools are absent,
and it is reported (``check()`` for ``harness check``, a Resident notice for the model,
:meth:`MCPManager.unavailable` for the session's event). A server marked ``required: true``
still fails the whole start.

Use it through the config (``mcp.servers``; ``Harness.from_config`` owns the manager), or
by hand::

    with MCPManager.start_servers(config.mcp.servers) as mcp:
        harness = Harness(config, tool_sources=[mcp], ...)

This module keeps the set of servers and when tools are offered; what one listing entry
becomes is in ``offering``, the tool itself in ``tool``, and how a server is reached in
``endpoints`` (``MCPTool`` and ``failed_status`` are re-exported here).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.config import HarnessConfig, MCPServerConfig, ObservationConfig
from harness.errors import ConfigError
from harness.mcp.client_session import describe, sdk_major
from harness.mcp.endpoints import endpoint_for
from harness.mcp.logs import install_sdk_log_router
from harness.mcp.loop_thread import LoopThread
from harness.mcp.naming import ToolNames, check_physical, matches, offered, unclassified
from harness.mcp.offering import (
    INSTRUCTIONS_MAX_CHARS,
    resident_section,
    schema_problem,
    task_only,
    tool_from_listing,
)
from harness.mcp.processes import OwnedProcesses
from harness.mcp.resources import READ_RESOURCE, read_resource_tool, render_contents
from harness.mcp.server import MCPServerError, ServerConnection, ServerStatus, ServerUnavailable
from harness.mcp.tool import MCPTool, failed_status
from harness.redact import Redactor
from harness.tools import Tool, ToolOutput

__all__ = ["INSTRUCTIONS_MAX_CHARS", "MCPManager", "MCPTool", "failed_status"]

logger = logging.getLogger(__name__)

LOOP_CLOSE_TIMEOUT_S = 10.0


class MCPManager:
    """Owns MCP servers for one Harness (see the module docstring).

    Args:
        servers: The ``mcp.servers`` entries.
        base_dir: Folder relative ``cwd`` paths resolve against, and the default working
            directory of stdio servers (the config file's folder).
        log_dir: Where each server's stderr goes (``<name>.log``); a temporary folder,
            removed on close, when omitted.
        images: Limits applied to images returned by tools.
        environ: The environment ``env_passthrough`` reads (default: ``os.environ``).
        redactor: Applied to each server's stderr before it reaches its log file
            (built-in key shapes when omitted; ``from_config`` passes the session's).
    """

    def __init__(
        self,
        servers: Sequence[MCPServerConfig],
        *,
        base_dir: str | os.PathLike[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        images: ObservationConfig | None = None,
        environ: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        names = [server.name for server in servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ConfigError(
                f"mcp.servers: server names must be unique, {', '.join(duplicates)} repeats",
                key="mcp.servers",
                value=duplicates,
            )
        self._configs = list(servers)
        self._base_dir = Path(base_dir) if base_dir is not None else None
        self._temp_logs: tempfile.TemporaryDirectory[str] | None = None
        if log_dir is None and servers:
            self._temp_logs = tempfile.TemporaryDirectory(prefix="harness-mcp-")
            log_dir = self._temp_logs.name
        self._log_dir = Path(log_dir) if log_dir is not None else None
        self._images = images or ObservationConfig()
        self._environ = dict(os.environ if environ is None else environ)
        self._redactor = redactor
        self._owned = OwnedProcesses()
        # Runs at interpreter exit (or if the manager is collected unclosed): ends every
        # subprocess it started. It holds only the process registry, never the manager.
        self._exit_sweep = weakref.finalize(self, self._owned.sweep, grace_s=0.5)
        self._loop: LoopThread | None = None
        self._servers: dict[str, ServerConnection] = {}
        self._failed: dict[str, str] = {}
        """Optional servers that did not start, with why (:meth:`unavailable`)."""
        self._names = ToolNames()
        self._skipped: dict[str, str] = {}
        self._withheld: dict[str, str] = {}
        self._at_startup: dict[str, set[str]] = {}
        self._offering_read = False
        self._lock = threading.Lock()
        self._closed = False

    # ================================================================== construction

    @classmethod
    def start_servers(cls, servers: Sequence[MCPServerConfig], **options: Any) -> MCPManager:
        """Create a manager and start its servers (closing everything if one fails)."""
        manager = cls(servers, **options)
        manager.start()
        return manager

    @classmethod
    def from_config(cls, config: HarnessConfig, *, redactor: Redactor | None = None) -> MCPManager:
        """The manager ``Harness.from_config`` builds: logs next to the run store."""
        log_dir = None
        if config.run.store:
            log_dir = config.resolve_path(config.run.store) / "mcp"
        return cls.start_servers(
            config.mcp.servers,
            base_dir=config.base_dir,
            log_dir=log_dir,
            images=config.observation,
            redactor=redactor,
        )

    def start(self) -> None:
        """Start every server in parallel; on any failure close everything and raise
        :class:`MCPServerError` (or :class:`ConfigError` for a physical pattern that
        matches no tool)."""
        if self._loop is not None:
            raise RuntimeError("MCPManager.start() was already called")
        if self._closed:
            raise RuntimeError("this MCPManager is closed")
        try:
            if not self._configs:
                return
            sdk_major()  # a clear ImportError when the extra is missing
            install_sdk_log_router()
            self._loop = LoopThread("harness-mcp")
            for index, config in enumerate(self._configs):
                assert self._log_dir is not None
                self._servers[config.name] = ServerConnection(
                    config,
                    endpoint=endpoint_for(
                        config,
                        index=index,
                        base_dir=self._base_dir,
                        environ=self._environ,
                    ),
                    loop=self._loop,
                    owned=self._owned,
                    log_path=self._log_dir / f"{config.name}.log",
                    images=self._images,
                    redactor=self._redactor,
                )
            launches = [(server, server.launch()) for server in self._servers.values()]
            failures: dict[str, str] = {}
            for server, launch in launches:
                try:
                    server.finish_launch(launch)
                except MCPServerError as exc:
                    failures[server.name] = str(exc)
            required = {config.name for config in self._configs if config.required}
            if failures.keys() & required:
                started = {
                    server.name: len(server.listing)
                    for server in self._servers.values()
                    if server.name not in failures
                }
                raise MCPServerError(
                    "; ".join(failures.values()), failures=failures, started=started
                )
            for name, reason in failures.items():  # optional servers: the rest goes on
                self._give_up(name, reason)
            self._check_physical_patterns()
        except BaseException:
            with contextlib.suppress(Exception):
                self.close()
            raise

    def _give_up(self, name: str, reason: str) -> None:
        """An optional server that did not start: closed, its tools absent, its failure
        kept for ``harness check``, the model (:meth:`resident_text`) and the operator
        (:meth:`unavailable`)."""
        server = self._servers.pop(name)
        with contextlib.suppress(Exception):
            server.close()
        self._failed[name] = reason
        logger.warning("mcp server %r did not start; its tools are not offered: %s", name, reason)

    def unavailable(self) -> dict[str, str]:
        """Servers that failed to start (not ``required``), with why: their tools are
        absent for the whole session."""
        return dict(self._failed)

    def _check_physical_patterns(self) -> None:
        for index, config in enumerate(self._configs):
            if config.name not in self._failed:
                listing = self._servers[config.name].listing
                check_physical(config, [str(tool.get("name")) for tool in listing], index=index)

    # ================================================================== tool source

    def tools_changed(self) -> bool:
        """True when a server announced a new tool list (or came back with one), or when
        the first resource link arrived (``read_resource`` is offered from then on)."""
        return self._reads_resources() != self._offering_read or any(
            server.changed() for server in self._servers.values()
        )

    def _reads_resources(self) -> bool:
        return any(
            server.serves_resources and server.has_links() for server in self._servers.values()
        )

    def tools(self, *, reserved: Iterable[str] = ()) -> list[Tool]:
        """The tools to offer now, refreshing the lists of servers that changed.

        ``reserved`` are names already used by the Harness's other tools: an MCP tool
        with such a name is offered as ``server.tool``. ``read_resource`` is offered too
        once a server that serves resources has returned a resource link.
        """
        with self._lock:
            for server in self._servers.values():
                # What a server listed when it was first offered: its tools are classified
                # by `physical` alone; the ones that appear later are classified first.
                self._at_startup.setdefault(
                    server.name, {str(spec.get("name", "")) for spec in server.listing}
                )
                if server.changed():
                    server.refresh_listing()
            self._skipped = {}
            self._withheld = {}
            entries: list[tuple[ServerConnection, dict[str, Any], dict[str, Any]]] = []
            for index, server in enumerate(self._servers.values()):
                for spec in server.listing:
                    remote = str(spec.get("name", ""))
                    if not remote or not offered(server.config, remote):
                        continue
                    schema = spec.get("inputSchema")
                    if not isinstance(schema, dict):
                        schema = {"type": "object", "properties": {}}
                    problem = schema_problem(schema) or task_only(spec)
                    if problem is None and remote not in self._at_startup[server.name]:
                        problem = unclassified(server.config, remote, schema, index=index)
                        if problem is not None:
                            self._withheld[f"{server.name}.{remote}"] = problem
                    if problem is not None:
                        self._skipped[f"{server.name}.{remote}"] = problem
                        continue
                    entries.append((server, spec, schema))
            reads = self._reads_resources()
            self._offering_read = reads
            taken = [*reserved, READ_RESOURCE] if reads else list(reserved)
            names = self._names.assign(
                [(server.name, str(spec["name"])) for server, spec, _ in entries],
                reserved=taken,
            )
            tools: list[Tool] = []
            for server, spec, schema in entries:
                name = names[(server.name, str(spec["name"]))]
                tools.append(tool_from_listing(name, server, spec, schema))
            if reads and READ_RESOURCE not in set(reserved):
                tools.append(read_resource_tool(self.read_resource))
            return tools

    def resident_text(self) -> str:
        """The servers' ``instructions`` for Resident (each cut to
        ``INSTRUCTIONS_MAX_CHARS``), or "" when no server gives any."""
        return resident_section(list(self._servers.values()), self._failed)

    def read_resource(self, uri: str, offset: int = 0, limit: int = 4000) -> ToolOutput:
        """Read a resource by URI from the server that linked it most recently (else the
        only server that serves resources), as a bounded slice."""
        server = self._server_for(uri)
        if server is None:
            serving = [s.name for s in self._servers.values() if s.serves_resources]
            return ToolOutput.error(
                f"no MCP server returned a link to {uri}; servers with resources: "
                f"{', '.join(serving) or 'none'}",
                "not_found",
                executed=False,
            )
        try:
            result = server.read_resource(uri)
        except ServerUnavailable as exc:
            return ToolOutput.error(str(exc), "server_unavailable", executed=False)
        except Exception as exc:
            return ToolOutput.error(
                f"mcp server '{server.name}' could not read {uri}: {describe(exc)}", "tool_error"
            )
        return render_contents(
            result,
            uri=uri,
            offset=offset,
            limit=limit,
            label=f"{server.name}.{READ_RESOURCE}",
            images=self._images,
        )

    def _server_for(self, uri: str) -> ServerConnection | None:
        linked = [s for s in self._servers.values() if s.linked(uri)]
        if linked:
            return max(linked, key=lambda s: s.linked(uri))
        serving = [s for s in self._servers.values() if s.serves_resources]
        return serving[0] if len(serving) == 1 else None

    # ================================================================== control

    def call(
        self, server: str, tool: str, arguments: Mapping[str, Any] | None = None
    ) -> ToolOutput:
        """Call a tool by its server's own name (from a control script, outside a task).

        Physical tools are refused here: they must go through a Harness task, where the
        safety envelope checks them.
        """
        connection = self._server(server)
        if matches(tool, connection.config.physical):
            raise PermissionError(
                f"{server}.{tool} is physical: call it through a Harness task so the safety "
                "envelope checks it"
            )
        return connection.call(tool, dict(arguments or {}), physical=False)

    def skipped_tools(self) -> dict[str, str]:
        """Tools not offered (``server.tool`` -> why): an input schema that is not a valid
        JSON Schema (validating arguments would be impossible), or a tool that can only
        run as a task (``execution.taskSupport: required``), which this client does not
        start."""
        return dict(self._skipped)

    def withheld_tools(self) -> dict[str, str]:
        """Tools that appeared after startup on a server with physical tools and are not
        offered until the config classifies them (``server.tool`` -> what to do); also in
        :meth:`skipped_tools`. The Harness announces each one once, as a warning."""
        return dict(self._withheld)

    def status(self) -> list[ServerStatus]:
        return [server.status() for server in self._servers.values()]

    def check(self) -> list[ServerStatus]:
        """Probe every server now (``harness check``); one that failed to start is
        reported failed, with why."""
        statuses = [server.check() for server in self._servers.values()]
        for config in self._configs:
            if config.name in self._failed:
                statuses.append(failed_status(config, self._failed[config.name]))
        return statuses

    def pids(self) -> dict[str, int | None]:
        """The pid of each stdio server's current process (None while it is down)."""
        return {name: server.status().pid for name, server in self._servers.items()}

    def owned_pids(self) -> list[int]:
        """Every live process this manager started (servers and their children)."""
        return self._owned.alive()

    def restart(self, server: str) -> None:
        """Restart one server now and reset its restart budget."""
        self._server(server).restart()

    def _server(self, name: str) -> ServerConnection:
        try:
            return self._servers[name]
        except KeyError:
            known = ", ".join(self._servers) or "none"
            raise KeyError(f"no mcp server {name!r} (configured: {known})") from None

    # ================================================================== lifecycle

    def close(self) -> None:
        """End every session and subprocess (idempotent). Servers shut down in parallel;
        anything still alive afterwards is ended by pid."""
        if self._closed:
            return
        self._closed = True
        servers = list(self._servers.values())
        for server in servers:
            server.begin_close()
        for server in servers:
            server.finish_close()
        if self._loop is not None:
            self._loop.close(timeout_s=LOOP_CLOSE_TIMEOUT_S)
        self._exit_sweep()  # the final check by pid (and detaches the exit hook)
        if self._temp_logs is not None:
            with contextlib.suppress(OSError):
                self._temp_logs.cleanup()

    def __enter__(self) -> MCPManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
