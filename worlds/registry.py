"""Which worlds and drivers exist: the built-in table, plus what installed packages add.

The one place that names the built-in worlds is :data:`BUILTIN_WORLDS`. Everything else
is found through two entry point groups, the way LeRobot finds ``lerobot_robot_*``
packages:

- ``embodied_harness.worlds``: ``NAME = package.module:WORLD``, a :class:`~worlds.World`
  (or a function returning one);
- ``embodied_harness.drivers``: ``NAME = package.module:factory``, a robot driver
  without a world of its own (a factory ``factory(profile=..., **options)``, a Driver
  class, or a :class:`~worlds.DriverEntry`).

Entry points are listed without importing anything; a world or driver is imported when
it is asked for. One that fails to import, or is not what its group promises, raises
:class:`PluginError` naming the entry point and the distribution it came from (a
broken plugin never disappears silently); ``harness worlds`` lists every one found,
broken ones with their error.

A driver name is looked up in this order: drivers registered in the process
(:func:`embodiment.drivers.register_driver`), the built-in worlds' drivers, the
``embodied_harness.drivers`` entry points, then the drivers of worlds from entry points.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embodiment.drivers import DRIVERS, DriverOptionError, instantiate_driver
from embodiment.errors import ProfileError
from embodiment.profile import EmbodimentProfile, builtin_profiles
from embodiment.profile import load_profile as load_profile_file
from worlds.contract import DriverEntry, World, WorldError

if TYPE_CHECKING:
    from embodiment.types import Driver

__all__ = [
    "BUILTIN_WORLDS",
    "DEFAULT_WORLD",
    "DRIVER_GROUP",
    "WORLD_GROUP",
    "Found",
    "PluginError",
    "build_driver",
    "default_world",
    "driver_entry",
    "driver_names",
    "find_drivers",
    "find_worlds",
    "load_found",
    "load_profile",
    "load_world",
    "profile_source",
    "suite_world",
    "world_names",
    "world_of_driver",
]

BUILTIN_WORLDS: dict[str, str] = {
    "tabletop": "worlds.tabletop.world:WORLD",
    "mobile": "worlds.mobile.world:WORLD",
    "libero": "worlds.libero.world:WORLD",
    "fake": "worlds.fake.world:WORLD",
    "so101": "worlds.so101.world:WORLD",
}
"""The worlds shipped with the harness: name -> ``module:attribute`` of its World."""
DEFAULT_WORLD = "tabletop"
"""The world ``harness demo`` runs and a config without a ``driver`` drives."""
WORLD_GROUP = "embodied_harness.worlds"
DRIVER_GROUP = "embodied_harness.drivers"
_SUITE_PREFIX = re.compile(r"^(?P<world>[a-z][a-z0-9_]*):(?P<suite>.+)$")


class PluginError(WorldError):
    """A world or driver that was found but cannot be used; the message names the entry
    point (or built-in entry) and why."""


@dataclass(frozen=True)
class Found:
    """A world or driver as listed, before it is imported."""

    name: str
    target: str
    """``module:attribute``."""
    origin: str
    """``built in``, or the entry point and its distribution."""
    entry_point: EntryPoint | None = None


# ====================================================================== listing


def _entry_points(group: str) -> list[Found]:
    found = []
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        dist = getattr(point, "dist", None)
        source = f" (from {dist.name} {dist.version})" if dist is not None else ""
        origin = f"entry point {point.name} = {point.value} in group {group}{source}"
        found.append(Found(point.name, point.value, origin, point))
    return found


def find_worlds() -> list[Found]:
    """Every world found: the built-in ones, then those of installed packages (a plugin
    that reuses a built-in name is listed too; asking for that name is then an error)."""
    builtin = [Found(name, target, "built in") for name, target in BUILTIN_WORLDS.items()]
    return builtin + _entry_points(WORLD_GROUP)


def find_drivers() -> list[Found]:
    """The robot drivers installed packages add (``embodied_harness.drivers``)."""
    return _entry_points(DRIVER_GROUP)


def world_names() -> list[str]:
    """The names ``--world`` accepts (nothing is imported)."""
    return list(dict.fromkeys(found.name for found in find_worlds()))


def _one(name: str, candidates: list[Found], what: str, key: str) -> Found:
    matching = [found for found in candidates if found.name == name]
    if not matching:
        listed = "; ".join(f"{f.name} ({f.origin})" for f in candidates) or "none"
        raise WorldError(f"no {what} named {name!r}; found: {listed}", key=key, value=name)
    builtin = [found for found in matching if found.origin == "built in"]
    if builtin:
        return builtin[0]  # a plugin cannot replace a built-in world (harness worlds says so)
    if len(matching) > 1:
        origins = "; ".join(found.origin for found in matching)
        raise PluginError(f"{what} {name!r} is defined more than once: {origins}", key=key)
    return matching[0]


# ====================================================================== worlds


@functools.cache
def _import(target: str, origin: str) -> Any:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        return functools.reduce(getattr, attribute.split("."), module) if attribute else module
    except Exception as exc:
        raise PluginError(
            f"{origin} failed to load: {type(exc).__name__}: {exc}", key="world", value=target
        ) from exc


def load_world(name: str) -> World:
    """The world ``name`` (:class:`WorldError` listing the worlds found when there is no
    such world; :class:`PluginError` naming the entry point when it cannot be loaded).
    A built-in world is found without reading any package's metadata (it wins anyway)."""
    if name in BUILTIN_WORLDS:
        return _as_world(Found(name, BUILTIN_WORLDS[name], "built in"))
    found = _one(name, find_worlds(), "world", "world")
    return load_found(found)


def load_found(found: Found) -> World:
    """The world one listing of :func:`find_worlds` names (:class:`PluginError` when it
    cannot be loaded, or is a plugin using a built-in world's name)."""
    if found.origin != "built in" and found.name in BUILTIN_WORLDS:
        raise PluginError(
            f"{found.origin} is not used: {found.name!r} is a built-in world's name",
            key="world",
            value=found.name,
        )
    return _as_world(found)


def _as_world(found: Found) -> World:
    value = _import(found.target, found.origin)
    if callable(value) and not isinstance(value, World):
        try:
            value = value()
        except Exception as exc:
            raise PluginError(
                f"{found.origin}: calling it failed: {type(exc).__name__}: {exc}", key="world"
            ) from exc
    if not isinstance(value, World):
        raise PluginError(
            f"{found.origin} is a {type(value).__name__}, not a worlds.World", key="world"
        )
    if value.name != found.name:
        raise PluginError(
            f"{found.origin} is the world {value.name!r}, not {found.name!r}", key="world"
        )
    return value


def default_world() -> World:
    return load_world(DEFAULT_WORLD)


def _loaded_worlds(*, plugins: bool) -> list[World]:
    """Every world that loads (built-in ones always; with ``plugins``, those of entry
    points too, skipping any that fail: the caller reports them when nothing matched)."""
    worlds = [_as_world(f) for f in find_worlds() if f.origin == "built in"]
    if plugins:
        for found in _entry_points(WORLD_GROUP):
            try:
                worlds.append(load_found(found))
            except PluginError:
                continue
    return worlds


def _broken_plugins() -> list[str]:
    broken = []
    for found in _entry_points(WORLD_GROUP):
        try:
            load_found(found)
        except PluginError as exc:
            broken.append(str(exc))
    return broken


# ====================================================================== drivers


def _plugin_driver(found: Found) -> DriverEntry:
    value = _import(found.target, found.origin)
    if isinstance(value, DriverEntry):
        if value.name != found.name:
            raise PluginError(
                f"{found.origin} is the driver {value.name!r}, not {found.name!r}", key="driver"
            )
        return value
    if not callable(value):
        raise PluginError(
            f"{found.origin} is a {type(value).__name__}, not a driver factory", key="driver"
        )
    return DriverEntry(found.name, value)


def _lookup(name: str) -> tuple[DriverEntry | None, World | None]:
    """(entry, world it belongs to) for a driver name; (None, None) when nothing has it."""
    if name in DRIVERS:
        return DriverEntry(name, _registered(name)), None
    for world in _loaded_worlds(plugins=False):
        entry = world.driver(name)
        if entry is not None:
            return entry, world
    for found in _entry_points(DRIVER_GROUP):
        if found.name == name:
            return _plugin_driver(found), None
    for world in _loaded_worlds(plugins=True):
        entry = world.driver(name)
        if entry is not None:
            return entry, world
    return None, None


def _registered(name: str) -> Callable[..., Driver]:
    entry = DRIVERS[name]
    if isinstance(entry, str):
        return DriverEntry(name, entry).load()
    return entry


def driver_names() -> list[str]:
    """Every driver name that can be built (registered, built-in, from packages)."""
    names = list(DRIVERS)
    for world in _loaded_worlds(plugins=True):
        names.extend(entry.name for entry in world.drivers)
    names.extend(found.name for found in _entry_points(DRIVER_GROUP))
    return sorted(set(names))


def driver_entry(name: str) -> DriverEntry | None:
    """What the registry knows of driver ``name`` (None when nothing provides it)."""
    return _lookup(name)[0]


def world_of_driver(name: str) -> World | None:
    """The world whose driver ``name`` is (None for a driver without a world)."""
    return _lookup(name)[1]


def build_driver(
    name: str, *, profile: EmbodimentProfile, options: Mapping[str, Any] | None = None
) -> Driver:
    """Construct (not connect) driver ``name`` with its options; an unknown name or a bad
    option is a :class:`~embodiment.drivers.DriverOptionError` naming the key."""
    entry, _ = _lookup(name)
    if entry is None:
        broken = _broken_plugins()
        raise DriverOptionError(
            f"driver.name: got {name!r}; expected one of {', '.join(driver_names())} "
            "(or register your own with embodiment.drivers.register_driver, or install a "
            f"package with an {DRIVER_GROUP} entry point)"
            + ("; plugins that failed to load: " + "; ".join(broken) if broken else ""),
            key="driver.name",
            value=name,
        )
    return instantiate_driver(name, entry.load(), profile=profile, options=options)


# ====================================================================== profiles


def profile_source(source: Any) -> Any:
    """``source`` with a world's profile name replaced by the file it names (anything
    else is returned as it is)."""
    if not isinstance(source, str) or "/" in source or source in builtin_profiles():
        return source
    for plugins in (False, True):
        for world in _loaded_worlds(plugins=plugins):
            if source in world.profiles:
                return world.profiles[source]
    return source


def load_profile(source: Any, *, base_dir: str | Path | None = None) -> EmbodimentProfile:
    """:func:`embodiment.profile.load_profile`, where a name may also be a profile a
    world ships (``panda_libero``)."""
    resolved = profile_source(source)
    try:
        return load_profile_file(resolved, base_dir=base_dir)
    except ProfileError as exc:
        if resolved is source and isinstance(source, str):
            shipped = sorted({n for w in _loaded_worlds(plugins=True) for n in w.profiles})
            if shipped and any("not a built-in profile" in p for p in exc.problems):
                problems = [
                    f"{p} or a world's profile ({', '.join(shipped)})" for p in exc.problems
                ]
                raise ProfileError(exc.source, problems) from None
        raise


# ====================================================================== suites


def suite_world(name: str) -> tuple[World, str] | None:
    """The world whose suite ``name`` is, and the suite's own name: ``WORLD:SUITE`` (how
    an eval folder records it), or a name a world claims. None when no world has it."""
    prefixed = _SUITE_PREFIX.match(name)
    if prefixed and prefixed["world"] in world_names():
        world = load_world(prefixed["world"])
        if world.suites is not None:
            return world, prefixed["suite"]
    for world in _loaded_worlds(plugins=True):
        if world.suites is not None and world.suites.claims(name):
            return world, name
    return None
