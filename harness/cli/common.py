"""Shared CLI plumbing: loading config with overrides and ``--model``, running a task with
Ctrl-C as cancellation, and mapping the result to an exit code."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.render import wide_console
from harness.config import HarnessConfig, load_config
from harness.errors import ConfigError
from harness.events import DoneEvent, EventBase

if TYPE_CHECKING:
    from harness.store.reader import RunLog

__all__ = [
    "CancelOnInterrupt",
    "add_config_arguments",
    "add_store_arguments",
    "config_from_args",
    "exit_code_for",
    "follow_stream",
    "open_run_log",
    "print_run_footer",
    "store_folder",
    "stream_task",
    "wide_console",
]

DEFAULT_STORE = ".harness"


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


def config_from_args(args: argparse.Namespace) -> HarnessConfig:
    config = load_config(args.config, overrides=args.set)
    if getattr(args, "model", None):
        from harness.providers import parse_model_spec

        config.model = parse_model_spec(args.model, config.model)
    return config


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
        help=f"run store folder (default: run.store of --config, else {DEFAULT_STORE})",
    )
    if with_config:
        parser.add_argument("--config", "-c", help="take the run store folder from this config")


def store_folder(args: argparse.Namespace) -> Path:
    """The run store folder a reading command looks in."""
    if getattr(args, "store", None):
        return Path(args.store).expanduser()
    if getattr(args, "config", None):
        config = load_config(args.config)
        if not config.run.store:
            raise ConfigError(
                f"run.store: {args.config} keeps runs in memory only (run.store is null); "
                "there is nothing on disk to read",
                key="run.store",
                value=None,
            )
        return Path(config.run.store).expanduser()
    return Path(DEFAULT_STORE)


def open_run_log(args: argparse.Namespace) -> RunLog:
    from harness.store.reader import RunLog

    return RunLog(store_folder(args))


def print_run_footer(console: Any, harness: Any, task_id: str) -> None:
    """Where the run was recorded and how to look at it again."""
    store = harness.store
    folder = getattr(store, "folder", None)
    if folder is None:
        console.print(f"[dim]task {task_id} (kept in memory only: run.store is null)[/dim]")
        return
    console.print(
        f"[dim]recorded task {task_id} in {folder}: harness show {task_id} | "
        f"harness report {task_id}[/dim]",
        soft_wrap=True,
    )


def exit_code_for(done: DoneEvent | None, interrupted: bool) -> int:
    """0 completed, 1 not completed, 130 interrupted; 3, before anything else, when the
    robot may still be moving."""
    from harness.cli import EXIT_INTERRUPTED, EXIT_NOT_COMPLETED, EXIT_OK, EXIT_ROBOT_NOT_STOPPED

    if done is not None and done.robot_stopped is False:
        return EXIT_ROBOT_NOT_STOPPED
    if interrupted:
        return EXIT_INTERRUPTED
    if done is not None and done.status == "completed":
        return EXIT_OK
    return EXIT_NOT_COMPLETED
