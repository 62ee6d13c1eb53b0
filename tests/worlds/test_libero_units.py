"""The LIBERO world's pieces that need no simulator: the task check that only reports what
the world's own success check says, region naming, place-target resolution, and the
``--world libero`` flags of ``harness demo`` (usage errors, exit 2, one line)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.world.predicate_check import PredicateTaskCheck, has_goal_predicates
from harness.world.task_check import judge_task
from tests.tiers import examples
from worlds.libero import libero_available
from worlds.libero.config import PROFILE as LIBERO_PROFILE
from worlds.libero.scene import CatalogItem, SceneCatalog, plain_label, resolve_target

predicate = st.tuples(st.text(min_size=1, max_size=40), st.booleans(), st.text(max_size=60))


@settings(max_examples=examples(400), deadline=None)
@given(
    predicates=st.lists(predicate, max_size=6),
    achieved=st.booleans(),
    revisions=st.lists(st.text(min_size=1, max_size=20), max_size=2),
    claim=st.sampled_from(["Outcome: achieved", "Outcome: not achieved", "done", ""]),
)
def test_the_outcome_is_the_worlds_own_success_check_and_nothing_else(
    predicates: list[tuple[str, bool, str]], achieved: bool, revisions: list[str], claim: str
) -> None:
    check = PredicateTaskCheck(lambda: predicates, lambda: achieved, name="libero")
    outcome, evidence = judge_task(
        check, status="completed", report=claim, instruction="x", revisions=revisions
    )
    if revisions:
        assert outcome in ("unverified", "not_achieved")  # a revised goal is not LIBERO's
        assert outcome != "achieved"
    elif achieved:
        assert outcome == "achieved"
    else:
        assert outcome == "not_achieved"
    assert [(c.condition, c.held, c.evidence) for c in evidence.conditions] == predicates
    assert evidence.checked_by in ("libero", "the model's report")
    held = sum(p[1] for p in predicates)
    if not revisions:
        assert f"{held} of {len(predicates)} LIBERO goal predicates hold" in evidence.summary


def test_a_stopped_task_is_not_checked_by_the_world() -> None:
    check = PredicateTaskCheck(lambda: [("(On a b)", True, "")], lambda: True)
    outcome, _ = judge_task(check, status="cancelled", report="", instruction="x", revisions=[])
    assert outcome == "unverified"


class _JudgingDriver:
    """Just enough of a driver that judges its own task."""

    judge_name = "libero"

    def goal_predicates(self) -> list[tuple[str, bool, str]]:
        return [("(Turnon flat_stove_1)", False, "LIBERO TurnOn(flat_stove_1) = false")]

    def goal_achieved(self) -> bool:
        return False


def test_the_assembly_gives_a_judging_driver_its_own_check() -> None:
    from harness.assembly.embodiment import build_task_check
    from harness.config import HarnessConfig

    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    driver = _JudgingDriver()
    assert has_goal_predicates(driver)
    check = build_task_check(config, driver=driver, observe=None)
    assert isinstance(check, PredicateTaskCheck)
    result = check.check("turn on the stove", [])
    assert result.outcome == "not_achieved" and result.checked_by == "libero"
    assert result.summary == "0 of 1 LIBERO goal predicates hold; not: (Turnon flat_stove_1)"


def _catalog() -> SceneCatalog:
    catalog = SceneCatalog()
    for item in (
        CatalogItem("basket_1", "object", "basket", "object", "basket"),
        CatalogItem(
            "basket_1_contain_region",
            "region",
            "inside of basket",
            "container",
            parent="basket_1",
            tags=("contain",),
        ),
        CatalogItem("plate_1", "object", "plate", "object", "plate"),
        CatalogItem("flat_stove_1", "fixture", "stove", "surface", "flat_stove"),
        CatalogItem(
            "flat_stove_1_cook_region",
            "region",
            "cooking area of stove",
            "surface",
            parent="flat_stove_1",
            tags=("cook", "top"),
        ),
        CatalogItem("wooden_cabinet_1", "fixture", "wooden cabinet", "surface"),
        CatalogItem(
            "wooden_cabinet_1_top_region",
            "region",
            "top drawer of wooden cabinet",
            "container",
            parent="wooden_cabinet_1",
            tags=("drawer", "contain"),
            drawer=True,
        ),
        CatalogItem(
            "wooden_cabinet_1_top_side",
            "region",
            "top of wooden cabinet",
            "surface",
            parent="wooden_cabinet_1",
            tags=("top",),
        ),
        CatalogItem("wine_rack_1", "fixture", "wine rack", "surface", "wine_rack"),
        CatalogItem(
            "wine_rack_1_top_region",
            "region",
            "top of wine rack",
            "surface",
            parent="wine_rack_1",
            tags=("top",),
        ),
    ):
        catalog.items[item.ref] = item
    return catalog


@pytest.mark.parametrize(
    ("target", "relation", "expected"),
    [
        ("basket_1", None, ("basket_1_contain_region", "in")),
        ("basket_1", "in", ("basket_1_contain_region", "in")),
        ("basket_1_contain_region", None, ("basket_1_contain_region", "in")),
        ("plate_1", None, ("plate_1", "on")),
        ("flat_stove_1", None, ("flat_stove_1_cook_region", "on")),
        ("flat_stove_1", "on", ("flat_stove_1_cook_region", "on")),
        ("wooden_cabinet_1", "on", ("wooden_cabinet_1_top_side", "on")),
        ("wooden_cabinet_1_top_region", None, ("wooden_cabinet_1_top_region", "in")),
        ("nowhere_1", None, ("nowhere_1", "on")),
        ("wine_rack_1", "in", ("wine_rack_1_top_region", "on")),
        ("wine_rack_1", None, ("wine_rack_1_top_region", "on")),
        ("wooden_cabinet_1", "in", ("wooden_cabinet_1", "in")),
    ],
)
def test_place_targets_resolve_to_the_region_they_stand_for(
    target: str, relation: str | None, expected: tuple[str, str]
) -> None:
    assert resolve_target(_catalog(), target, relation) == expected


def test_labels_are_what_a_person_calls_the_thing() -> None:
    assert plain_label("akita_black_bowl") == "black bowl"
    assert plain_label("chefmate_8_frypan") == "frying pan"
    assert plain_label("alphabet_soup") == "alphabet soup"
    assert plain_label("moka_pot") == "moka pot"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["demo", "--suite", "libero_object"], "add --world libero"),
        (["demo", "--task", "3"], "add --world libero"),
        (["demo", "--world", "libero", "--seed", "3"], "--seed is a tabletop/so101 flag"),
        (["demo", "--world", "libero", "--drop-first-grasp", "x_1"], "tabletop flag"),
        (["demo", "--world", "moon"], "invalid choice"),
    ],
)
def test_world_flags_in_the_wrong_world_are_usage_errors(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not libero_available(), reason="needs the [libero] extra")
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["demo", "--world", "libero", "make me a coffee"], "no LIBERO task"),
        (
            ["demo", "--world", "libero", "--suite", "libero_moon", "--task", "0"],
            "--suite: no LIBERO suite",
        ),
        (["demo", "--world", "libero", "--task", "12"], "--task: libero_object has tasks 0..9"),
        (
            ["demo", "--world", "libero", "--task", "0", "--init-state", "500"],
            "initial states 0..49",
        ),
        (["demo", "--world", "libero", "--init-state", "-1"], "not -1"),
    ],
)
def test_a_libero_task_that_does_not_exist_is_a_usage_error(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    code = main([*argv, "--set", f"run.store={tmp_path / 's'}"])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err, err


@pytest.mark.skipif(not libero_available(), reason="needs the [libero] extra")
@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"suite": "libero_moon"}, "driver.suite"),
        ({"task": 10}, "driver.task"),
        ({"task": "make_coffee"}, "driver.task"),
        ({"init_state": 50}, "driver.init_state"),
        ({"init_state": -1}, "driver.init_state"),
        ({"colour": "red"}, "driver.colour"),
        ({"camera_size": 8}, "driver.camera_size"),
    ],
)
def test_driver_options_that_name_nothing_are_refused_before_any_env_is_built(
    options: dict[str, Any], key: str
) -> None:
    from embodiment.drivers import DriverOptionError
    from embodiment.profile import load_profile
    from worlds import build_driver

    with pytest.raises(DriverOptionError) as caught:
        build_driver("sim.libero", profile=load_profile(LIBERO_PROFILE), options=options)
    assert caught.value.key == key, str(caught.value)


def test_importing_any_libero_module_loads_no_mujoco() -> None:
    """MuJoCo fixes its GL backend when it is first imported, and the LIBERO and SO-101 worlds
    set ``MUJOCO_GL`` just before they import it; a module of this package that imported it
    at load time (``reach.py`` did) broke rendering for every later MuJoCo renderer of the
    process ("Default framebuffer is not complete" in the SO-101 tests on the same worker).
    In a fresh interpreter without ``MUJOCO_GL``, importing every module here loads none of
    MuJoCo, robosuite or LIBERO."""
    import os
    import subprocess
    import sys

    script = (
        "import importlib, pkgutil, sys, worlds.libero as p\n"
        "for m in pkgutil.iter_modules(p.__path__, 'worlds.libero.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(sorted(n for n in ('mujoco', 'robosuite', 'libero') if n in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout


_COORD = st.floats(min_value=-2.0, max_value=2.0, allow_nan=False)


@settings(max_examples=examples(300), deadline=None)
@given(_COORD, _COORD, _COORD, _COORD, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_how_far_outside_the_workspace_agrees_with_whether_within_it(
    x: float, y: float, x0: float, y0: float, w: float, h: float
) -> None:
    """The workspace box is read in one place (``SkillPlanner.outside_by``, which the
    microwave's refusal quotes, and ``within_reach``, which every skill asks): 0 exactly
    where (x, y) is within it, else the distance to its nearest point, found here apart by
    clamping each coordinate into the box."""
    from worlds.libero.skills import SkillPlanner

    low, high = (x0, y0, 0.0), (x0 + w, y0 + h, 1.0)
    planner = SkillPlanner(None, floor_z=0.0, ceiling_z=1.0, reach=(low, high))  # type: ignore[arg-type]
    nearest = (min(max(x, low[0]), high[0]), min(max(y, low[1]), high[1]))
    expected = ((x - nearest[0]) ** 2 + (y - nearest[1]) ** 2) ** 0.5
    assert planner.outside_by(x, y) == pytest.approx(expected, abs=1e-12)
    assert planner.within_reach(x, y) == (low[0] <= x <= high[0] and low[1] <= y <= high[1])
    assert planner.within_reach(x, y) == (planner.outside_by(x, y) == 0.0)
    assert SkillPlanner(None, floor_z=0.0, ceiling_z=1.0).outside_by(x, y) == 0.0  # type: ignore[arg-type]
