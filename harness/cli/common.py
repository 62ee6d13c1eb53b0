"""Shared CLI plumbing: loading config with overrides and ``--model``, running a task with
Ctrl-C as cancellation, and mapping the result to an exit code.

Imported by every command, so it imports only the standard library, rich and the errors at
load time: the config schema, the events and the worlds (pydantic models, numpy, the
default world) are imported by the functions that use them, and ``harness runs`` or
``harness show`` never pay for a world they do not load."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shlex
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.render import wide_console
from harness.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from harness.config import HarnessConfig, ModelConfig
    from harness.events import DoneEvent, EventBase
    from harness.store.reader import RunLog
    from worlds.contract import World

__all__ = [
    "RUN_HELP",
    "CancelOnInterrupt",
    "UsageError",
    "add_config_arguments",
    "add_max_turns_argument",
    "add_run_argument",
    "add_store_arguments",
    "add_world_argument",
    "apply_model_arguments",
    "chosen_world",
    "config_from_args",
    "default_deployment",
    "exit_code_for",
    "follow_stream",
    "nonempty_text",
    "open_run_log",
    "positive_int",
    "print_run_footer",
    "resolve_run",
    "store_flag",
    "store_folder",
    "stream_task",
    "wide_console",
    "world_name",
]

DEFAULT_STORE = ".harness"


def nonempty_text(what: str) -> Callable[[str], str]:
    """An argparse type: text with something in it."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{what} is empty; say what the robot should do")
        return text

    return parse


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", help="YAML config file (defaults when omitted)")
    parser.add_argument(
        "--set",
        "-s",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. context.compaction.reserve_tokens=8192",
    )
    parser.add_argument(
        "--model",
        "-m",
        help="model spec: openai:NAME, anthropic:NAME, openai:NAME@http://host:port/v1, planner",
    )
    parser.add_argument(
        "--context-window",
        type=positive_int("--context-window"),
        metavar="N",
        help="the model's context window in tokens (needed for models the built-in table "
        "does not know, such as a local server's)",
    )


RUN_HELP = (
    "task id, session id (its latest task), a unique prefix, or 'last'; omitted: the last "
    "task recorded in the store (the command says which it took)"
)
"""The help of every reading command's RUN argument."""


def add_run_argument(parser: argparse.ArgumentParser, *, help: str = RUN_HELP) -> None:
    """The optional RUN argument of ``show``, ``context``, ``report`` and ``export``."""
    parser.add_argument("run", nargs="?", default="last", metavar="RUN", help=help)


def add_max_turns_argument(parser: argparse.ArgumentParser) -> None:
    """``--max-turns N`` of the commands that run a task (``run``, ``demo``, ``resume``)."""
    parser.add_argument(
        "--max-turns",
        type=positive_int("--max-turns"),
        default=None,
        metavar="N",
        help="end the task after N turns (default: run.max_turns of the config, 60 in "
        "configs/default.yaml)",
    )


def positive_int(flag: str) -> Callable[[str], int]:
    """An argparse type: a whole number >= 1; anything else is a usage error naming ``flag``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be at least 1, got {value}")
        return value

    return parse


CHECKOUT_CONFIG = Path("configs") / "default.yaml"


@functools.cache
def default_deployment() -> dict[str, Any]:
    """What `demo`, `run`, `chat` and `check` use when there is no config file to read: the
    default world's deployment, the same as configs/default.yaml (a test keeps the two
    equal), so an installed wheel behaves like a checkout. Loaded on first use (it loads
    the default world); the same dict after that."""
    from worlds.registry import default_world

    return default_world().config_data()


def world_name(text: str) -> str:
    """An argparse type: the name of an installed world (listed without importing any)."""
    from worlds.registry import world_names

    names = world_names()
    if text not in names:
        choices = ", ".join(repr(name) for name in names)
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")
    return text


def add_world_argument(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--world", type=world_name, default=None, metavar="NAME", help=help)


def chosen_world(args: argparse.Namespace) -> World | None:
    """The world ``--world`` names (None without the flag); a world that cannot be
    loaded is a usage error naming its entry point."""
    from worlds.contract import WorldError
    from worlds.registry import load_world

    name = getattr(args, "world", None)
    if name is None:
        return None
    try:
        return load_world(name)
    except WorldError as exc:
        raise UsageError(f"--world {name}: {exc}") from None


def config_file(args: argparse.Namespace) -> str | None:
    """The config file a command reads: ``--config``, else configs/default.yaml in the
    working directory (a checkout) unless ``--world`` names a world other than the
    default, else None (the world's deployment, by default the default world's)."""
    if getattr(args, "config", None):
        return str(args.config)
    world = getattr(args, "world", None)
    if world is not None:
        from worlds.registry import DEFAULT_WORLD

        if world != DEFAULT_WORLD:
            return None
    return str(CHECKOUT_CONFIG) if CHECKOUT_CONFIG.is_file() else None


def config_from_args(
    args: argparse.Namespace, *, extra_overrides: Sequence[str] = ()
) -> HarnessConfig:
    """The one way `demo`, `run`, `chat`, `check` and `console` build their config (see
    :func:`config_file`; without a file, the deployment of the ``--world`` given, else the
    default one), with ``--set``, ``extra_overrides``, ``--model`` and ``--context-window``
    applied in that order."""
    from pydantic import ValidationError

    from harness.config import (
        HarnessConfig,
        apply_overrides,
        format_validation_error,
        load_config,
    )

    overrides = [*args.set, *extra_overrides]
    path = config_file(args)
    if path is not None:
        config = load_config(path, overrides=overrides)
    else:
        world = chosen_world(args)
        deployment = world.config_data() if world is not None else default_deployment()
        try:
            config = HarnessConfig.model_validate(apply_overrides(deployment, overrides))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(
                format_validation_error(exc, source="--set", schema=HarnessConfig),
                key=".".join(str(part) for part in first["loc"]),
                value=first.get("input"),
            ) from None
    return apply_model_arguments(config, args)


def apply_model_arguments(config: HarnessConfig, args: argparse.Namespace) -> HarnessConfig:
    """``--model`` replaces the model section; then ``--set model.*`` and
    ``--context-window`` apply to the model it names (so neither is silently dropped)."""
    spec = getattr(args, "model", None)
    if spec:
        from harness.config import apply_overrides
        from harness.providers import parse_model_spec

        config.model = parse_model_spec(spec, config.model)
        model_sets = [o for o in args.set if o.partition("=")[0].strip().startswith("model.")]
        if model_sets:
            data = apply_overrides({"model": config.model.model_dump()}, model_sets)
            config.model = _validated_model(data["model"])
    window = getattr(args, "context_window", None)
    if window is not None:
        config.model.context_window = window
    return config


def _validated_model(data: dict[str, Any]) -> ModelConfig:
    from pydantic import ValidationError

    from harness.config import ModelConfig

    try:
        return ModelConfig.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"model.{'.'.join(str(part) for part in p['loc'])}: got {p.get('input')!r}; {p['msg']}"
            for p in exc.errors()
        ]
        raise ConfigError("invalid --set: " + "; ".join(problems), key="model") from None


class CancelOnInterrupt:
    """First Ctrl-C cancels the running task cooperatively (the robot is stopped); a
    second one raises KeyboardInterrupt."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._previous: Any = None

    def __enter__(self) -> CancelOnInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.event.is_set():
            raise KeyboardInterrupt
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()


def stream_task(
    harness: Any, instruction: str, render: Callable[[EventBase], None], **options: Any
) -> tuple[DoneEvent | None, bool]:
    """Run one task, rendering each event; returns (done event, interrupted by Ctrl-C)."""
    return follow_stream(
        lambda cancelled: harness.run_stream(instruction, should_cancel=cancelled, **options),
        render,
    )


def follow_stream(
    open_stream: Callable[[Callable[[], bool]], Any], render: Callable[[EventBase], None]
) -> tuple[DoneEvent | None, bool]:
    """Render a task stream opened with Ctrl-C as its cancellation; returns (done event,
    interrupted by Ctrl-C).

    A second Ctrl-C raises KeyboardInterrupt out of the loop; the stream is closed on the
    way out, so the task is still finalised (robot stopped, end recorded) before the
    process exits.
    """
    from harness.events import DoneEvent

    done: DoneEvent | None = None
    with CancelOnInterrupt() as cancel, open_stream(cancel.is_set) as stream:
        for event in stream:
            render(event)
            if isinstance(event, DoneEvent):
                done = event
        return done, cancel.is_set()


def add_store_arguments(parser: argparse.ArgumentParser, *, with_config: bool = True) -> None:
    parser.add_argument(
        "--store",
        help="run store folder (default: run.store of --config, else of configs/default.yaml "
        f"in a checkout, else {DEFAULT_STORE})",
    )
    if with_config:
        parser.add_argument("--config", "-c", help="take the run store folder from this config")


def store_folder(args: argparse.Namespace) -> Path:
    """The run store folder a reading command looks in: ``--store``, else ``run.store`` of
    the config the task commands would read (``--config``, else configs/default.yaml in a
    checkout), resolved the same way, else ``.harness``."""
    if getattr(args, "store", None):
        return Path(args.store).expanduser()
    path = config_file(args)
    if path is None:
        return Path(DEFAULT_STORE)
    from harness.config import load_config

    config = load_config(path)
    if not config.run.store:
        raise ConfigError(
            f"run.store: {path} keeps runs in memory only (run.store is null); "
            "there is nothing on disk to read",
            key="run.store",
            value=None,
        )
    return config.resolve_path(config.run.store)


@contextlib.contextmanager
def open_run_log(args: argparse.Namespace) -> Iterator[RunLog]:
    """The run store a reading command prints from, redacting everything it reads.

    A damaged row is skipped while the command prints the rest; when the command is done,
    the damage met is raised as :class:`~harness.errors.RunStoreDamagedError` (exit 4)."""
    from harness.errors import RunStoreDamagedError
    from harness.store.reader import RunLog

    with RunLog(store_folder(args), redact=True) as log:
        yield log
        if log.damage:
            raise RunStoreDamagedError([damage.line() for damage in log.damage])


LAST_REFS = ("last", "latest", "")
"""What a RUN argument says to mean the newest task (:meth:`RunLog.resolve`)."""


def resolve_run(log: RunLog, ref: str) -> Any:
    """The task ``ref`` names in ``log``; for ``last`` (or RUN omitted) the command says on
    stderr which task and which store it took, so a run in another store is never taken
    for the one meant."""
    import sys

    task = log.resolve(ref)
    if ref.strip() in LAST_REFS:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(task.started_at))
        print(
            f"last task in {store_shown(log.folder)}: {task.id} ({when}, {task.status}) "
            f"{task.instruction[:60]!r}",
            file=sys.stderr,
            flush=True,
        )
    return task


def print_run_footer(console: Any, harness: Any, task_id: str) -> None:
    """Where the run was recorded and how to look at it again."""
    store = harness.store
    folder = getattr(store, "folder", None)
    if folder is None:
        console.print(f"[dim]task {task_id} (kept in memory only: run.store is null)[/dim]")
        return
    store = store_flag(Path(folder))
    console.print(
        f"[dim]recorded task {task_id} in {folder}: harness show {task_id}{store} | "
        f"harness report {task_id}{store}[/dim]",
        soft_wrap=True,
    )


def store_flag(folder: Path) -> str:
    """`` --store DIR`` so a printed command works from any folder (it is the absolute
    path, or the path as given when that is relative to here)."""
    return f" --store {shlex.quote(store_shown(folder))}"


def store_shown(folder: Path) -> str:
    """A store folder as printed: relative to here when it is below here, else absolute."""
    shown = os.path.relpath(folder) if folder.is_absolute() else str(folder)
    return str(folder) if shown.startswith("..") else shown


def exit_code_for(done: DoneEvent | None, interrupted: bool) -> int:
    """3 first, whenever the robot may still be moving (``done.robot_stopped`` is false);
    130 when Ctrl-C stopped the task; 0 when it completed and its goal was confirmed (or
    completed with no task check configured); 1 otherwise (not completed, ``not_achieved``,
    or a configured check that could not confirm it). See :func:`harness.events.task_succeeded`."""
    from harness.cli import EXIT_INTERRUPTED, EXIT_NOT_COMPLETED, EXIT_OK, EXIT_ROBOT_NOT_STOPPED

    if done is not None and done.robot_stopped is False:
        return EXIT_ROBOT_NOT_STOPPED
    if interrupted:
        return EXIT_INTERRUPTED
    if done is not None and done.succeeded:
        return EXIT_OK
    return EXIT_NOT_COMPLETED


def require_tools_fit(harness: Any) -> None:
    """A window too small for the tool definitions is bad configuration (exit 2 with the
    reason), found before a task starts rather than as a failed task."""
    from harness.errors import ConfigError

    refusal = harness.tools_refusal()
    if refusal is not None:
        raise ConfigError(
            f"the tool definitions do not fit the model's window: {refusal}",
            key="model.context_window",
            value=harness.context.budget.context_window,
        )


def output_path(value: str | None, *, option: str, folder: bool = False) -> Path | None:
    """``value`` as a path the command can write (a file; with ``folder``, a folder it may
    create), or a :class:`UsageError` naming the option: found before any work, in one
    line, never a traceback. None stays None (the command's default)."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if folder and path.exists() and not path.is_dir():
        raise UsageError(f"{option} {value}: it exists and is not a folder")
    if not folder and path.is_dir():
        raise UsageError(f"{option} {value}: it is a folder; give a file name")
    ancestor = path if folder else path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"{option} {value}: cannot be created: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {value}: cannot be written: no permission in {ancestor}")
    return path


def writing(option: str, value: str | os.PathLike[str]) -> Any:
    """A context in which an OS error writing ``value`` is a one-line usage error."""
    import contextlib

    @contextlib.contextmanager
    def guard() -> Any:
        try:
            yield
        except OSError as exc:
            raise UsageError(
                f"{option} {value}: cannot be written: {exc.strerror or exc}"
            ) from None

    return guard()
