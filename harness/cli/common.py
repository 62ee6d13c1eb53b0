"""Shared CLI plumbing: loading config with overrides and ``--model``, running a task with
Ctrl-C as cancellation, and mapping the result to an exit code."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable
from typing import Any

from harness.config import HarnessConfig, load_config
from harness.events import DoneEvent, EventBase

__all__ = [
    "CancelOnInterrupt",
    "add_config_arguments",
    "config_from_args",
    "exit_code_for",
    "stream_task",
]


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
    done: DoneEvent | None = None
    with CancelOnInterrupt() as cancel:
        for event in harness.run_stream(instruction, should_cancel=cancel.is_set, **options):
            render(event)
            if isinstance(event, DoneEvent):
                done = event
        return done, cancel.is_set()


def exit_code_for(done: DoneEvent | None, interrupted: bool) -> int:
    from harness.cli import EXIT_INTERRUPTED, EXIT_NOT_COMPLETED, EXIT_OK

    if interrupted:
        return EXIT_INTERRUPTED
    if done is not None and done.status == "completed":
        return EXIT_OK
    return EXIT_NOT_COMPLETED
