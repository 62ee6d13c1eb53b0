"""Tools: declared once, validated before they run, and never able to crash the loop.

A tool is a name, a description, a JSON Schema for its arguments (from a pydantic model,
or passed through unchanged from an MCP server), a handler and a few flags. ``@tool`` builds
one from a typed function: the schema comes from the type hints, the descriptions from the
docstring's ``Args:`` section.

A handler may declare a parameter named ``ctx`` (type :class:`ToolContext`) to learn which
call it serves, report progress, and see cancellation. It returns a string, a JSON-able
value, a pydantic model, or a :class:`ToolOutput` (text, images, structured data, error).

The parts, one concern each:

- :mod:`~harness.tools.tool`: :class:`Tool` itself;
- :mod:`~harness.tools.arguments`: validation, and the schema's defaults filled in, so a
  call's arguments are complete before the envelope checks them and the handler runs;
- :mod:`~harness.tools.context`: :class:`ToolContext`, and how a handler stops early;
- :mod:`~harness.tools.results`: :class:`ToolOutput` and the conversions to it;
- :mod:`~harness.tools.decorator`: ``@tool``;
- :mod:`~harness.tools.registry`: :class:`ToolRegistry`.
"""

from harness.tools.arguments import ToolArgumentError, with_schema_defaults
from harness.tools.context import EndTask, ToolCancelledError, ToolContext
from harness.tools.decorator import tool
from harness.tools.registry import ToolRegistry, close_matches
from harness.tools.results import ErrorKind, ToolOutput, checked_output, to_jsonable, to_output
from harness.tools.tool import Tool

__all__ = [
    "EndTask",
    "ErrorKind",
    "Tool",
    "ToolArgumentError",
    "ToolCancelledError",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "checked_output",
    "close_matches",
    "to_jsonable",
    "to_output",
    "tool",
    "with_schema_defaults",
]
