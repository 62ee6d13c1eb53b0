"""What a tool call produced, in a form the run store and the model can both take.

:class:`ToolOutput` is the one result type (text for the model, structured data, transient
images, what a physical tool actually applied, whether the call was executed at all);
:func:`checked_output` turns whatever a handler returned into one, or into an error result
that says why it cannot be recorded; :func:`to_jsonable` is the one conversion of
arguments and readings to plain JSON values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from harness.messages import ImagePart

__all__ = [
    "ErrorKind",
    "ToolOutput",
    "checked_output",
    "to_jsonable",
    "to_output",
]

ErrorKind = Literal[
    # refused before the tool ran (the admission gates of the execute phase)
    "unknown_tool",
    "invalid_arguments",
    "blocked",
    "refused",
    "not_executed",
    "driver_busy",
    # the call ran, or was running, and did not finish normally
    "cancelled",
    "timeout",
    "outcome_unknown",
    "exception",
    "task_ended",
    "error",
    # reported by built-in and generated tools
    "not_found",
    "out_of_range",
    "unknown_skill",
    "unknown_resource",
    "invalid_resource",
    "admission_refused",
    "unknown_ref",
    "no_image",
    "action_failed",
    "server_unavailable",
    "server_crashed",
    "not_sent",
    "invalid_output",
    "tool_error",
    "invalid_result",
    # a sub-agent's handoff that did not complete (``delegate``)
    "subagent_failed",
    "subagent_interrupted",
    "subagent_provider_error",
    "subagent_budget_exhausted",
]
"""The error kinds the harness itself writes into tool results. A deployment's own tools
may use other strings; the loop treats every kind it does not know as a plain error."""


@dataclass
class ToolOutput:
    """What a tool produced.

    ``text`` is what the model reads; ``data`` is structured content (also shown to the
    model as JSON when ``text`` is empty); ``images`` are shown to the next model call only.
    ``applied`` records what a physical tool actually did (after clamping or partial moves).
    ``executed`` is False when the call never reached whatever runs it (an MCP server that
    is down or was being restarted): the loop records the result as not executed, so
    nobody reads it as an action that happened.
    """

    text: str = ""
    data: Any = None
    images: list[ImagePart] = field(default_factory=list)
    is_error: bool = False
    error_kind: str | None = None
    applied: dict[str, Any] | None = None
    executed: bool = True

    def render(self) -> str:
        if self.text:
            return self.text
        if self.data is not None:
            return json.dumps(self.data, ensure_ascii=False, default=_json_default, indent=None)
        return "ok" if not self.is_error else "error"

    @classmethod
    def error(cls, message: str, kind: ErrorKind | str = "error", **extra: Any) -> ToolOutput:
        return cls(text=message, is_error=True, error_kind=kind, **extra)


def to_output(value: Any) -> ToolOutput:
    """Normalise whatever a handler returned into a :class:`ToolOutput`."""
    if isinstance(value, ToolOutput):
        return value
    if value is None:
        return ToolOutput(text="ok")
    if isinstance(value, str):
        return ToolOutput(text=value)
    if isinstance(value, ImagePart):
        return ToolOutput(
            text=f"image {value.label or ''} {value.width}x{value.height}".strip(), images=[value]
        )
    if isinstance(value, BaseModel):
        return ToolOutput(data=value.model_dump(mode="json"))
    return ToolOutput(data=value)


def checked_output(tool_name: str, value: Any) -> ToolOutput:
    """A handler's return value as a :class:`ToolOutput` the harness can record, or an
    error result (``invalid_result``) the model reads, saying why it cannot be recorded.

    Recordable means: ``text`` a string, ``data`` JSON after the usual conversions
    (:func:`to_jsonable`'s: numpy arrays, pydantic models, sets and tuples; other objects by
    their ``str``), so no non-string keys, no cycles, no object whose conversion fails;
    ``applied`` a mapping of the same; ``images`` :class:`ImagePart` objects.
    """
    try:
        output = to_output(value)
        problem = _unrecordable(output)
    except Exception as exc:  # a model_dump() or a property that raises
        problem = f"converting it raised {type(exc).__name__}: {exc}"
    if not problem:
        return output
    return ToolOutput.error(
        f"{tool_name} returned a result the harness cannot record ({problem}); a tool must "
        "return text, or JSON data: objects with string keys, lists, numbers, strings",
        "invalid_result",
    )


def _unrecordable(output: ToolOutput) -> str:
    """What is wrong with ``output`` for the run store and the model, or ""."""
    if not isinstance(output.text, str):
        return f"text is a {type(output.text).__name__}, not a string"
    if not isinstance(output.is_error, bool):
        return f"is_error is a {type(output.is_error).__name__}, not a bool"
    if output.error_kind is not None and not isinstance(output.error_kind, str):
        return f"error_kind is a {type(output.error_kind).__name__}, not a string"
    if not isinstance(output.images, list) or not all(
        isinstance(image, ImagePart) for image in output.images
    ):
        return "images must be a list of ImagePart"
    if output.applied is not None and not isinstance(output.applied, Mapping):
        return f"applied is a {type(output.applied).__name__}, not a mapping"
    for name, part in (("data", output.data), ("applied", output.applied)):
        if part is None:
            continue
        try:
            json.dumps(part, ensure_ascii=False, default=_json_default)
        except (TypeError, ValueError, RecursionError) as exc:
            return f"its {name} has no JSON form: {exc}"
    return ""


def to_jsonable(value: Any) -> Any:
    """Plain JSON values from tool arguments or robot state (numpy arrays, pydantic models,
    sets and tuples become lists and dicts; anything else its ``str``)."""
    try:
        return json.loads(json.dumps(value, default=_json_default))
    except (TypeError, ValueError):
        return str(value)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
