"""Tool arguments: validated against the tool's schema and completed with its defaults.

What a call's arguments are, once validated, is the *effective* set: every argument the
model gave, plus every argument it left out that the schema gives a default for. That set
is what the safety envelope checks and exactly what the handler (or the MCP server)
receives, so what runs never depends on a default of the server's own that nobody checked:

- a Python tool (``@tool``, a driver's action) validates through its pydantic model, which
  fills the model's defaults;
- a JSON Schema tool (an MCP server's) validates with ``jsonschema`` and then has the
  schema's ``default`` values filled in by :func:`with_schema_defaults`: top-level
  properties, and properties of nested objects the call carries (or that a default
  brings), through local ``$ref``, ``allOf``, array ``items`` and an unambiguous
  ``anyOf``/``oneOf``.

A default is filled in as the schema gives it, even one that breaks the schema's own
rules: it is what the server would run with, so it is what the envelope must check.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

__all__ = [
    "ToolArgumentError",
    "checked_model_arguments",
    "checked_schema_arguments",
    "schema_validator",
    "with_schema_defaults",
]

MAX_DEPTH = 32
"""How deep defaults are filled (a recursive ``$ref`` must not loop forever)."""
MAX_ERRORS = 8
"""Problems listed per invalid call (the rest are left out of the message)."""


class ToolArgumentError(ValueError):
    """Arguments did not match the tool's schema; the message is written for the model."""


def checked_model_arguments(
    name: str, model: type[BaseModel], arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Every field of ``model`` (the given values, coerced, and the defaults of the
    others), or :class:`ToolArgumentError`."""
    try:
        validated = model.model_validate(dict(arguments))
    except ValidationError as exc:
        raise ToolArgumentError(_describe_validation(name, exc)) from None
    return {field: getattr(validated, field) for field in model.model_fields}


def schema_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for a tool's JSON Schema (formats checked)."""
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def checked_schema_arguments(
    name: str,
    schema: Mapping[str, Any],
    validator: jsonschema.protocols.Validator,
    arguments: Mapping[str, Any],
) -> dict[str, Any]:
    """The call's arguments, validated, with the schema's defaults filled in; or
    :class:`ToolArgumentError`.

    A default is filled in as the schema gives it, even one its own schema refuses
    (``maximum: 1, default: 5``): that value is what the server would run with when the
    argument is left out, so it is what the envelope must see (and clamp, or block)."""
    given = copy.deepcopy(dict(arguments))
    problems = _problems(validator, given)
    if problems:
        raise ToolArgumentError("\n".join([f"invalid arguments for {name}:", *problems]))
    return with_schema_defaults(schema, given)


def with_schema_defaults(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``arguments`` with every ``default`` the schema gives for a property the
    call left out (recursively into the objects it carries). ``arguments`` is not changed."""
    filled = _fill(schema, copy.deepcopy(dict(arguments)), schema, 0)
    return filled if isinstance(filled, dict) else dict(arguments)


def _fill(schema: Any, value: Any, root: Mapping[str, Any], depth: int) -> Any:
    if depth > MAX_DEPTH or not isinstance(schema, Mapping):
        return value
    schema = _resolved(schema, root)
    for part in schema.get("allOf") or ():
        value = _fill(part, value, root, depth + 1)
    branch = _only_object_branch(schema, root) if isinstance(value, dict) else None
    if branch is not None:
        value = _fill(branch, value, root, depth + 1)
    if isinstance(value, dict):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, sub in properties.items():
                if key not in value:
                    found, default = _default_of(sub, root)
                    if not found:
                        continue
                    value[key] = copy.deepcopy(default)
                value[key] = _fill(sub, value[key], root, depth + 1)
    elif isinstance(value, list):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        for index, element in enumerate(value):
            if isinstance(prefix, list) and index < len(prefix):
                value[index] = _fill(prefix[index], element, root, depth + 1)
            elif isinstance(items, Mapping):
                value[index] = _fill(items, element, root, depth + 1)
    return value


def _default_of(schema: Any, root: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether the property's schema gives a default, and which (its own ``default``
    before that of the schema it refers to)."""
    if not isinstance(schema, Mapping):
        return False, None
    if "default" in schema:
        return True, schema["default"]
    resolved = _resolved(schema, root)
    if resolved is not schema and "default" in resolved:
        return True, resolved["default"]
    return False, None


def _resolved(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema a local ``$ref`` (``#/$defs/Pose``) points to, merged under the
    referring schema's own keywords; other schemas as they are."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < MAX_DEPTH:
        target = _pointer(root, schema["$ref"])
        if target is None:
            return schema
        own = {key: value for key, value in schema.items() if key != "$ref"}
        schema = {**target, **own}
        seen += 1
    return schema


def _pointer(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    if not ref.startswith("#"):
        return None  # a remote reference is never fetched
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, Mapping) else None


def _only_object_branch(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """The one ``anyOf``/``oneOf`` branch that describes an object with properties (an
    optional model: ``anyOf: [{$ref: Pose}, {type: null}]``); None when there are several
    (which one applies is the server's to decide, not guessed here)."""
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if not isinstance(branches, list):
            continue
        objects = [
            branch
            for branch in branches
            if isinstance(branch, Mapping)
            and isinstance(_resolved(branch, root).get("properties"), Mapping)
        ]
        if len(objects) == 1:
            return objects[0]
    return None


def _problems(validator: jsonschema.protocols.Validator, arguments: dict[str, Any]) -> list[str]:
    errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    return [
        f"  {'/'.join(str(p) for p in error.absolute_path) or '(arguments)'}: {error.message}"
        for error in errors[:MAX_ERRORS]
    ]


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
