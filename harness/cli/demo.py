"""``harness demo``: a whole task on the built-in simulator, offline, in well under a minute.

A simulated Franka Panda (PyBullet, headless) with a camera, the offline planner model (a
deterministic stand-in, not a language model: no API key needed), the scene graph, skills
and memory. It streams a readable timeline and ends with the evaluator-confirmed outcome of
every pick and place, the run id and where the report is.

Config: ``--config FILE``, else ``configs/default.yaml`` when run from a checkout, else the
built-in defaults (so it works from an installed wheel); `run` and `chat` read the same.
The demo offers the model the ``delegate`` tool (sub-agents). ``--scene hidden_cube`` (the
default for an instruction that asks to find something, such as "find the yellow cube and
put it in the tray") hides a yellow cube behind a deep tray, out of the front camera's
view: the planner hands the search to a sub-agent with ``look``, ``find_objects`` and
``get_object_image``, then acts on its handoff.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.cli.common import (
    DEFAULT_DEPLOYMENT,
    UsageError,
    add_config_arguments,
    config_from_args,
    exit_code_for,
    nonempty_text,
    store_flag,
    stream_task,
)
from harness.cli.libero_world import add_world_arguments, libero_config
from harness.cli.live import add_live_arguments, live_viewers
from harness.cli.render import JsonLinesRenderer, TimelineRenderer, describe_outcome
from harness.config import HarnessConfig, with_overrides
from harness.events import DoneEvent, EvaluationEvent, EventBase, HandoffEvent

__all__ = ["DEFAULT_INSTRUCTION", "DEMO_DEFAULTS", "demo_config", "register"]

DEFAULT_INSTRUCTION = "put all the cubes in the tray"
SCENES = ("standard", "hidden_cube")
DEMO_DEFAULTS: dict[str, Any] = DEFAULT_DEPLOYMENT
"""What the demo runs when no config file is found (matches configs/default.yaml)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo", help="run a task on the built-in simulator with the offline planner"
    )
    add_config_arguments(parser)
    parser.add_argument(
        "instruction",
        nargs="?",
        default=DEFAULT_INSTRUCTION,
        type=nonempty_text("the instruction"),
        help="what the robot should do",
    )
    parser.add_argument("--seed", type=int, default=None, help="object layout seed")
    parser.add_argument(
        "--scene",
        choices=SCENES,
        default=None,
        help="scene variant (default: hidden_cube when the instruction asks to find "
        "something, else standard)",
    )
    parser.add_argument("--gui", action="store_true", help="open the PyBullet window")
    parser.add_argument(
        "--drop-first-grasp",
        metavar="REF",
        action="append",
        default=[],
        help="make the first grasp of REF slip (to watch the recovery)",
    )
    parser.add_argument("--json", action="store_true", help="print every event as a JSON line")
    add_world_arguments(parser)
    add_live_arguments(parser)
    parser.set_defaults(func=run_demo)


def demo_config(args: argparse.Namespace) -> HarnessConfig:
    """The config file given, the checkout's default config, or the built-in defaults
    (the same rule as `run` and `chat`), plus the demo's own flags. With ``--world libero``
    the LIBERO deployment (see :mod:`harness.cli.libero_world`); ``args.instruction`` is
    then the task's own language when none was given."""
    if getattr(args, "world", "tabletop") == "libero":
        return _libero_demo_config(args)
    _tabletop_only(args)
    overrides: list[str] = []
    if args.seed is not None:
        overrides.append(f"driver.seed={args.seed}")
    if args.gui:
        overrides.append("driver.gui=true")
    for ref in args.drop_first_grasp:
        overrides.append(f"driver.faults.drop_on_lift.{ref}=1")
    config = config_from_args(args, extra_overrides=overrides)
    config = with_overrides(config, ["subagents.enabled=true", *_scene_overrides(config, args)])
    _check_demo_flags(config, args)
    return config


def _tabletop_only(args: argparse.Namespace) -> None:
    for flag, value in (
        ("--suite", getattr(args, "suite", None)),
        ("--task", getattr(args, "task", None)),
        ("--init-state", getattr(args, "init_state", None)),
    ):
        if value is not None:
            raise UsageError(f"{flag} chooses a LIBERO task; add --world libero")


def _libero_demo_config(args: argparse.Namespace) -> HarnessConfig:
    for flag, given in (
        ("--seed", args.seed is not None),
        ("--scene", args.scene is not None),
        ("--gui", args.gui),
        ("--drop-first-grasp", bool(args.drop_first_grasp)),
    ):
        if given:
            raise UsageError(
                f"{flag} is a tabletop flag; --world libero takes --suite, --task and --init-state"
            )
    given = None if args.instruction == DEFAULT_INSTRUCTION else args.instruction
    config, args.instruction = libero_config(args, given)
    return with_overrides(config, ["subagents.enabled=true"])


def demo_scene(args: argparse.Namespace) -> str:
    """The scene variant: ``--scene``, else hidden_cube for a search instruction."""
    from harness.planner.grammar import search_phrase

    if getattr(args, "scene", None):
        return str(args.scene)
    if getattr(args, "world", "tabletop") != "tabletop":
        return "standard"
    return "hidden_cube" if search_phrase(args.instruction) is not None else "standard"


def _scene_overrides(config: HarnessConfig, args: argparse.Namespace) -> list[str]:
    scene = demo_scene(args)
    if scene == "standard":
        return []
    if config.driver is None or config.driver.name != "sim.tabletop":
        name = config.driver.name if config.driver is not None else None
        raise UsageError(f"--scene {scene} needs the sim.tabletop driver, not {name!r}")
    return [f"driver.variant={scene}"]


def _check_demo_flags(config: HarnessConfig, args: argparse.Namespace) -> None:
    """Flags that parse but cannot work: a usage error now, not a PyBullet message or a
    fault that silently never fires."""
    if args.gui and sys.platform.startswith("linux"):
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise UsageError(
                "--gui needs a display (DISPLAY is not set); leave it out to run headless"
            )
    if args.drop_first_grasp and config.driver is not None:
        if config.driver.name != "sim.tabletop":
            raise UsageError(
                f"--drop-first-grasp works with the sim.tabletop driver, not {config.driver.name!r}"
            )
        from embodiment.sim.world import TabletopConfig, assign_refs

        options = {k: v for k, v in (config.driver.model_extra or {}).items() if k != "faults"}
        scene = TabletopConfig.model_validate(options).scene()
        refs = [ref for ref, _ in assign_refs(scene.objects)]
        unknown = [ref for ref in args.drop_first_grasp if ref not in refs]
        if unknown:
            raise UsageError(
                f"--drop-first-grasp {unknown[0]}: no such object in the scene "
                f"(objects: {', '.join(refs)})"
            )


def run_demo(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_NOT_COMPLETED
    from harness.runtime.harness import Harness

    console = Console(highlight=False)
    config = demo_config(args)
    offline = config.model.provider == "planner"
    if not args.json:
        who = (
            "the offline planner (a deterministic stand-in, not a language model; no API key)"
            if offline
            else f"{config.model.provider}:{config.model.name}"
        )
        world = "PyBullet"
        if args.world == "libero" and config.driver is not None:
            options = config.driver.model_extra or {}
            world = (
                f"LIBERO on MuJoCo, {options.get('suite', 'libero_object')} task "
                f"{options.get('task', 0)}, initial state {options.get('init_state', 0)}"
            )
        console.print(
            f"[bold]harness demo[/bold]: a simulated Franka Panda ({world}) driven by " + who
        )
        if args.world == "libero":
            console.print(f"instruction: {escape(args.instruction)}")
        if demo_scene(args) == "hidden_cube":
            console.print(
                "scene: hidden_cube (a yellow cube stands behind a deep tray, out of the "
                "front camera's view; the model may delegate the search to a sub-agent)"
            )
    started = time.monotonic()
    with Harness.from_config(config) as harness, live_viewers(args, harness, _notice) as live:
        if harness.scene is None:
            console.print(
                "[red]no scene graph: the demo needs the scene package and `scene.enabled: "
                "true`; the model would get no Scene Brief[/red]"
            )
            return EXIT_NOT_COMPLETED
        verdicts: list[EvaluationEvent] = []
        handoffs: list[HandoffEvent] = []
        render = JsonLinesRenderer() if args.json else TimelineRenderer(console)

        def show(event: EventBase) -> None:
            if isinstance(event, EvaluationEvent):
                verdicts.append(event)
            elif isinstance(event, HandoffEvent):
                handoffs.append(event)
            render(event)

        done, interrupted = stream_task(
            harness, args.instruction, live.wrap(show) if live is not None else show
        )
        elapsed = time.monotonic() - started
        if not args.json:
            _summary(console, harness, done, verdicts, elapsed, handoffs)
    return exit_code_for(done, interrupted)


def _notice(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _summary(
    console: Console,
    harness: Any,
    done: DoneEvent | None,
    verdicts: list[EvaluationEvent],
    elapsed: float,
    handoffs: list[HandoffEvent],
) -> None:
    console.print()
    console.rule("result")
    for handoff in handoffs:
        found = ", ".join(
            str(f.get("ref")) for f in handoff.handoff.get("findings", []) if isinstance(f, dict)
        )
        lanes = f"sub-agent {handoff.task_id}: {handoff.status}"
        console.print(lanes + (f", found {found}" if found else ""))
    confirmed = [e for e in verdicts if e.verdict.status == "success"]
    failed = [e for e in verdicts if e.verdict.status != "success"]
    for event in verdicts:
        mark = "[green]ok[/green]  " if event.verdict.status == "success" else "[red]fail[/red]"
        console.print(f"{mark} {event.tool}: {escape(event.verdict.evidence)}")
    status = done.status if done is not None else "unknown"
    turns = done.turns if done is not None else 0
    style = "green" if status == "completed" else "red"
    console.print(
        f"[{style}]{status}[/{style}] in {elapsed:.1f} s, {turns} turns; evaluator confirmed "
        f"{len(confirmed)} action(s), reported {len(failed)} failure(s)"
    )
    if done is not None:
        style = "green" if done.succeeded else "red"
        console.print(f"[{style}]outcome: {escape(describe_outcome(done))}[/{style}]")
    task_id = done.task_id if done is not None else ""
    console.print(f"run: session {harness.session_id}, task {task_id}")
    folder = getattr(harness.store, "folder", None)
    if folder is None:
        console.print("report: none (run.store is null: the run was kept in memory only)")
    else:
        console.print(f"report: harness report {task_id}{store_flag(Path(folder))}", soft_wrap=True)
