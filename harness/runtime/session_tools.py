"""The session's tools from outside the process: tool sources (MCP servers) registered,
re-registered when they change, what they withhold or failed to start, and the visible
definitions offered to a lane's context.

:class:`~harness.runtime.session.Session` inherits :class:`SessionTools`; it lives apart so
the session module reads as the task slot and the bookkeeping. The attributes declared
on the class are set by ``Session.__init__``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from harness.context.admission import ToolOffer, select_tools

if TYPE_CHECKING:
    from harness.context import Context
    from harness.protocols import ToolSource
    from harness.tools import ToolRegistry

__all__ = ["SessionTools"]


class SessionTools:
    """The tool registry's sources, and the tools offered to the model (see the module
    docstring)."""

    def __init__(self, tools: ToolRegistry, context: Context) -> None:
        self.tools = tools
        """The session's registry, which the sources' tools join."""
        self.context = context
        """The main lane's context: where :meth:`offer_tools` puts definitions by default."""
        self.tool_sources: list[ToolSource] = []
        self._source_tools: list[str] = []
        self._announced_withheld: set[tuple[str, str]] = set()

    def attach_tool_sources(self, sources: Iterable[ToolSource]) -> None:
        """Tools that live outside the process (MCP servers), registered after the rest."""
        self.tool_sources = list(sources)
        self.sync_tool_sources(force=True)

    def sync_tool_sources(self, *, force: bool = False) -> bool:
        """Re-register the tools of the tool sources if one of them changed.

        Called between turns only (and once at construction), never while a tool call
        runs. Returns True if the registry changed.
        """
        if not self.tool_sources or not (
            force or any(source.tools_changed() for source in self.tool_sources)
        ):
            return False
        for name in self._source_tools:
            self.tools.remove(name)
        self._source_tools = []
        for source in self.tool_sources:
            for item in source.tools(reserved=self.tools.names()):
                self.tools.add(item)
                self._source_tools.append(item.name)
        return True

    def withheld_tool_notices(self) -> list[str]:
        """Warnings, once per tool, for tools a source withholds until the config
        classifies them (an MCP tool that appeared later on a server with physical tools:
        ``withheld_tools() -> {name: why}``, optional on a source)."""
        notices = []
        for source in self.tool_sources:
            withheld = getattr(source, "withheld_tools", None)
            for name, why in (withheld() if callable(withheld) else {}).items():
                if (name, why) not in self._announced_withheld:
                    self._announced_withheld.add((name, why))
                    notices.append(f"MCP tool {name} is not offered to the model: it {why}")
        return notices

    def offer_tools(
        self,
        tools: ToolRegistry,
        *,
        context: Context | None = None,
        model: Any = None,
        exclude: frozenset[str] = frozenset(),
    ) -> ToolOffer:
        """Put the visible definitions of ``tools`` that fit into a lane's context (the
        main lane's by default): all of them, or without the optional features a small
        window cannot hold (:func:`~harness.context.admission.select_tools`), counted by
        ``model``'s server where it can count (the caller passes the lane's model)."""
        context = context or self.context
        count = getattr(model, "count_prompt_tokens", None)
        visible = [tool for tool in tools.visible() if tool.name not in exclude]
        return select_tools(context, visible, count=count if callable(count) else None)

    def resident_text(self) -> str:
        """What tool sources ask to have in Resident: each source's optional
        ``resident_text()`` (an MCP manager's server instructions), joined."""
        texts = []
        for source in self.tool_sources:
            produce = getattr(source, "resident_text", None)
            text = produce() if callable(produce) else ""
            if text:
                texts.append(text)
        return "\n\n".join(texts)

    def unavailable_sources(self) -> list[str]:
        """One line per part of a tool source that failed to start (an optional MCP server
        that did not come up: each source's optional ``unavailable()``), for the operator."""
        lines = []
        for source in self.tool_sources:
            produce = getattr(source, "unavailable", None)
            failed = produce() if callable(produce) else {}
            for name, reason in failed.items():
                lines.append(
                    f"mcp server '{name}' failed to start; its tools are not offered: {reason}"
                )
        return lines
