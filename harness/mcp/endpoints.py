"""How a configured MCP server is reached: the endpoint one ``mcp.servers`` entry gives.

The :class:`~harness.mcp.client_session.Endpoint` is its URL, or its command, environment and
folder.

The environment a stdio server sees is only what ``env_passthrough`` lets through plus
its own ``env``; a ``cwd`` that is not a folder is a config error naming the key. This is
config-to-transport translation, kept out of the manager's lifecycle code.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from pathlib import Path

from harness.config import MCPServerConfig
from harness.errors import ConfigError
from harness.mcp.client_session import Endpoint

__all__ = ["endpoint_for"]


def endpoint_for(
    config: MCPServerConfig,
    *,
    index: int,
    base_dir: Path | None,
    environ: Mapping[str, str],
) -> Endpoint:
    """Where and how to reach the server ``mcp.servers[index]`` describes: its URL, or
    its command with the environment it is given and the folder it runs in."""
    if config.transport != "stdio":
        return Endpoint(
            name=config.name, transport=config.transport, url=config.url, headers=config.headers
        )
    env = {
        key: value
        for key, value in environ.items()
        if any(fnmatch.fnmatchcase(key, pattern) for pattern in config.env_passthrough)
    }
    env.update(config.env)
    cwd: Path | None = base_dir
    if config.cwd is not None:
        cwd = Path(os.path.expanduser(config.cwd))
        if not cwd.is_absolute() and base_dir is not None:
            cwd = base_dir / cwd
    if cwd is not None and not cwd.is_dir():
        raise ConfigError(
            f"mcp.servers.{index}.cwd: {str(cwd)!r} is not a folder",
            key=f"mcp.servers.{index}.cwd",
            value=config.cwd,
        )
    return Endpoint(
        name=config.name,
        transport="stdio",
        command=config.command,
        args=list(config.args),
        env=env,
        cwd=str(cwd) if cwd is not None else None,
    )
