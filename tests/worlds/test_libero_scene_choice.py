"""Issue 40: a demo instruction that is no published task verbatim runs in the scene whose
things and actions it names, says which, and asks or refuses (naming the candidates) on a
tie; the choice reads what a scene holds, never its goal or its task's words."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from worlds.contract import DemoRequest, WorldError
from worlds.libero.scene_choice import scene_of_bddl

needs_libero = pytest.mark.skipif(
    importlib.util.find_spec("libero") is None, reason="needs the libero extra"
)

_BDDL = """(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language {language})
    (:regions
      (bowl_init_region
          (:target kitchen_table)
          (:ranges ((-0.1 -0.1 0.1 0.1)))
      )
      (top_region
          (:target wooden_cabinet_1)
      )
    )
  (:fixtures
    kitchen_table - kitchen_table
    wooden_cabinet_1 - wooden_cabinet
  )
  (:objects
    akita_black_bowl_1 akita_black_bowl_2 - akita_black_bowl
    plate_1 - plate
  )
  (:obj_of_interest
    {interest}
  )
  (:init
    (On akita_black_bowl_1 kitchen_table_bowl_init_region)
  )
  (:goal
    (And {goal})
  )
)
"""


def _write(tmp_path: Path, name: str, **parts: str) -> Path:
    path = tmp_path / f"{name}.bddl"
    path.write_text(_BDDL.format(**parts), encoding="utf-8")
    return path


def test_a_scene_is_what_its_bddl_declares_never_its_goal(tmp_path: Path) -> None:
    """Two problems that differ only in language, objects of interest and goal (one names
    a moka pot and a microwave that are not in the room) are the same scene."""
    one = _write(
        tmp_path,
        "a",
        language="put the bowl on the plate",
        interest="akita_black_bowl_1",
        goal="(On akita_black_bowl_1 plate_1)",
    )
    two = _write(
        tmp_path,
        "b",
        language="put the moka pot in the microwave",
        interest="moka_pot_1 microwave_1",
        goal="(In moka_pot_1 microwave_1_heating_region) (Open microwave_1)",
    )
    things = scene_of_bddl(one, abilities=False)
    assert things == scene_of_bddl(two, abilities=False)
    by_label = {t.label: t for t in things}
    assert set(by_label) == {"wooden cabinet", "black bowl", "plate"}  # no table
    assert by_label["black bowl"].count == 2
    assert by_label["wooden cabinet"].regions == ("top_region",)


@needs_libero
def test_libero_says_what_a_category_does() -> None:
    from worlds.libero.scene_choice import abilities_of

    assert abilities_of("microwave") == (True, False)
    assert abilities_of("wooden_cabinet") == (True, False)
    assert abilities_of("flat_stove") == (False, True)
    assert abilities_of("plate") == (False, False)


@needs_libero
@pytest.mark.parametrize(
    ("instruction", "suite", "task"),
    [
        # rephrased, polite, a package word the label leaves out
        ("could you put the cream cheese box into the bowl?", "libero_goal", 0),
        ("Please drop the cream cheese in the black bowl.", "libero_goal", 0),
        # an action only one scene's fixture affords, with a part it has
        ("open the door of the microwave", "libero_10", 9),
        ("kindly put the yellow and white mug inside the microwave", "libero_10", 9),
        ("would you put the book into the back of the caddy", "libero_10", 5),
        (
            "put the white mug on one plate and the yellow and white mug on the other",
            "libero_10",
            4,
        ),
        ("switch on the stove, then put the frying pan on it", "libero_10", 2),
    ],
)
def test_a_free_instruction_picks_the_scene_it_names(
    instruction: str, suite: str, task: int
) -> None:
    from worlds.libero.config import match_instruction
    from worlds.libero.demo import LiberoDemo

    assert match_instruction(instruction) is None  # no task has these words
    plan = LiberoDemo().plan(DemoRequest(instruction=instruction))
    assert f"driver.suite={suite}" in plan.overrides
    assert f"driver.task={task}" in plan.overrides
    assert "evaluation.task_check=none" in plan.overrides  # that task's goal is another
    said = "\n".join(plan.notes)
    assert f"scene: {suite} task {task}" in said and "chosen because it has the" in said
    assert plan.instruction == instruction  # the person's words, not the task's


@needs_libero
def test_every_published_instructions_own_scene_fits_it() -> None:
    """Oracle: the scene a task is set in holds everything its instruction names and affords
    what it asks, so the choice never rules it out (40 tasks, three phrasings each)."""
    from worlds.libero.config import MAIN_SUITES, resolve_task, suite_tasks
    from worlds.libero.scene_choice import choose_scene, fit_scene, scenes_of, words_of

    failures = []
    for suite in MAIN_SUITES:
        scenes = scenes_of((suite,))
        vocabulary = frozenset(w for s in scenes for t in s.things for w in t.words)
        for index, _name, _bddl in suite_tasks(suite):
            own = next(s for s in scenes if index in s.tasks)
            language = resolve_task(suite, index).language
            for text in (language, f"could you please {language}?", f"{language}, thanks"):
                fit = fit_scene(own, words_of(text), vocabulary | {"drawer", "door"})
                choice = choose_scene(text, (suite,))
                ok = not fit.missing and (
                    choice.chosen is not None or any(index in c.tasks for c in choice.tied)
                )
                if not ok:
                    failures.append((suite, index, text, fit.missing))
    assert not failures, failures


@needs_libero
def test_libero_pros_rephrasings_all_get_a_scene_that_has_what_they_name() -> None:
    """LIBERO-PRO's ``_lan`` rephrasings (words nobody here chose): each one's own task's
    scene fits it, and the demo picks a scene (or offers a tie) for every one of them."""
    from worlds.libero.config import MAIN_SUITES
    from worlds.libero.scene_choice import choose_scene, fit_scene, scenes_of, words_of
    from worlds.libero.suites import published_tasks

    scenes = scenes_of(MAIN_SUITES)
    vocabulary = frozenset(w for s in scenes for t in s.things for w in t.words)
    failures = []
    for suite in MAIN_SUITES:
        for index, (_name, text, _count) in enumerate(published_tasks(f"{suite}_lan")):
            own = next(s for s in scenes if s.suite == suite and index in s.tasks)
            fit = fit_scene(own, words_of(text), vocabulary | {"drawer", "door"})
            choice = choose_scene(text)
            if fit.missing or (choice.chosen is None and not choice.tied):
                failures.append((suite, index, text, fit.missing, choice.problem))
    assert not failures, failures


@needs_libero
def test_a_tie_is_refused_naming_the_candidates() -> None:
    from worlds.libero.demo import LiberoDemo

    with pytest.raises(WorldError) as caught:
        LiberoDemo().plan(DemoRequest(instruction="put the red mug on the plate"))
    message = str(caught.value)
    assert "fits 2 scenes equally" in message
    assert "libero_10 task 4" in message and "libero_10 task 6" in message
    assert "red coffee mug" in message and "--task" in message


@needs_libero
def test_a_tie_is_asked_where_a_user_can_answer() -> None:
    from worlds.libero.demo import LiberoDemo

    asked: list[tuple[str, list[str]]] = []

    def ask(question: str, options: Any) -> int:
        asked.append((question, list(options)))
        return 1

    plan = LiberoDemo().plan(DemoRequest(instruction="put the red mug on the plate", ask=ask))
    assert len(asked) == 1 and len(asked[0][1]) == 2
    assert "fits 2 LIBERO scenes equally" in asked[0][0]
    assert "driver.task=6" in plan.overrides and "your choice of 2" in plan.notes[0]
    with pytest.raises(WorldError, match="fits 2 scenes equally"):  # no valid answer
        LiberoDemo().plan(
            DemoRequest(instruction="put the red mug on the plate", ask=lambda q, o: None)
        )


@needs_libero
@pytest.mark.parametrize(
    ("instruction", "words"),
    [
        ("make me a coffee", "asks for nothing LIBERO's skills do"),
        ("put the green mug on the plate", "lacks green mug"),
        ("put the banana in the basket", "lacks banana"),
        ("put the three moka pots on the stove", "lacks 3 of the moka pot"),
        ("turn on the microwave", "lacks something that turns on and off"),
    ],
)
def test_an_instruction_no_scene_fits_is_refused_saying_why(instruction: str, words: str) -> None:
    from worlds.libero.demo import LiberoDemo

    with pytest.raises(WorldError) as caught:
        LiberoDemo().plan(DemoRequest(instruction=instruction))
    assert "no LIBERO task" in str(caught.value) and words in str(caught.value)


@needs_libero
def test_the_demo_cli_refuses_a_tie_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from harness.cli import main

    code = main(
        [
            "demo",
            "--world",
            "libero",
            "put the red mug on the plate",
            "--set",
            f"run.store={tmp_path / 's'}",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "fits 2 scenes equally" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
