"""Every built-in world keeps its contract: what it claims is what its driver has.

For each world of the registry: its drivers' factories import and are what the entry says
(a reusable driver can ``select``), its scene source and task check are methods its
driver really has, its profile loads by name, its deployment is a valid config, its demo
takes only demo flags, and its suites are claimed without importing the world's extra.
A world's suite becomes a fleet suite (and its corrupted twin) without any simulator,
through a world written here.
"""

from __future__ import annotations

import importlib.util
import inspect
import typing
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.config import HarnessConfig
from harness.errors import ConfigError
from harness.fleet.world_suites import suite_path, world_suite
from worlds import registry
from worlds.contract import (
    DEMO_FLAGS,
    DemoRequest,
    DriverEntry,
    SuiteSpec,
    SuiteTaskSpec,
    World,
    WorldError,
)

BUILTIN = sorted(registry.BUILTIN_WORLDS)
NEEDS = {
    "scene": {"driver": ("perception",), "none": ()},
    "task_check": {
        "goal_predicates": ("goal_predicates", "goal_achieved"),
        "ground_truth": ("detections", "post_conditions"),
        "model": (),
        "none": (),
    },
}


def _driver_class(entry: DriverEntry) -> type:
    factory = entry.load()
    if inspect.isclass(factory):
        return factory
    returned = typing.get_type_hints(factory).get("return")
    assert inspect.isclass(returned), f"{entry.name}: factory without a return type"
    return returned


@pytest.mark.parametrize("name", BUILTIN)
def test_a_world_is_what_it_claims(name: str) -> None:
    world = registry.load_world(name)
    assert world.name == name and world.drivers
    for module in world.requires:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{name} needs {world.install}")
    for entry in world.drivers:
        cls = _driver_class(entry)
        for method in ("connect", "observe", "execute", "stop", "disconnect", "capabilities"):
            assert callable(getattr(cls, method, None)), (entry.name, method)
        for method in (*NEEDS["scene"][world.scene], *NEEDS["task_check"][world.task_check]):
            assert callable(getattr(cls, method, None)), (entry.name, method)
        assert entry.reusable == callable(getattr(cls, "select", None)), entry.name
        if entry.reusable:
            parameters = inspect.signature(cls.select).parameters
            assert set(entry.select_options) <= set(parameters), (entry.name, list(parameters))
        assert registry.world_of_driver(entry.name) is world
        assert registry.driver_entry(entry.name) == entry
    profile = registry.load_profile(world.profile)
    assert profile.name == world.profile
    config = HarnessConfig.model_validate(world.config_data())
    assert config.driver is not None and world.driver(config.driver.name) is not None
    if world.demo is not None:
        assert world.demo.flags <= set(DEMO_FLAGS)
        assert world.demo.instruction


def test_world_names_are_unique_and_the_default_world_has_a_demo() -> None:
    names = registry.world_names()
    assert names[: len(BUILTIN)] == list(registry.BUILTIN_WORLDS)
    drivers = [e.name for n in BUILTIN for e in registry.load_world(n).drivers]
    assert len(drivers) == len(set(drivers))
    default = registry.default_world()
    assert default.demo is not None and default.preload
    assert HarnessConfig().driver.name == default.drivers[0].name  # type: ignore[union-attr]


def test_the_default_worlds_demo_plans_from_the_request() -> None:
    demo = registry.default_world().demo
    assert demo is not None
    plain = demo.plan(DemoRequest())
    assert plain.instruction == demo.instruction and plain.overrides == ()
    searching = demo.plan(DemoRequest(instruction="find the cube", asks_to_find=True, seed=4))
    assert searching.instruction == "find the cube" and "driver.seed=4" in searching.overrides
    assert any(o.startswith("driver.variant=") for o in searching.overrides) and searching.notes
    with pytest.raises(WorldError) as bad:
        demo.plan(DemoRequest(scene="moon"))
    assert bad.value.key == "--scene"


def test_a_suite_name_is_claimed_without_importing_the_worlds_extra() -> None:
    found = registry.suite_world("libero_goal")
    assert found is not None and found[0].name == "libero" and found[1] == "libero_goal"
    assert registry.suite_world("libero:libero_10") == (found[0], "libero_10")
    assert registry.suite_world("configs/suites/tabletop.yaml") is None
    assert registry.suite_world("moon:libero_goal") is None  # no world moon claims it
    assert suite_path("libero_goal") == "libero:libero_goal"


# ====================================================================== world suites


class _Suites:
    def __init__(self, tasks: Sequence[SuiteTaskSpec]) -> None:
        self.tasks = tuple(tasks)

    def names(self) -> Sequence[str]:
        return ["shelf"]

    def claims(self, name: str) -> bool:
        return name == "shelf"

    def build(self, name: str) -> SuiteSpec:
        if name != "shelf":
            raise WorldError(f"no suite {name!r}", key="suite", value=name)
        return SuiteSpec(
            name=name,
            description="shelf tasks",
            config=Path("deploy.yaml"),
            tasks=self.tasks,
            max_turns=9,
            seed_option="driver.layout",
            group_by_task=True,
            acting_tools=("pick", "shelve"),
        )


def _world(tasks: Sequence[SuiteTaskSpec]) -> World:
    return World(
        name="shelfworld",
        summary="a test world",
        drivers=(DriverEntry("shelf.sim", "nowhere:Nothing"),),
        profile="panda_tabletop",
        suites=_Suites(tasks),
    )


TASKS = [
    SuiteTaskSpec("t0-first", "first", "put the {red} box on the top shelf", 3, ("driver.task=0",)),
    SuiteTaskSpec("t1-empty", "no episodes", "move nothing", 0, ("driver.task=1",)),
    SuiteTaskSpec("t2-third", "third", "put the cup on the middle shelf", 2, ("driver.task=2",)),
]


def test_a_world_suite_becomes_a_fleet_suite() -> None:
    suite = world_suite(_world(TASKS), "shelf")
    assert [t.name for t in suite.tasks] == ["t0-first", "t2-third"]  # no episodes: skipped
    assert suite.tasks[0].instruction == "put the (red) box on the top shelf"
    assert [t.seed_list() for t in suite.tasks] == [[0, 1, 2], [0, 1]]
    assert suite.tasks[1].set == ["driver.task=2"] and suite.tasks[1].success == "achieved"
    assert (suite.max_turns, suite.seed_option, suite.group_by_task) == (9, "driver.layout", True)
    assert suite.path == "shelfworld:shelf" and suite.config == "deploy.yaml"
    assert len(suite.plans()) == 5


def test_the_corrupted_twin_asks_for_refusals_with_the_worlds_acting_tools() -> None:
    from harness.fleet.corrupt import corrupt

    clean = world_suite(_world(TASKS), "shelf")
    broken = world_suite(_world(TASKS), "shelf_corrupt")
    assert broken.path == "shelfworld:shelf_corrupt" and "corrupted" in broken.description
    for good, bad, index in zip(clean.tasks, broken.tasks, (0, 2), strict=True):
        # the seed is the task's place in the world's list, skipped tasks included
        expected = corrupt(TASKS[index].instruction, seed=index).replace("{", "(")
        assert bad.instruction == expected.replace("}", ")") != good.instruction
        assert bad.success == "refused" and bad.forbidden_tools == ["pick", "shelve"]
        assert bad.set == good.set


def test_a_suite_the_world_does_not_have_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no suite 'cellar'") as caught:
        world_suite(_world(TASKS), "cellar")
    assert caught.value.key == "suite"
    with pytest.raises(ConfigError, match="no episodes"):
        world_suite(_world([TASKS[1]]), "shelf")


def test_a_flag_given_as_zero_counts_as_given() -> None:
    """Found by the flag property test: ``--init-state 0`` on the default world went
    through (0 == False in Python)."""
    assert DemoRequest(seed=0, init_state=0).given() == ["seed", "init_state"]
    assert DemoRequest(gui=False, drop_first_grasp=()).given() == []
