"""A tool the model may call: its name, description, argument schema, handler and flags.

Arguments are validated (and completed with the schema's defaults) by
:mod:`harness.tools.arguments` before anything sees them; :meth:`Tool.invoke` runs the
handler with exactly those arguments and normalises what it returns.
"""

from __future__ import annotations

import copy
import inspect
import re
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, create_model

from harness.messages import ToolSpec
from harness.tools.arguments import (
    ToolArgumentError,
    checked_model_arguments,
    checked_schema_arguments,
    schema_validator,
)
from harness.tools.context import ToolContext
from harness.tools.results import ToolOutput, to_output

__all__ = ["Tool"]

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


class Tool:
    """A tool the model may call (or, when ``hidden``, that only the harness calls).

    ``setup_timeout_s`` (None unless a subclass sets it) is for tools that must get ready
    before they can send their request (an MCP server probed or restarted first): the
    call's ``timeout_s`` then starts only when the handler calls ``ctx.mark_sent()``, and a
    call still not sent after ``setup_timeout_s`` is reported as not executed.

    Args:
        name: Unique name the model uses.
        description: What the tool does and when to use it, for the model.
        handler: Called with validated keyword arguments (plus ``ctx`` when declared).
        input_model: Pydantic model of the arguments; its JSON Schema is offered.
        parameters: A JSON Schema used as-is when there is no ``input_model`` (MCP).
        physical: Moves hardware: passes the safety envelope, may trigger evaluate_run,
            and is interrupted through the driver on cancellation.
        timeout_s: Seconds before the call is abandoned (default from config).
        hidden: Not offered to the model (e.g. evaluate_run).
        safety: What each argument is for the safety envelope, e.g.
            ``{"x": "position.x", "speed": "speed", "label": "free"}``; interpreted by the
            envelope. A physical tool declares every argument; ``{}`` says it takes none,
            and None (the default) that it declares nothing, which the envelope blocks.
        motion: For physical tools: ``motion(arguments) -> embodiment.types.Motion | None``,
            the path the hardware will take for these arguments (generated tools get the
            driver's ``describe_motion``); the envelope checks every segment of it.
        source: Where the tool came from ("builtin", "mcp:ros", "config", ...).
        optional: The feature this tool belongs to when a task can go without it
            ("sub-agents", "episodes", "archive search"): a window too small for every
            definition leaves such tools out, naming the feature, rather than refuse the
            task (:func:`harness.context.admission.select_tools`). None: always offered.
    """

    def __init__(
        self,
        name: str,
        description: str,
        handler: Callable[..., Any],
        *,
        input_model: type[BaseModel] | None = None,
        parameters: Mapping[str, Any] | None = None,
        physical: bool = False,
        timeout_s: float | None = None,
        hidden: bool = False,
        safety: Mapping[str, str] | None = None,
        motion: Callable[[Mapping[str, Any]], Any] | None = None,
        source: str = "user",
        optional: str | None = None,
    ) -> None:
        if not _NAME_PATTERN.match(name):
            raise ValueError(
                f"tool name {name!r} must be 1-64 characters of letters, digits, _ . -"
            )
        if input_model is None and parameters is None:
            input_model = create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"))
        self.name = name
        self.description = description.strip()
        self.handler = handler
        self.input_model = input_model
        self.parameters: dict[str, Any] = (
            dict(parameters) if parameters is not None else _schema_of(input_model)
        )
        self.physical = physical
        self.timeout_s = timeout_s
        self.hidden = hidden
        self.safety = dict(safety or {})
        # False when the tool declares nothing: ``safety`` is then ``{}`` too, which must
        # not read as "takes no arguments".
        self.safety_declared = safety is not None
        self.motion = motion
        self.source = source
        self.optional = optional
        self.setup_timeout_s: float | None = None
        self._wants_ctx = _accepts_ctx(handler)
        self._validator: jsonschema.protocols.Validator | None = None

    def __repr__(self) -> str:
        flags = " physical" if self.physical else ""
        return f"<Tool {self.name}{flags}>"

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The call's effective arguments: validated (and coerced), with every default the
        schema gives for an argument left out (:mod:`harness.tools.arguments`); or
        :class:`ToolArgumentError`. This is what the envelope checks and what runs."""
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(
                f"arguments must be a JSON object, got {type(arguments).__name__}"
            )
        if self.input_model is not None:
            return checked_model_arguments(self.name, self.input_model, arguments)
        if self._validator is None:
            self._validator = schema_validator(self.parameters)
        return checked_schema_arguments(self.name, self.parameters, self._validator, arguments)

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        """Run the handler with already-validated arguments and normalise its result."""
        kwargs = dict(arguments)
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        return to_output(self.handler(**kwargs))


def _accepts_ctx(handler: Callable[..., Any]) -> bool:
    try:
        return "ctx" in inspect.signature(handler).parameters
    except (TypeError, ValueError):
        return False


_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()
_SCHEMAS_LOCK = threading.Lock()


def _schema_of(model: type[BaseModel] | None) -> dict[str, Any]:
    """The JSON Schema of ``model``'s fields, for the model; each tool gets its own copy.

    Generated once per model class (a class's schema does not change; pydantic keeps no
    copy): every harness builds its built-in tools again from the same classes, and
    generating a schema costs about 20 times what copying it does. Classes built per
    harness (a world's or a ``@tool`` function's) are let go with their tools.
    """
    assert model is not None
    with _SCHEMAS_LOCK:
        known = _SCHEMAS.get(model)
    if known is None:
        known = model.model_json_schema()
        known.pop("title", None)
        known.setdefault("properties", {})
        with _SCHEMAS_LOCK:
            _SCHEMAS[model] = known
    return copy.deepcopy(known)
