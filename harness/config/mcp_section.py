"""The ``mcp`` section of the config: the MCP tool servers a Harness starts or connects
to, how their tools are offered, and which of them move hardware (with what the safety
envelope reads from their arguments).

Part of the model tree of :mod:`harness.config.schema` (which re-exports both classes
here, as does :mod:`harness.config`); the server section lives apart for its size and its
cross-checks between tool lists.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

from pydantic import Field, model_validator

from harness.config.section import Section as _Section

__all__ = ["MCPConfig", "MCPServerConfig"]


class MCPServerConfig(_Section):
    """One MCP tool server the Harness starts (stdio) or connects to (streamable-http) and
    owns for the whole session. Tool lists below use the server's own tool names and
    accept shell-style globs (``move_*``)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_\-]+$")
    """Namespace of the server's tools when their names collide (``name.tool``)."""
    transport: Literal["stdio", "streamable-http"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the subprocess (the SDK passes only a safe minimum, e.g. PATH)."""
    env_passthrough: list[str] = Field(default_factory=list)
    """Variables of the harness's own environment to pass on, globs allowed
    (``[ROS_*, AMENT_PREFIX_PATH, LD_LIBRARY_PATH]``); API keys stay private otherwise."""
    cwd: str | None = None
    """Working directory; defaults to the config file's folder."""
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    call_timeout_s: float = Field(30.0, gt=0)
    startup_timeout_s: float = Field(20.0, gt=0)
    """Also bounds a restart and the liveness probe after a timed-out call."""
    physical: list[str] = Field(default_factory=list)
    """Tools that move hardware: they pass the safety envelope, may trigger evaluate_run
    (listed by their harness name in evaluation.required_tools) and report a timeout as
    "outcome unknown". A pattern that matches none of the server's tools is an error."""
    safety: dict[str, dict[str, str]] = Field(default_factory=dict)
    """For each physical tool (server name, globs allowed), which argument is what for the
    safety envelope, e.g. ``{move_to: {x: position.x, y: position.y, z: position.z,
    speed: speed}}``; kinds are ``embodiment.types.SAFETY_KINDS``. A physical tool without
    a declaration is blocked by the envelope (it cannot tell what the call would do)."""
    non_physical: list[str] = Field(default_factory=list)
    """Tools of this server that move nothing, for tools that appear after startup (through
    ``tools/list_changed`` or a restart). On a server with `physical` tools, such a tool is
    withheld from the model (with a warning) until it is classified: matched by `physical`
    with a complete `safety` declaration, or matched here. Tools listed at startup are
    classified by `physical` alone."""
    allow: list[str] | None = None
    """Only these tools are offered to the model (all when unset)."""
    deny: list[str] = Field(default_factory=list)
    """Never offered, even when allowed."""
    required: bool = False
    """True: the Harness does not start without this server. False (the default): a server
    that fails to start is reported (``harness check``, a notice to the model, an event) and
    its tools are absent; everything else works."""
    max_restarts: int = Field(2, ge=0)
    """Restarts in a row (without a successful call in between) before the server is
    given up for the session; its tools then return errors."""

    @model_validator(mode="after")
    def _transport_fields(self) -> MCPServerConfig:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs `command`")
        if self.transport == "streamable-http" and not self.url:
            raise ValueError("a streamable-http server needs `url`")
        from embodiment.types import SAFETY_KINDS

        for pattern in self.non_physical:
            if not pattern.strip():
                raise ValueError("non_physical: an empty pattern matches no tool")
            if pattern in self.physical:
                raise ValueError(
                    f"non_physical: {pattern!r} is also listed in `physical`; a tool is one or "
                    "the other"
                )
        for pattern, kinds in self.safety.items():
            unknown = {arg: kind for arg, kind in kinds.items() if kind not in SAFETY_KINDS}
            if unknown:
                raise ValueError(
                    f"safety.{pattern}: unknown safety kind(s) {unknown}; expected one of "
                    f"{', '.join(SAFETY_KINDS)}"
                )
            if not any(fnmatchcase(pattern, physical) for physical in self.physical) and not any(
                fnmatchcase(physical, pattern) for physical in self.physical
            ):
                raise ValueError(
                    f"safety.{pattern}: declared for a tool that is not listed in `physical`"
                )
        return self


class MCPConfig(_Section):
    servers: list[MCPServerConfig] = Field(default_factory=list)
