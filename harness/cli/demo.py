"""``harness demo``: a whole task on a simulated world, offline, in well under a minute.

By default the default world (a simulated Franka Panda, headless, with a camera), the
offline planner model (a deterministic stand-in, not a language model: no API key needed),
the scene graph, skills and memory. It streams a readable timeline and ends with the
evaluator-confirmed outcome of every pick and place, the run id and where the report is.
``--world NAME`` runs another installed world's demo task (``harness worlds`` lists them);
each world says which of the demo's flags it takes (:class:`worlds.WorldDemo`).

Config: ``--config FILE``, else ``configs/default.yaml`` when run from a checkout (for the
default world), else the world's own deployment (so it works from an installed wheel); `run`
and `chat` read the same. The demo offers the model the ``delegate`` tool (sub-agents). On
the default world, ``--scene hidden_cube`` (the default for an instruction that asks to find
something, such as "find the yellow cube and put it in the tray") hides a yellow cube behind
a deep tray, out of the front camera's view: the planner hands the search to a sub-agent
with ``look``, ``find_objects`` and ``get_object_image``, then acts on its handoff."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.cli import command_help
from harness.cli.common import (
    UsageError,
    add_config_arguments,
    add_max_turns_argument,
    add_world_argument,
    chosen_world,
    config_from_args,
    default_deployment,
    exit_code_for,
    nonempty_text,
    store_flag,
    stream_task,
)
from harness.cli.live import add_live_arguments, live_viewers
from harness.cli.render import (
    JsonLinesRenderer,
    TimelineRenderer,
    describe_outcome,
    timeline_console,
)
from harness.config import HarnessConfig, with_overrides
from harness.events import DoneEvent, EvaluationEvent, EventBase, HandoffEvent
from worlds.contract import DEMO_FLAGS, DemoPlan, DemoRequest, World, WorldError
from worlds.registry import default_world, find_worlds, load_world

__all__ = ["DEFAULT_INSTRUCTION", "DEMO_DEFAULTS", "demo_config", "register"]

logger = logging.getLogger(__name__)

_DEFAULT = default_world()
assert _DEFAULT.demo is not None
DEFAULT_INSTRUCTION = _DEFAULT.demo.instruction
DEMO_DEFAULTS: dict[str, Any] = default_deployment()
"""What the demo runs when no config file is found (matches configs/default.yaml)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help=command_help("demo"),
        description="Run a whole task on a simulated world, offline: the offline planner (a "
        "deterministic stand-in for a language model; no API key) drives the default world, "
        "or the one --world names. Prints a line per step, then the outcome the simulator "
        "confirmed and how to look at the run again.",
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
        default=None,
        help="scene variant (default world: standard or hidden_cube; default: hidden_cube "
        "when the instruction asks to find something, else standard)",
    )
    parser.add_argument("--gui", action="store_true", help="open the simulator's window")
    parser.add_argument(
        "--drop-first-grasp",
        metavar="REF",
        action="append",
        default=[],
        help="make the first grasp of REF slip (to watch the recovery)",
    )
    parser.add_argument("--json", action="store_true", help="print every event as a JSON line")
    add_max_turns_argument(parser)
    add_world_argument(
        parser,
        help=f"the world to run (default: {_DEFAULT.name}; harness worlds lists what is "
        "installed, each with the extra it needs)",
    )
    parser.add_argument("--suite", default=None, help="the world's suite to take the task from")
    parser.add_argument("--task", default=None, help="task index or name in the suite")
    parser.add_argument(
        "--init-state", type=int, default=None, help="the task's initial state index"
    )
    add_live_arguments(parser)
    parser.set_defaults(func=run_demo)


def demo_config(args: argparse.Namespace) -> HarnessConfig:
    """The config file given, the checkout's default config, or the world's deployment
    (the same rule as `run` and `chat`), plus the world's overrides for the demo's flags;
    ``args.instruction`` becomes the instruction the world runs (a benchmark task's own
    language when none was given)."""
    return _demo(args)[0]


def _demo(args: argparse.Namespace) -> tuple[HarnessConfig, World, DemoPlan]:
    world = chosen_world(args) or _DEFAULT
    explicit = getattr(args, "world", None) is not None
    if world.demo is None:
        having = [f.name for f in find_worlds() if _demo_flags(f.name) is not None]
        raise UsageError(
            f"the {world.name} world has no demo task (worlds with one: {', '.join(having)})"
        )
    request = _request(args)
    _check_flags(request, world, explicit=explicit)
    try:
        plan = world.demo.plan(request)
    except WorldError as exc:
        raise UsageError(str(exc)) from None
    config = config_from_args(args, extra_overrides=plan.overrides)
    name = config.driver.name if config.driver is not None else None
    if world.driver(name or "") is None and (explicit or plan.overrides):
        wanted = ", ".join(entry.name for entry in world.drivers)
        if explicit:
            raise UsageError(
                f"--world {world.name} needs a config with driver {wanted}, not {name!r}"
            )
        flags = ", ".join(DEMO_FLAGS[field] for field in request.given())
        raise UsageError(f"{flags} need the {world.name} world's driver ({wanted}), not {name!r}")
    config = with_overrides(config, ["subagents.enabled=true"])
    try:
        world.demo.check(request, _driver_options(config))
    except WorldError as exc:
        raise UsageError(str(exc)) from None
    args.instruction = plan.instruction
    return config, world, plan


def _request(args: argparse.Namespace) -> DemoRequest:
    from harness.planner.grammar import search_phrase

    instruction = args.instruction
    return DemoRequest(
        instruction=None if instruction == DEFAULT_INSTRUCTION else instruction,
        asks_to_find=search_phrase(instruction) is not None,
        seed=args.seed,
        scene=args.scene,
        gui=bool(args.gui),
        drop_first_grasp=tuple(args.drop_first_grasp),
        suite=getattr(args, "suite", None),
        task=getattr(args, "task", None),
        init_state=getattr(args, "init_state", None),
        ask=None if getattr(args, "json", False) or not sys.stdin.isatty() else _ask,
    )


def _ask(question: str, options: Sequence[str]) -> int | None:
    """Ask the person at the terminal to pick one of ``options`` (None: no valid answer)."""
    print(question, file=sys.stderr)
    for number, option in enumerate(options, 1):
        print(f"  {number}. {option}", file=sys.stderr)
    try:
        answer = input(f"which one (1-{len(options)})? ").strip()
    except EOFError:
        return None
    return int(answer) - 1 if answer.isdigit() and 1 <= int(answer) <= len(options) else None


def _demo_flags(name: str) -> frozenset[str] | None:
    """The demo flags world ``name`` takes (None: no demo, or it does not load)."""
    try:
        demo = load_world(name).demo
    except WorldError:
        return None
    return demo.flags if demo is not None else None


def _check_flags(request: DemoRequest, world: World, *, explicit: bool) -> None:
    """A flag the world does not take is a usage error saying which worlds take it."""
    assert world.demo is not None
    for field in request.given():
        if field in world.demo.flags:
            continue
        flag = DEMO_FLAGS[field]
        owners = [f.name for f in find_worlds() if field in (_demo_flags(f.name) or frozenset())]
        if not owners:
            raise UsageError(f"{flag}: no installed world takes it")
        if explicit:
            takes = [DEMO_FLAGS[f] for f in DEMO_FLAGS if f in world.demo.flags]
            listed = (
                ", ".join(takes[:-1]) + " and " + takes[-1] if len(takes) > 1 else "".join(takes)
            )
            raise UsageError(
                f"{flag} is a {'/'.join(owners)} flag; --world {world.name} takes "
                + (listed or "none of the world flags")
            )
        raise UsageError(f"{flag} is a {'/'.join(owners)} flag; add --world {owners[0]}")


def _driver_options(config: HarnessConfig) -> dict[str, Any]:
    return dict(config.driver.model_extra or {}) if config.driver is not None else {}


def run_demo(args: argparse.Namespace) -> int:
    console = timeline_console()
    config, world, plan = _demo(args)
    offline = config.model.provider == "planner"
    fresh = _fresh_memory(args, config)
    with contextlib.ExitStack() as stack:
        if fresh:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="harness-demo-"))
            config = with_overrides(config, [f"memory.path={folder}"])
        return _run(args, console, config, world, plan, offline=offline, fresh_memory=fresh)


def _fresh_memory(args: argparse.Namespace, config: HarnessConfig) -> bool:
    """Whether the demo starts from an empty memory: yes for the built-in deployments
    (no ``--config``, no ``--set memory.*``), so two demos match to the token; a deployment
    of your own keeps ``memory.path`` between its runs, as ``harness run`` does. (What a run
    reads at its start, the tool experience of earlier runs, is part of what the model
    sees: a demo that read the last demo's would differ from it.)"""
    if getattr(args, "config", None) or not config.memory.enabled:
        return False
    return not any(o.partition("=")[0].strip().startswith("memory") for o in args.set)


def _run(
    args: argparse.Namespace,
    console: Console,
    config: HarnessConfig,
    world: World,
    plan: DemoPlan,
    *,
    offline: bool,
    fresh_memory: bool,
) -> int:
    from harness.cli import EXIT_NOT_COMPLETED
    from harness.runtime.harness import Harness

    if not args.json:
        who = (
            "the offline planner (a deterministic stand-in, not a language model; no API key)"
            if offline
            else f"{config.model.provider}:{config.model.name}"
        )
        assert world.demo is not None
        robot = world.demo.describe(_driver_options(config))
        console.print(f"[bold]harness demo[/bold]: {escape(robot)} driven by " + who)
        for note in plan.notes:
            console.print(escape(note))
        if fresh_memory:
            console.print(
                "memory: empty at the start, so every demo runs the same (a deployment keeps "
                "its memory.path between runs)"
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
        task_started: list[float] = []
        render = JsonLinesRenderer() if args.json else TimelineRenderer(console)

        def show(event: EventBase) -> None:
            if event.type == "task_started" and not event.task_id.startswith("lane"):  # type: ignore[attr-defined]
                task_started.append(event.time)
            if isinstance(event, EvaluationEvent):
                verdicts.append(event)
            elif isinstance(event, HandoffEvent):
                handoffs.append(event)
            render(event)

        done, interrupted = stream_task(
            harness,
            args.instruction,
            live.wrap(show) if live is not None else show,
            max_turns=args.max_turns,
        )
        elapsed = time.monotonic() - started
        if not args.json:
            task_s = _task_seconds(harness, done, task_started[:1])
            _summary(console, harness, done, verdicts, (task_s, elapsed), handoffs)
    return exit_code_for(done, interrupted)


def _task_seconds(harness: Any, done: DoneEvent | None, started: list[float]) -> float | None:
    """The task's time as ``harness runs`` and the report give it: from the task's start to
    its end as the run store recorded them (from its first event to ``done`` when the run
    was kept in memory only)."""
    folder = getattr(harness.store, "folder", None)
    if done is None:
        return None
    if folder is not None:
        from harness.store.reader import RunLog

        try:
            with RunLog(folder) as log:
                return log.task(done.task_id).duration_s
        except Exception:  # the summary must not fail on a store it just wrote
            logger.debug("the task's time could not be read back", exc_info=True)
    return done.time - started[0] if started else None


def _notice(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _summary(
    console: Console,
    harness: Any,
    done: DoneEvent | None,
    verdicts: list[EvaluationEvent],
    seconds: tuple[float | None, float],
    handoffs: list[HandoffEvent],
) -> None:
    """The result: ``seconds`` is (the task's time, as ``harness runs`` and the report say;
    the whole command's, with building the world and the harness)."""
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
    task_s, elapsed = seconds
    took = f"in {task_s:.1f} s" if task_s is not None else "(its time unknown)"
    console.print(
        f"[{style}]{status}[/{style}] {took}, {turns} turns; evaluator confirmed "
        f"{len(confirmed)} action(s), reported {len(failed)} failure(s)"
    )
    console.print(
        f"time: the task's, from its start to its end (harness runs and the report give the "
        f"same); {elapsed:.1f} s with starting the world"
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
