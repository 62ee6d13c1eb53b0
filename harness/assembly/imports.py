"""``package.module:attribute`` references in config, resolved with errors naming the key."""

from __future__ import annotations

import importlib
import inspect
import sys
import sysconfig
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.tools import Tool, tool

__all__ = ["import_object", "import_tool"]


def import_object(path: str, *, key: str) -> Any:
    """``package.module:attribute`` -> the attribute; errors name the config ``key``."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"{key}: got {path!r}; expected 'package.module:function'", key=key, value=path
        )
    if not all(part.isidentifier() for part in module_name.split(".")):
        # importlib raises TypeError for a relative name ("..pkg") and ValueError for
        # others: a config names an absolute module, dotted identifiers only.
        raise ConfigError(
            f"{key}: got {path!r}; {module_name!r} is not an absolute module name "
            "(dotted Python identifiers, no leading dots or spaces)",
            key=key,
            value=path,
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{key}: cannot import {module_name!r} for {path!r}: {exc}", key=key, value=path
        ) from exc
    except Exception as exc:  # the module itself failed (a SyntaxError, a raise at import)
        raise ConfigError(
            f"{key}: importing {module_name!r} for {path!r} failed: {type(exc).__name__}: {exc}",
            key=key,
            value=path,
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(
            f"{key}: {module_name!r} has no attribute {attr!r}", key=key, value=path
        ) from None


def import_tool(path: str) -> Tool:
    """``package.module:attribute`` -> a Tool the model may call.

    A config tool is given to a model, so it must be something built to be one: a
    :class:`Tool`, or a function of the deployment (not of the standard library or the
    builtins) with type hints and a docstring, which is wrapped with ``@tool``. Anything
    else (``os:system``, ``subprocess:Popen``, ``builtins:eval``, ``os.path:join``) is a
    :class:`ConfigError` naming the entry and why.
    """
    target = import_object(path, key="tools")
    if isinstance(target, Tool):
        return target
    problem = _not_a_tool_function(target)
    if problem is None:
        try:
            return tool(target)
        except (TypeError, ValueError, NameError) as exc:
            problem = f"cannot be described to a model ({exc})"
    raise ConfigError(
        f"tools: {path!r} {problem}; a config tool must be a Tool, or a function of your "
        "own with type hints and a docstring",
        key="tools",
        value=path,
    )


def _not_a_tool_function(target: Any) -> str | None:
    """Why ``target`` is not a function a model may be given, or None."""
    if isinstance(target, type):
        return f"is a class ({target.__module__}.{target.__qualname__})"
    if inspect.isbuiltin(target) or not callable(target):
        kind = "a built-in function" if inspect.isbuiltin(target) else type(target).__name__
        return f"is not a Python function (it is {kind})"
    if not inspect.isfunction(target):
        return f"is not a plain function (it is a {type(target).__name__})"
    if _in_standard_library(target):
        return f"is defined in the standard library ({target.__module__})"
    if not (inspect.getdoc(target) or "").strip():
        return "has no docstring (the model is shown it as the tool's description)"
    parameters = [
        param
        for param in inspect.signature(target).parameters.values()
        if param.name not in {"ctx", "self", "cls"}
    ]
    untyped = [param.name for param in parameters if param.annotation is inspect.Parameter.empty]
    if untyped:
        return f"has parameters without type hints ({', '.join(untyped)})"
    if not parameters and not target.__annotations__:
        return "has no type hints"
    return None


def _in_standard_library(target: Any) -> bool:
    top = str(getattr(target, "__module__", "") or "").partition(".")[0]
    if top in sys.stdlib_module_names or top == "builtins":
        return True
    try:
        source = Path(inspect.getfile(target)).resolve()
    except (TypeError, OSError):
        return True  # no source file: built into the interpreter
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    return source.is_relative_to(stdlib) and "site-packages" not in source.parts
