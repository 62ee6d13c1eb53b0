"""What the servers' listings become for the model: offerable tools and Resident's text.

Which listed tools can be offered at all (a usable input schema, not task-only), the
:class:`~harness.mcp.tool.MCPTool` built from one listing entry, and the Resident text
made of the servers' ``instructions``.

The manager decides *when* to offer (startup, between turns) and under which names; the
rules for *what* one entry turns into live here, each in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from harness.mcp.naming import declared_safety, matches
from harness.mcp.server import ServerConnection
from harness.mcp.tool import MCPTool

__all__ = [
    "INSTRUCTIONS_MAX_CHARS",
    "resident_section",
    "schema_problem",
    "task_only",
    "tool_from_listing",
]

INSTRUCTIONS_MAX_CHARS = 2000
"""A server's ``instructions`` enter Resident cut to this length (they are the server's
words, read on every model call; a long manual belongs in a resource)."""


def task_only(spec: Mapping[str, Any]) -> str | None:
    """Why a listed tool cannot be offered because it runs only as a task, or None."""
    execution = spec.get("execution")
    if isinstance(execution, Mapping) and execution.get("taskSupport") == "required":
        return "it runs only as a task (execution.taskSupport: required); tasks are not supported"
    return None


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why a server's input schema cannot be used as-is, or None when it can."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"invalid input schema: {exc.message}"
    return None


def tool_from_listing(
    name: str, server: ServerConnection, spec: Mapping[str, Any], schema: dict[str, Any]
) -> MCPTool:
    """The tool offered as ``name`` for the listing entry ``spec`` of ``server``."""
    remote = str(spec["name"])
    description = (
        spec.get("description")
        or spec.get("title")
        or f"{remote} (tool of MCP server {server.name})"
    )
    annotations = spec.get("annotations")
    return MCPTool(
        name,
        server=server,
        remote_name=remote,
        description=str(description),
        parameters=schema,
        physical=matches(remote, server.config.physical),
        safety=declared_safety(remote, server.config.safety),
        annotations=annotations if isinstance(annotations, dict) else None,
    )


def resident_section(servers: Sequence[ServerConnection], failed: Mapping[str, str]) -> str:
    """The servers' ``instructions`` for Resident (each cut to ``INSTRUCTIONS_MAX_CHARS``)
    and a notice naming the servers that failed to start; "" when there is neither."""
    sections = []
    for server in servers:
        text = server.instructions.strip()
        if not text:
            continue
        if len(text) > INSTRUCTIONS_MAX_CHARS:
            text = (
                text[:INSTRUCTIONS_MAX_CHARS].rstrip()
                + f" [... cut: {len(text)} characters in all]"
            )
        sections.append(f"## {server.name}\n{text}")
    text = ""
    if sections:
        text = "# MCP server instructions (from each server, about its tools)\n\n"
        text += "\n\n".join(sections)
    if failed:
        names = ", ".join(f"'{name}'" for name in failed)
        notice = (
            f"# MCP servers not available\n\nThe MCP server(s) {names} failed to start; "
            "their tools are not offered this session. Do the task with the tools you "
            "have, or say what is missing."
        )
        text = f"{text}\n\n{notice}" if text else notice
    return text
