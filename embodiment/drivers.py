"""The explicit registry of drivers by name (``driver: {name: ...}`` in the config).

Entries are factories ``factory(profile=..., **options) -> Driver`` or lazy
``"module:attribute"`` strings, so naming a driver never imports another one's
dependencies (PyBullet is only imported when ``sim.tabletop`` is built, LIBERO and MuJoCo only when
``sim.libero`` is).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from embodiment.profile import EmbodimentProfile
from embodiment.types import Driver

__all__ = ["DRIVERS", "DriverOptionError", "build_driver", "register_driver"]

DriverFactory = Callable[..., Driver]

DRIVERS: dict[str, str | DriverFactory] = {
    "sim.tabletop": "embodiment.sim.tabletop:TabletopSim",
    "sim.libero": "embodiment.sim.libero.driver:LiberoSim",
    "fake": "embodiment.fake:FakeRobot",
}


class DriverOptionError(ValueError):
    """A driver name or option is wrong; ``key`` is the dotted option path."""

    def __init__(self, message: str, *, key: str, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


def register_driver(name: str, factory: str | DriverFactory) -> None:
    """Add a driver: a factory taking ``profile=`` and options, or ``"module:attribute"``."""
    DRIVERS[name] = factory


def build_driver(
    name: str, *, profile: EmbodimentProfile, options: Mapping[str, Any] | None = None
) -> Driver:
    """Construct (not connect) the named driver with its options."""
    entry = DRIVERS.get(name)
    if entry is None:
        raise DriverOptionError(
            f"driver.name: got {name!r}; expected one of {', '.join(sorted(DRIVERS))} "
            "(or register your own with embodiment.drivers.register_driver)",
            key="driver.name",
            value=name,
        )
    if isinstance(entry, str):
        module_name, _, attribute = entry.partition(":")
        factory = getattr(importlib.import_module(module_name), attribute)
    else:
        factory = entry
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
