"""Validation errors worded for people: one line per problem, the likely typo first.

:func:`format_validation_error` turns a pydantic ``ValidationError`` into the lines a
:class:`~harness.errors.ConfigError` carries: the dotted key, the bad value (redacted
before it is cut to length: a cut must not keep half a secret) and what was expected. A
misspelled key shows up as an unknown key and, when it was required, a missing one; the
unknown key leads, with the missing name it most looks like, and the missing line it
explains is dropped. :func:`runtime_env_secret` is the rule ``fleet.runtime_env`` is held
to (Ray writes it to its logs in plain text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.redact import SECRET_KEY_PATTERN, Redactor, secret_values

__all__ = ["format_validation_error", "runtime_env_secret"]


def runtime_env_secret(runtime_env: Mapping[str, Any] | None) -> str | None:
    """Where a Ray ``runtime_env`` holds a secret (an ``env_vars`` entry with a
    secret-looking name, or any value of a known secret shape), or None."""
    if not runtime_env:
        return None
    env_vars = runtime_env.get("env_vars")
    if isinstance(env_vars, Mapping):
        for name, value in env_vars.items():
            if value and isinstance(name, str) and SECRET_KEY_PATTERN.search(name):
                return f"env_vars.{name} holds a secret (by its name)"
    shaped = Redactor()
    for where, value in _strings(runtime_env, ""):
        if shaped.text(value) != value:
            return f"{where.lstrip('.')} holds a secret-shaped value"
    return None


def _strings(value: Any, where: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}.{index}")


def format_validation_error(
    error: ValidationError, *, source: str = "config", schema: type[BaseModel] | None = None
) -> str:
    """One line per problem (a single problem on the line that names the source): dotted
    key, bad value, what was expected."""
    lines = [f"invalid {source}:"]
    problems = error.errors()
    missing = [p for p in problems if p["type"] == "missing"]
    # A typo'd key shows up as an unknown key and (if it was required) a missing one: the
    # unknown key is the cause, so it leads, with the missing name it most looks like, and
    # the missing line it explains is not repeated.
    explained = {
        (*p["loc"][:-1], hint)
        for p in problems
        if p["type"] == "extra_forbidden"
        for hint in [_closest(p["loc"], missing)]
        if hint
    }
    problems = [p for p in problems if not (p["type"] == "missing" and p["loc"] in explained)]
    for problem in sorted(problems, key=lambda p: p["type"] != "extra_forbidden"):
        key = ".".join(str(part) for part in problem["loc"]) or "(top level)"
        value = problem.get("input")
        # Redacted before it is cut to length: a cut must not keep half a secret.
        shown = repr(Redactor(literals=secret_values(value)).config(value))
        if len(shown) > 80:
            shown = shown[:77] + "..."
        message = problem["msg"]
        if problem["type"] == "value_error":  # our own validators: their words, no prefix
            message = str(problem.get("ctx", {}).get("error", message))
        if problem["type"] == "extra_forbidden":
            hint = _likely_meant(problem["loc"], missing) or _known_key_like(problem["loc"], schema)
            lines.append(f"  {key}: unknown key (value {shown}); check the spelling{hint}")
        elif problem["type"] == "missing":
            lines.append(f"  {key}: required key is missing")
        else:
            lines.append(f"  {key}: got {shown}; expected {message[0].lower()}{message[1:]}")
    if len(lines) == 2:  # one problem: one line (what a terminal user reads at a glance)
        return f"{lines[0]} {lines[1].strip()}"
    return "\n".join(lines)


def _likely_meant(loc: tuple[Any, ...], missing: list[Any]) -> str:
    """``(did you mean 'instruction'?)`` when a required key missing beside an unknown one
    is spelled like it."""
    close = _closest(loc, missing)
    return f" (did you mean {close!r}?)" if close else ""


def _closest(loc: tuple[Any, ...], missing: list[Any]) -> str | None:
    """The missing sibling key spelled most like the unknown key at ``loc``, if any."""
    import difflib

    siblings = [str(p["loc"][-1]) for p in missing if tuple(p["loc"][:-1]) == tuple(loc[:-1])]
    close = difflib.get_close_matches(str(loc[-1]), siblings, n=1, cutoff=0.7)
    return close[0] if close else None


def _known_key_like(loc: tuple[Any, ...], schema: type[BaseModel] | None) -> str:
    """`` (did you mean 'run.max_turns'?)`` when ``schema`` has a key at the unknown key's
    level spelled like it (a typo of an optional key, which nothing reports missing)."""
    import difflib

    model = schema
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if model is not None else None
        model = _model_in(field.annotation) if field is not None else None
    if model is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.7)
    if not close:
        return ""
    return f" (did you mean {'.'.join([*map(str, loc[:-1]), close[0]])!r}?)"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (``Section | None`` -> ``Section``), if one."""
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
