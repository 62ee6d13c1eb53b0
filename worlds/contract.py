"""The world contract: everything the harness needs to know about a world, in one object.

A world is a simulator, a benchmark or a robot: a driver (and whether a worker may keep
it across episodes), the embodiment profile its robot has, where its scene comes from,
who judges a task, its suites of episodes and the task ``harness demo`` runs. A world
folder exports one :class:`World`; the registry (:mod:`worlds.registry`) finds it, by
its built-in table or by the ``embodied_harness.worlds`` entry point of a separately
installed package. The CLI, the fleet, the driver pool and the assembly read only this
object, so none of them names a world.

Everything here is data or a small callable returning data (config overrides, suite
specs): a world never imports the harness, and the harness turns that data into its
own config and suites.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # annotations only: listing worlds loads neither numpy nor pydantic
    from embodiment.types import Driver


__all__ = [
    "DEMO_FLAGS",
    "DemoPlan",
    "DemoRequest",
    "DriverEntry",
    "SceneSource",
    "SuiteSpec",
    "SuiteTaskSpec",
    "TaskJudge",
    "World",
    "WorldDemo",
    "WorldError",
    "WorldSuites",
]


class WorldError(ValueError):
    """A choice the world cannot honour: an unknown suite, task or initial state, a demo
    flag it does not take. ``key`` names the flag or option (``--task``, ``suite``);
    the CLI turns it into a usage error, the fleet into a configuration error."""

    def __init__(self, message: str, *, key: str, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


@dataclass(frozen=True)
class DriverEntry:
    """One driver a world provides (``driver: {name: ...}`` in a config).

    ``factory`` is ``"module:attribute"`` (imported only when the driver is built, so
    naming a world never imports its simulator) or a callable ``factory(profile=...,
    **options)``. ``reusable``: a worker may keep one built driver across the episodes
    it runs; the driver then has ``select(**options)``, which switches it to another
    episode's ``select_options`` (and rebuilds what it must); every other option must be
    the same for the driver to be reused.
    """

    name: str
    factory: str | Callable[..., Driver]
    reusable: bool = False
    select_options: tuple[str, ...] = ()

    def load(self) -> Callable[..., Driver]:
        """The factory itself (importing its module when it is given as a path)."""
        if not isinstance(self.factory, str):
            return self.factory
        module_name, _, attribute = self.factory.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attribute)  # type: ignore[no-any-return]


DEMO_FLAGS: dict[str, str] = {
    "seed": "--seed",
    "scene": "--scene",
    "gui": "--gui",
    "drop_first_grasp": "--drop-first-grasp",
    "suite": "--suite",
    "task": "--task",
    "init_state": "--init-state",
}
"""The flags of ``harness demo`` a world may take (field of :class:`DemoRequest` -> flag).
A world lists the ones it takes in :attr:`WorldDemo.flags`; any other given flag is a
usage error that says which worlds take it."""


@dataclass(frozen=True)
class DemoRequest:
    """What the person asked ``harness demo`` for, before any config is read."""

    instruction: str | None = None
    """None when the command line gave none (the world's own default, or its task's)."""
    asks_to_find: bool = False
    """Whether the instruction asks to find something (the model will search)."""
    seed: int | None = None
    scene: str | None = None
    gui: bool = False
    drop_first_grasp: tuple[str, ...] = ()
    suite: str | None = None
    task: str | None = None
    init_state: int | None = None
    ask: Callable[[str, Sequence[str]], int | None] | None = field(default=None, compare=False)
    """The user, for a choice the world cannot make alone: ``ask(question, options)`` gives
    the index of the option chosen, or None (no answer). None when nobody can be asked
    (a pipe, ``--json``): the world then refuses, naming the options."""

    def given(self) -> list[str]:
        """The :data:`DEMO_FLAGS` fields that were given, in flag order."""
        return [name for name in DEMO_FLAGS if _given(getattr(self, name))]


def _given(value: object) -> bool:
    """A flag was given: a value (0 included), ``True``, a non-empty tuple."""
    return value is not None and value is not False and value != ()


@dataclass(frozen=True)
class DemoPlan:
    """How a world runs a demo request: the instruction, the config overrides (applied
    after ``--set``, to the config file or to the world's deployment) and lines the demo
    prints before it starts."""

    instruction: str
    overrides: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


class WorldDemo(Protocol):
    """The task ``harness demo --world NAME`` runs."""

    instruction: str
    """The instruction when none is given, as ``harness worlds`` shows it (the default
    world's is also the demo's default argument)."""
    flags: frozenset[str]
    """The :data:`DEMO_FLAGS` it takes."""

    def plan(self, request: DemoRequest) -> DemoPlan:
        """The instruction and overrides for ``request`` (:class:`WorldError` if it
        names something the world does not have)."""
        ...

    def check(self, request: DemoRequest, driver_options: Mapping[str, Any]) -> None:
        """Refuse flags that parse but cannot work with the final driver options (a fault
        on an object the scene does not hold): :class:`WorldError`."""
        ...

    def describe(self, driver_options: Mapping[str, Any]) -> str:
        """The robot and world in a few words, for the demo's first line."""
        ...


@dataclass(frozen=True)
class SuiteTaskSpec:
    """One task of a world's suite: its episodes are seeds ``0 .. episodes - 1``."""

    name: str
    description: str
    instruction: str
    episodes: int
    overrides: tuple[str, ...] = ()
    """Config overrides of every episode of the task (``driver.task=3``)."""


@dataclass(frozen=True)
class SuiteSpec:
    """A suite of episodes a world defines (``harness eval NAME``), as data the fleet
    turns into its own suite."""

    name: str
    description: str
    config: Path
    """The deployment the episodes run."""
    tasks: tuple[SuiteTaskSpec, ...]
    max_turns: int = 30
    check: Literal["auto", "programmatic", "model", "none"] = "programmatic"
    seed_option: str = "driver.seed"
    """The config key an episode's seed sets."""
    group_by_task: bool = False
    """Dispatch the episodes task by task (a reusable driver rebuilds once per task)."""
    acting_tools: tuple[str, ...] = ()
    """The tools that act on the world: none of them may run when the right answer is a
    refusal (a suite whose instructions were corrupted)."""


class WorldSuites(Protocol):
    """The suites a world defines."""

    def names(self) -> Sequence[str]:
        """The suites to list (``harness worlds``); variants may exist beyond these."""
        ...

    def claims(self, name: str) -> bool:
        """Whether ``name`` is one of this world's suites, decided without importing the
        world's heavy dependencies."""
        ...

    def build(self, name: str) -> SuiteSpec:
        """The suite ``name`` (:class:`WorldError` naming it when there is none)."""
        ...


SceneSource = Literal["driver", "none"]
"""Where the scene graph's detections come from: ``driver``, the driver's own
``perception()`` (a simulator's ground truth); ``none``, no scene (or one the deployment
configures with ``scene.perception``)."""

TaskJudge = Literal["goal_predicates", "ground_truth", "model", "none"]
"""Who judges a whole task: ``goal_predicates``, the world's own goal predicates (the
driver's ``goal_predicates()`` and ``goal_achieved()``); ``ground_truth``, the harness's
check of the instruction against the driver's ``detections()`` and
``post_conditions()``; ``model``, a vision model on camera images; ``none``."""


@dataclass(frozen=True)
class World:
    """What a world provides; see the module docstring."""

    name: str
    summary: str
    drivers: tuple[DriverEntry, ...]
    profile: str
    """The embodiment profile of the world's robot: a name in :attr:`profiles`, a
    built-in profile name or a path."""
    profiles: Mapping[str, Path] = field(default_factory=dict)
    """Profiles the world ships, by name (``embodiment: NAME`` finds them)."""
    scene: SceneSource = "driver"
    task_check: TaskJudge = "none"
    install: str = ""
    """What to install for it (``pip install 'embodied-harness[sim]'``); empty when
    nothing beyond the harness is needed."""
    requires: tuple[str, ...] = ()
    """Modules that must be importable for the world to run (its extra's packages)."""
    deployment: Mapping[str, Any] = field(default_factory=dict)
    """The config (model, embodiment, driver, run, evaluation...) the world runs with when
    no config file is read (``harness demo``, ``check``, ``console`` with ``--world``).
    Keys left out take the config's defaults; ``embodiment`` and ``driver`` default to
    :attr:`profile` and the first driver."""
    demo: WorldDemo | None = None
    suites: WorldSuites | None = None
    preload: tuple[str, ...] = ()
    """Modules an eval's worker processes import once before they fork, when this is the
    default world (each episode then starts without importing them)."""

    def driver(self, name: str) -> DriverEntry | None:
        """The entry of this world's driver ``name``."""
        return next((entry for entry in self.drivers if entry.name == name), None)

    def config_data(self) -> dict[str, Any]:
        """:attr:`deployment` with the world's profile and first driver filled in."""
        data = dict(self.deployment)
        data.setdefault("embodiment", self.profile)
        if self.drivers:
            data.setdefault("driver", {"name": self.drivers[0].name})
        return data

    def missing(self) -> list[str]:
        """The modules of :attr:`requires` that cannot be imported here."""
        return [name for name in self.requires if importlib.util.find_spec(name) is None]
