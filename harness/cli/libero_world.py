"""The LIBERO deployment of the CLI (``harness demo --world libero``): which task, which config.

The task is ``--suite``/``--task``/``--init-state``; without ``--task`` the instruction is
matched against the published task languages of LIBERO's four suites (case, spacing and
punctuation ignored); an instruction that matches none is a usage error. With no config
file the deployment is :data:`LIBERO_DEPLOYMENT` (offline planner, ``panda_libero``
profile, ``sim.libero`` driver, LIBERO's goal predicates as the task check); a config file
given with ``--config`` is used as written, with the task flags applied to its driver.
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from harness.cli.common import UsageError, apply_model_arguments, config_from_args
from harness.config import HarnessConfig, apply_overrides, format_validation_error
from harness.errors import ConfigError

__all__ = ["LIBERO_DEPLOYMENT", "WORLDS", "add_world_arguments", "libero_config", "libero_task"]

WORLDS = ("tabletop", "libero")
LIBERO_DEPLOYMENT: dict[str, Any] = {
    "model": {"provider": "planner", "name": "tabletop-planner"},
    "embodiment": "panda_libero",
    "driver": {"name": "sim.libero", "suite": "libero_object", "task": 0, "init_state": 0},
    "run": {"max_turns": 60, "failure_budget": 8, "store": ".harness"},
    "evaluation": {"required_tools": ["pick", "place"], "task_check": "auto"},
    "context": {"episodes": {"enabled": True}},
}
"""What ``harness demo --world libero`` runs when no config file is given (docs/libero.md)."""


def add_world_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--world",
        choices=WORLDS,
        default="tabletop",
        help="tabletop: the built-in PyBullet table; libero: LIBERO's task suites on MuJoCo "
        "(needs the [libero] extra)",
    )
    parser.add_argument("--suite", default=None, help="LIBERO suite (with --world libero)")
    parser.add_argument("--task", default=None, help="LIBERO task index or name (--world libero)")
    parser.add_argument(
        "--init-state", type=int, default=None, help="LIBERO initial state index (--world libero)"
    )


def libero_task(
    instruction: str | None, suite: str | None, task: str | None
) -> tuple[str, int | str]:
    """(suite, task) from the flags, else from the instruction's published language."""
    from embodiment.sim.libero import MAIN_SUITES, libero_available, match_instruction

    if not libero_available():
        raise UsageError(
            "--world libero needs the LIBERO extra: pip install 'embodied-harness[libero]'"
        )
    if task is not None:
        return suite or "libero_object", int(task) if task.isdigit() else task
    if instruction is None:
        return suite or "libero_object", 0
    found = match_instruction(instruction, (suite,) if suite else MAIN_SUITES)
    if found is None:
        where = suite or ", ".join(MAIN_SUITES)
        raise UsageError(
            f"no LIBERO task in {where} has the instruction {instruction!r}; give --suite and "
            "--task (e.g. --suite libero_object --task 0)"
        )
    return found


def libero_config(args: argparse.Namespace, instruction: str | None) -> tuple[HarnessConfig, str]:
    """The LIBERO deployment for these flags and the instruction to run (the task's own
    language when none was given)."""
    from embodiment.sim.libero.config import TaskChoiceError, resolve_task

    suite, task = libero_task(instruction, args.suite, args.task)
    try:
        chosen = resolve_task(suite, task)
    except TaskChoiceError as exc:
        raise UsageError(f"--{exc.key}: {exc}") from None
    overrides = [f"driver.suite={suite}", f"driver.task={chosen.index}"]
    if args.init_state is not None:
        if not 0 <= args.init_state < chosen.n_init_states:
            raise UsageError(
                f"--init-state: {suite} task {chosen.index} has initial states "
                f"0..{chosen.n_init_states - 1}, not {args.init_state}"
            )
        overrides.append(f"driver.init_state={args.init_state}")
    if getattr(args, "config", None):
        config = config_from_args(args, extra_overrides=overrides)
        if config.driver is None or config.driver.name != "sim.libero":
            name = config.driver.name if config.driver is not None else None
            raise UsageError(f"--world libero needs a config with driver sim.libero, not {name!r}")
    else:
        data = apply_overrides(LIBERO_DEPLOYMENT, [*args.set, *overrides])
        try:
            config = HarnessConfig.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(
                format_validation_error(exc, source="--set"),
                key=".".join(str(part) for part in first["loc"]),
                value=first.get("input"),
            ) from None
        config = apply_model_arguments(config, args)
    return config, instruction if instruction is not None else chosen.language
