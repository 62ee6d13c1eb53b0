"""``@tool``: a :class:`~harness.tools.tool.Tool` from a typed function (the schema from
its type hints, the descriptions from its docstring's ``Args:`` section)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from harness.tools.context import ToolContext
from harness.tools.tool import Tool

__all__ = ["tool"]


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
