"""``harness demo --world libero``: which LIBERO task, and the deployment that runs it.

The task is ``--suite``/``--task``/``--init-state``; without ``--task`` the instruction is
matched against the published task languages of LIBERO's four suites (case, spacing and
punctuation ignored). An instruction that matches none runs in the scene whose things and
actions it names (:mod:`worlds.libero.scene_choice`), said in the demo's output; LIBERO's
goal check of that scene's task is then off (it judges another task), each skill still
judged after it runs. A tie between scenes is asked of the user where the demo has one (a
terminal), else refused naming the candidates; a scene that lacks what it names, refused.
With no config file
the deployment is :data:`DEPLOYMENT` (offline planner, ``panda_libero`` profile,
``sim.libero`` driver, LIBERO's goal predicates as the task check); a config file given
with ``--config`` is used as written, with the task flags applied to its driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worlds.contract import DemoPlan, DemoRequest, WorldError
from worlds.libero.config import (
    MAIN_SUITES,
    TaskChoiceError,
    libero_available,
    match_instruction,
    resolve_task,
)

__all__ = ["DEPLOYMENT", "PHYSICAL_SKILLS", "LiberoDemo"]

PHYSICAL_SKILLS = ("pick", "place", "push", "open", "close", "turn_on", "turn_off")
"""The skills that change the scene: each is judged after it runs by LIBERO's predicates."""

DEPLOYMENT: dict[str, Any] = {
    "model": {"provider": "planner", "name": "tabletop-planner"},
    "embodiment": "panda_libero",
    "driver": {"name": "sim.libero", "suite": "libero_object", "task": 0, "init_state": 0},
    "run": {"max_turns": 60, "failure_budget": 8, "store": ".harness"},
    "evaluation": {"required_tools": list(PHYSICAL_SKILLS), "task_check": "auto"},
    "context": {
        "episodes": {"enabled": True},
        "pressure": {"cache_aware": True},  # levels: the window table (default.yaml)
    },
}
"""What ``harness demo --world libero`` runs when no config file is given (docs/libero.md)."""


class LiberoDemo:
    """A published LIBERO task, chosen by flags or by its instruction."""

    instruction = "(the chosen task's published instruction)"
    flags = frozenset({"suite", "task", "init_state"})

    def plan(self, request: DemoRequest) -> DemoPlan:
        notes: list[str] = []
        try:
            suite, task = self._task(request, notes)
            chosen = resolve_task(suite, task)
        except TaskChoiceError as exc:
            raise WorldError(f"--{exc.key}: {exc}", key=f"--{exc.key}", value=exc.value) from None
        overrides = [f"driver.suite={suite}", f"driver.task={chosen.index}"]
        if notes:  # a scene chosen for a free instruction: its task's goal is not this one
            overrides.append("evaluation.task_check=none")
        if request.init_state is not None:
            if not 0 <= request.init_state < chosen.n_init_states:
                raise WorldError(
                    f"--init-state: {suite} task {chosen.index} has initial states "
                    f"0..{chosen.n_init_states - 1}, not {request.init_state}",
                    key="--init-state",
                    value=request.init_state,
                )
            overrides.append(f"driver.init_state={request.init_state}")
        instruction = request.instruction if request.instruction is not None else chosen.language
        return DemoPlan(instruction, tuple(overrides), (*notes, f"instruction: {instruction}"))

    @staticmethod
    def _task(request: DemoRequest, notes: list[str]) -> tuple[str, int | str]:
        """(suite, task) from the flags, else from the instruction's published language,
        else the scene it is about (a line for ``notes`` saying which and why)."""
        instruction, suite, task = request.instruction, request.suite, request.task
        if not libero_available():
            raise WorldError(
                "--world libero needs the LIBERO extra: pip install 'embodied-harness[libero]'",
                key="--world",
                value="libero",
            )
        if task is not None:
            return suite or "libero_object", int(task) if task.isdigit() else task
        if instruction is None:
            return suite or "libero_object", 0
        suites = (suite,) if suite else MAIN_SUITES
        found = match_instruction(instruction, suites)
        if found is not None:
            return found
        return _scene_for(instruction, suites, request, notes)

    def check(self, request: DemoRequest, driver_options: Mapping[str, Any]) -> None:
        return None

    def describe(self, driver_options: Mapping[str, Any]) -> str:
        return (
            f"a simulated Franka Panda (LIBERO on MuJoCo, "
            f"{driver_options.get('suite', 'libero_object')} task "
            f"{driver_options.get('task', 0)}, initial state {driver_options.get('init_state', 0)})"
        )


def _scene_for(
    instruction: str, suites: tuple[str, ...], request: DemoRequest, notes: list[str]
) -> tuple[str, int]:
    """The scene ``instruction`` names (no task has it verbatim): chosen, asked, or refused."""
    from worlds.libero.scene_choice import choose_scene  # the scene graph: only when asked

    where = ", ".join(suites)
    choice = choose_scene(instruction, suites)
    picked = choice.chosen
    if picked is None and choice.tied:
        options = [c.describe() for c in choice.tied]
        question = f"{instruction!r} fits {len(options)} LIBERO scenes equally:"
        answer = request.ask(question, options) if request.ask is not None else None
        if answer is None or not 0 <= answer < len(options):
            raise WorldError(
                f"no LIBERO task in {where} has the instruction {instruction!r}, and it fits "
                f"{len(options)} scenes equally ({'; '.join(options)}); give --suite and "
                "--task",
                key="instruction",
                value=instruction,
            )
        picked = choice.tied[answer]
        notes.append(f"scene: {picked.describe()} (your choice of {len(options)} that fit)")
    elif picked is None:
        raise WorldError(
            f"no LIBERO task in {where} has the instruction {instruction!r}, and {choice.problem}"
            "; give --suite and --task (e.g. --suite libero_object --task 0)",
            key="instruction",
            value=instruction,
        )
    else:
        notes.append(
            f"scene: {picked.describe()}; chosen because it has the "
            f"{' and the '.join(picked.named)} the instruction names"
        )
    notes.append(
        "task check: none (the instruction is not this scene's LIBERO task, whose goal LIBERO "
        "would judge); every skill is still judged after it runs"
    )
    return picked.suite, picked.task
