"""What a physical tool says about its arguments, and whether that is enough to check it.

The envelope can only check what it can name. So a physical call is refused unless every
argument it could carry has a declared kind (``SAFETY_KINDS``; ``free`` for arguments
that cannot move hardware): every property of the tool's input schema, and every key
the call actually sends. A schema that does not list its arguments at the top level
(free-form ``additionalProperties``, a top-level ``$ref``/``anyOf``/...) gets no benefit
of the doubt: without a declaration the tool is blocked, and with one, only declared keys
pass. A tool without arguments must say so (an empty declaration, or the profile's
``safety.no_argument_tools``), so that "declared nothing" is never mistaken for "has
nothing to declare".
"""

from __future__ import annotations

import copy
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, create_model

from embodiment.types import SAFETY_KINDS

__all__ = [
    "UNENUMERABLE_KEYWORDS",
    "declaration_problems",
    "schema_arguments",
    "with_defaults",
]

UNENUMERABLE_KEYWORDS = (
    "$ref",
    "$dynamicRef",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
)
"""Top-level schema keywords that let a call carry arguments the schema does not list."""


def schema_arguments(schema: Mapping[str, Any] | None) -> tuple[list[str], str]:
    """The argument names a tool's input schema lists at its top level, and, when it
    cannot be enumerated that way, why not ("" when it can)."""
    if schema is None:
        return [], ""
    if not isinstance(schema, Mapping):
        return [], "not a JSON object schema"
    for keyword in UNENUMERABLE_KEYWORDS:
        if keyword in schema:
            return _names(schema), f"built from a top-level `{keyword}`"
    extra = schema.get("additionalProperties")
    if extra is not None and extra is not False:
        return _names(schema), "free-form (`additionalProperties` allows any argument)"
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, Mapping):
        return [], "`properties` is not an object"
    return _names(schema), ""


def declaration_problems(
    name: str,
    arguments: Mapping[str, Any],
    kinds: Mapping[str, str] | None,
    schema: Mapping[str, Any] | None,
    *,
    listed_without_arguments: bool = False,
) -> list[str]:
    """Why the call cannot be checked as declared (empty: it can).

    ``kinds`` is None when the tool declares nothing at all; ``{}`` is an explicit
    "no arguments". ``listed_without_arguments`` is the profile listing the tool in
    ``safety.no_argument_tools``.
    """
    names, unenumerable = schema_arguments(schema)
    unknown = [
        f"undeclared_kind: {arg} has unknown safety kind {kind!r}"
        for arg, kind in (kinds or {}).items()
        if kind not in SAFETY_KINDS
    ]
    if unknown:
        return unknown
    if kinds is None:
        if not listed_without_arguments:
            return [_undeclared_tool(name, names, unenumerable)]
        kinds = {}
    problems = []
    carried = list(dict.fromkeys([*names, *arguments]))
    for arg in carried:
        if arg not in kinds:
            problems.append(
                f"undeclared_argument:{arg}: {name} takes {arg!r} but its safety declaration "
                "does not say what it is; declare a kind for it (`free` if it cannot move "
                "hardware)"
            )
    for arg, kind in kinds.items():
        value = arguments.get(arg)
        if kind == "free" and value is not None and not _plain(value):
            problems.append(
                f"invalid_argument:{arg}: a `free` argument must be a plain value (text, a "
                f"finite number, true/false), got {type(value).__name__}"
            )
    return problems


def _undeclared_tool(name: str, names: list[str], unenumerable: str) -> str:
    if unenumerable:
        return (
            f"undeclared_arguments: {name} moves hardware but declares no safety kinds, and "
            f"its input schema is {unenumerable}, so its arguments cannot be enumerated; "
            "declare a kind for every argument it takes"
        )
    if names:
        return (
            f"undeclared_arguments: {name} moves hardware but declares no safety kinds for "
            f"its arguments ({', '.join(names)})"
        )
    return (
        f"undeclared_arguments: {name} moves hardware and declares no safety kinds; a "
        "physical tool without arguments must be declared as such (an empty safety "
        "declaration, or the profile's safety.no_argument_tools)"
    )


def _names(schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties")
    return [str(key) for key in properties] if isinstance(properties, Mapping) else []


def _plain(value: Any) -> bool:
    if isinstance(value, (str, bool)):
        return True
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    return False


def with_defaults(model: type[BaseModel], **defaults: Any) -> type[BaseModel]:
    """``model`` with the named fields' defaults written out in its schema.

    A driver whose argument defaults to ``None`` ("my own choice") tells the envelope
    nothing it can check; written out, the default is the value the envelope checks and
    the driver uses. A ``None`` given here leaves that field as it is.

    The same model and defaults give the same class (kept for the last
    :data:`_KEPT_MODELS` pairs of plain values): a world builds its tools again for every
    harness, and creating the class and its schema costs about a millisecond each time.
    """
    key = _defaults_key(model, defaults)
    if key is not None:
        with _MODELS_LOCK:
            known = _MODELS.get(key)
            if known is not None:
                _MODELS.move_to_end(key)
                return known
    made = _with_defaults(model, defaults)
    if key is not None:
        with _MODELS_LOCK:
            _MODELS[key] = made
            if len(_MODELS) > _KEPT_MODELS:
                _MODELS.popitem(last=False)
    return made


_KEPT_MODELS = 256
_MODELS: OrderedDict[tuple[Any, ...], type[BaseModel]] = OrderedDict()
_MODELS_LOCK = threading.Lock()


def _defaults_key(model: type[BaseModel], defaults: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A key telling apart every call that could make a different class (``-0.0`` from
    ``0.0``, ``1`` from ``True`` and ``1.0``); None when a value is not a plain str,
    bool, int or float (such a call is not kept)."""
    items = []
    for name, value in defaults.items():  # in the call's order, as the fields are
        if type(value) not in (str, bool, int, float, type(None)):
            return None
        items.append((name, type(value).__name__, repr(value)))
    return (model, *items)


def _with_defaults(model: type[BaseModel], defaults: Mapping[str, Any]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, value in defaults.items():
        if value is None:
            continue
        info = copy.copy(model.model_fields[name])
        info.default = value
        fields[name] = (info.annotation, info)
    if not fields:
        return model
    return create_model(model.__name__, __base__=model, __module__=model.__module__, **fields)
