"""Tools: declared once, validated before they run, and never able to crash the loop.

A tool is a name, a description, a JSON Schema for its arguments (from a pydantic model,
or passed through unchanged from an MCP server), a handler and a few flags. ``@tool`` builds
one from a typed function: the schema comes from the type hints, the descriptions from the
docstring's ``Args:`` section.

A handler may declare a parameter named ``ctx`` (type :class:`ToolContext`) to learn which
call it serves, report progress, and see cancellation. It returns a string, a JSON-able
value, a pydantic model, or a :class:`ToolOutput` (text, images, structured data, error).
"""

from __future__ import annotations

import difflib
import inspect
import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_type_hints

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from harness.events import DoneEvent, Event, EventBase
from harness.messages import ImagePart, ToolSpec

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
    "tool",
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

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_EVENT_TYPES: tuple[type[EventBase], ...] = get_args(get_args(Event)[0])
"""Every event class a stream may carry (the members of :data:`harness.events.Event`)."""


class ToolArgumentError(ValueError):
    """Arguments did not match the tool's schema; the message is written for the model."""


class ToolCancelledError(Exception):
    """Raised inside a tool (by ``ctx.raise_if_cancelled()``) when the task is cancelled."""


class EndTask(Exception):
    """Raised by a handler to end the task after its result is recorded.

    ``query_user`` uses it when the person does not answer in time: the task cannot go on
    without the answer, and the reason must be clear in the ``done`` event.
    """

    def __init__(self, status: str, reason: str, *, result: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.result = result or reason


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


class ToolContext:
    """Per-call services for a running handler.

    ``cancelled`` turns true when the operator cancels the task or the call times out; a
    long-running handler should poll it (or call ``raise_if_cancelled``) and stop. Physical
    tools are additionally interrupted through the driver's own ``stop()``.
    """

    def __init__(
        self,
        *,
        call_id: str = "",
        task_id: str = "",
        turn: int = 0,
        cancel_event: threading.Event | None = None,
        on_progress: Callable[[str], None] | None = None,
        on_event: Callable[[Any], None] | None = None,
        send_gate: Callable[[], bool] | None = None,
    ) -> None:
        self.call_id = call_id
        self.task_id = task_id
        self.turn = turn
        self._cancel = cancel_event or threading.Event()
        self._on_progress = on_progress
        self._on_event = on_event
        self._send_gate = send_gate

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def raise_if_cancelled(self) -> None:
        if self._cancel.is_set():
            raise ToolCancelledError("cancelled")

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True early if the call was cancelled."""
        return self._cancel.wait(seconds)

    def report_progress(self, text: str) -> None:
        """Surface progress text to the operator (a ``progress`` event) without a turn."""
        if self._on_progress is not None and text:
            self._on_progress(text)

    def emit(self, event: Any) -> None:
        """Emit a harness event from inside a tool (it reaches the stream promptly).

        Raises TypeError (in the handler, which then reports it like any exception) for
        anything that is not one of the harness's events, for a ``done`` event (a task has
        exactly one, and a tool ends its task by raising :class:`EndTask`), and for an
        event that cannot be serialised.
        """
        if not isinstance(event, _EVENT_TYPES) or isinstance(event, DoneEvent):
            what = type(event).__name__
            raise TypeError(
                f"ctx.emit() takes a harness event (harness.events), not {what}"
                + (
                    "; a tool ends its task by raising EndTask"
                    if isinstance(event, DoneEvent)
                    else ""
                )
            )
        try:
            event.model_dump_json()
        except Exception as exc:
            raise TypeError(
                f"ctx.emit(): the {type(event).__name__} cannot be serialised: {exc}"
            ) from None
        if self._on_event is not None:
            self._on_event(event)

    def mark_sent(self) -> bool:
        """Say that the request is about to leave (for a tool with ``setup_timeout_s``).

        The call's own ``timeout_s`` starts now. False means the time allowed for getting
        ready has already run out: the request must not be sent (it is reported as not
        executed).
        """
        return self._send_gate() if self._send_gate is not None else not self.cancelled


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
        self.setup_timeout_s: float | None = None
        self._wants_ctx = _accepts_ctx(handler)
        self._validator: jsonschema.protocols.Validator | None = None

    def __repr__(self) -> str:
        flags = " physical" if self.physical else ""
        return f"<Tool {self.name}{flags}>"

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Return validated (and coerced) arguments, or raise :class:`ToolArgumentError`."""
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(
                f"arguments must be a JSON object, got {type(arguments).__name__}"
            )
        if self.input_model is not None:
            try:
                model = self.input_model.model_validate(dict(arguments))
            except ValidationError as exc:
                raise ToolArgumentError(_describe_validation(self.name, exc)) from None
            return {name: getattr(model, name) for name in self.input_model.model_fields}
        if self._validator is None:
            cls = jsonschema.validators.validator_for(self.parameters)
            self._validator = cls(self.parameters, format_checker=cls.FORMAT_CHECKER)
        errors = sorted(self._validator.iter_errors(dict(arguments)), key=lambda e: e.path)
        if errors:
            lines = [f"invalid arguments for {self.name}:"]
            for error in errors[:8]:
                where = "/".join(str(p) for p in error.absolute_path) or "(arguments)"
                lines.append(f"  {where}: {error.message}")
            raise ToolArgumentError("\n".join(lines))
        return dict(arguments)

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        """Run the handler with already-validated arguments and normalise its result."""
        kwargs = dict(arguments)
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        return to_output(self.handler(**kwargs))


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


def _accepts_ctx(handler: Callable[..., Any]) -> bool:
    try:
        return "ctx" in inspect.signature(handler).parameters
    except (TypeError, ValueError):
        return False


def _schema_of(model: type[BaseModel] | None) -> dict[str, Any]:
    assert model is not None
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def _describe_validation(name: str, error: ValidationError) -> str:
    lines = [f"invalid arguments for {name}:"]
    for problem in error.errors():
        where = ".".join(str(p) for p in problem["loc"]) or "(arguments)"
        if problem["type"] == "extra_forbidden":
            lines.append(f"  {where}: unknown argument")
        elif problem["type"] == "missing":
            lines.append(f"  {where}: required argument is missing")
        else:
            got = repr(problem.get("input"))
            if len(got) > 60:
                got = got[:57] + "..."
            lines.append(f"  {where}: {problem['msg']} (got {got})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- @tool


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {arg: description})."""
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    lines = text.splitlines()
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = stripped.rstrip(":").lower()
        if stripped.endswith(":") and header in {"args", "arguments", "parameters"}:
            section, current = "args", None
            continue
        if stripped.endswith(":") and header in {
            "returns",
            "raises",
            "yields",
            "example",
            "examples",
            "note",
            "notes",
        }:
            section, current = "other", None
            continue
        if section == "args":
            match = re.match(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", stripped)
            if match and not line.startswith(" " * 8):
                current = match.group(1).lstrip("*")
                args[current] = match.group(3).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
        elif section is None:
            description.append(line)
    return "\n".join(description).strip(), args


def _type_hints(func: Callable[..., Any], name: str) -> dict[str, Any]:
    """Resolve annotations; ``ctx`` needs no resolution, others must resolve."""
    try:
        return get_type_hints(func, localns={"ToolContext": ToolContext}, include_extras=True)
    except NameError:
        pass
    hints: dict[str, Any] = {}
    raw = getattr(func, "__annotations__", {})
    closure_vars = inspect.getclosurevars(func)
    namespace = {**func.__globals__, **closure_vars.nonlocals, "ToolContext": ToolContext}
    for param, annotation in raw.items():
        if param in {"ctx", "return"}:
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)
            except Exception as exc:
                raise TypeError(
                    f"@tool {name}: cannot resolve the type of {param!r} ({annotation}): {exc}"
                ) from None
        hints[param] = annotation
    return hints


def _model_from_signature(func: Callable[..., Any], name: str) -> type[BaseModel]:
    signature = inspect.signature(func)
    hints = _type_hints(func, name)
    _, arg_docs = _parse_docstring(func.__doc__)
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.name in {"ctx", "self", "cls"}:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"@tool {name}: *args/**kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            annotation,
            Field(default, description=arg_docs.get(param.name) or None),
        )
    model_name = "".join(part.title() for part in re.split(r"[_.\-]", name)) + "Args"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    physical: bool = False,
    timeout_s: float | None = None,
    hidden: bool = False,
    safety: Mapping[str, str] | None = None,
    motion: Callable[[Mapping[str, Any]], Any] | None = None,
) -> Any:
    """Build a :class:`Tool` from a typed function (usable bare or with options).

    >>> @tool
    ... def wave(times: int = 1) -> str:
    ...     '''Wave the arm.
    ...
    ...     Args:
    ...         times: How many waves.
    ...     '''
    ...     return f"waved {times} times"
    """

    def build(fn: Callable[..., Any]) -> Tool:
        tool_name = name or fn.__name__
        doc_description, _ = _parse_docstring(fn.__doc__)
        return Tool(
            tool_name,
            description or doc_description or tool_name.replace("_", " "),
            fn,
            input_model=_model_from_signature(fn, tool_name),
            physical=physical,
            timeout_s=timeout_s,
            hidden=hidden,
            safety=safety,
            motion=motion,
            source="user",
        )

    if func is not None:
        return build(func)
    return build


# --------------------------------------------------------------------------- registry


def close_matches(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Names similar to ``name`` (for "did you mean" in error results)."""
    return difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)


class ToolRegistry:
    """An ordered set of tools by name. Order is stable so tool definitions stay
    byte-identical from turn to turn (provider prompt caches depend on it)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.add(item)

    def add(self, item: Tool, *, replace: bool = False) -> None:
        if not isinstance(item, Tool):
            raise TypeError(f"expected a Tool (use @tool on functions), got {item!r}")
        if item.name in self._tools and not replace:
            existing = self._tools[item.name]
            raise ValueError(
                f"tool name {item.name!r} is already registered (from {existing.source})"
            )
        self._tools[item.name] = item

    def remove(self, name: str) -> Tool | None:
        return self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def names(self, *, visible_only: bool = False) -> list[str]:
        return [t.name for t in self._tools.values() if not (visible_only and t.hidden)]

    def visible(self) -> list[Tool]:
        return [t for t in self._tools.values() if not t.hidden]

    def specs(self) -> list[ToolSpec]:
        return [t.spec() for t in self.visible()]
