"""Drivers registered in this process, and building one from its factory with named errors.

Which drivers exist is the world registry's business (:mod:`worlds.registry`: the
built-in worlds, installed packages' entry points, and what :func:`register_driver`
added here). This module holds only what needs no world: the table of drivers a control
script registers by hand, and :func:`instantiate_driver`, which turns a factory's
validation errors into :class:`DriverOptionError` lines naming ``driver.<option>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the world registry lists drivers without numpy
    from embodiment.profile import EmbodimentProfile
    from embodiment.types import Driver

__all__ = ["DRIVERS", "DriverFactory", "DriverOptionError", "instantiate_driver", "register_driver"]

DriverFactory = Callable[..., "Driver"]

DRIVERS: dict[str, str | DriverFactory] = {}
"""Drivers registered in this process by name: a factory ``factory(profile=...,
**options)`` or a lazy ``"module:attribute"``. They come before every world's drivers."""


class DriverOptionError(ValueError):
    """A driver name or option is wrong; ``key`` is the dotted option path."""

    def __init__(self, message: str, *, key: str, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


def register_driver(name: str, factory: str | DriverFactory) -> None:
    """Add a driver: a factory taking ``profile=`` and options, or ``"module:attribute"``."""
    DRIVERS[name] = factory


def instantiate_driver(
    name: str,
    factory: DriverFactory,
    *,
    profile: EmbodimentProfile,
    options: Mapping[str, Any] | None = None,
) -> Driver:
    """``factory(profile=profile, **options)``; a pydantic validation error of the options
    becomes a :class:`DriverOptionError` with one line per bad option."""
    from pydantic import ValidationError

    try:
        return factory(profile=profile, **dict(options or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        lines = []
        for problem in exc.errors():
            loc = ".".join(str(part) for part in problem["loc"])
            if problem["type"] == "extra_forbidden":
                lines.append(f"driver.{loc}: unknown option for {name}")
            else:
                lines.append(f"driver.{loc}: {problem['msg']} (got {problem.get('input')!r})")
        raise DriverOptionError(
            "\n".join(lines), key=f"driver.{where}", value=first.get("input")
        ) from None
