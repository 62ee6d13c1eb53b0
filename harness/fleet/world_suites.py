"""Suites a world defines (``harness eval NAME``), and the one way a suite is loaded.

A suite file (YAML, :mod:`harness.fleet.suite`) or the name of a world's suite: the
world registry says which world has the suite (``WORLD:SUITE``, how an eval folder's
manifest records it, or a name a world claims) and the world
returns it as data (:class:`worlds.SuiteSpec`), which becomes a :class:`Suite` here.

Every world suite also has a corrupted twin, ``NAME_corrupt``: the same scenes and
episodes with every instruction garbled by a seeded corruption
(:mod:`harness.fleet.corrupt`), where success is a refusal (``success: refused``) and
none of the world's acting tools may run.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import ConfigError
from harness.fleet.suite import SeedRange, Suite, SuiteTask, load_suite
from worlds.contract import SuiteSpec, World, WorldError
from worlds.registry import suite_world

__all__ = ["CORRUPT_SUFFIX", "load_any_suite", "suite_path", "world_suite"]

CORRUPT_SUFFIX = "_corrupt"


def _world_of(name: str) -> tuple[World, str] | None:
    """(world, its suite name) when ``name`` is a world's suite and not a file."""
    if Path(name).exists():
        return None
    try:
        found = suite_world(name.removesuffix(CORRUPT_SUFFIX))
    except WorldError as exc:
        raise ConfigError(str(exc), key="suite", value=name) from None
    if found is None:
        return None
    world, suite = found
    return world, suite + (CORRUPT_SUFFIX if name.endswith(CORRUPT_SUFFIX) else "")


def load_any_suite(name_or_path: str | Path) -> Suite:
    """A suite file, or a world's suite by name (``SUITE`` or ``WORLD:SUITE``)."""
    found = _world_of(str(name_or_path))
    if found is None:
        return load_suite(name_or_path)
    return world_suite(*found)


def suite_path(name_or_path: str) -> str:
    """How an eval's manifest names a suite: a file's resolved path, ``WORLD:SUITE``."""
    found = _world_of(name_or_path)
    if found is None:
        return str(Path(name_or_path).resolve())
    world, suite = found
    return f"{world.name}:{suite}"


def world_suite(world: World, name: str, *, config: str | Path | None = None) -> Suite:
    """``world``'s suite ``name`` as a fleet suite (see the module docstring)."""
    from harness.fleet.corrupt import corrupt

    assert world.suites is not None
    corrupted = name.endswith(CORRUPT_SUFFIX)
    source = name.removesuffix(CORRUPT_SUFFIX) if corrupted else name
    try:
        spec: SuiteSpec = world.suites.build(source)
    except WorldError as exc:
        raise ConfigError(str(exc), key=exc.key, value=exc.value) from None
    tasks: list[SuiteTask] = []
    for index, task in enumerate(spec.tasks):
        if task.episodes == 0:
            continue  # nothing to run
        instruction = corrupt(task.instruction, seed=index) if corrupted else task.instruction
        tasks.append(
            SuiteTask(
                name=task.name,
                description=task.description,
                instruction=instruction.replace("{", "(").replace("}", ")"),
                seeds=SeedRange(start=0, count=task.episodes),
                success="refused" if corrupted else "achieved",
                forbidden_tools=list(spec.acting_tools) if corrupted else [],
                set=list(task.overrides),
            )
        )
    if not tasks:
        raise ConfigError(f"suite {name!r} of {world.name} has no episodes", key="suite")
    return Suite(
        suite=name.replace(".", "-")[:48],
        description=spec.description
        + (" (instructions corrupted: success is a refusal)" if corrupted else ""),
        config=str(config or spec.config),
        max_turns=spec.max_turns,
        check=spec.check,
        seed_option=spec.seed_option,
        group_by_task=spec.group_by_task,
        tasks=tasks,
        path=f"{world.name}:{name}",
    )
