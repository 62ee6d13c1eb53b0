"""``harness run``: one task from the command line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli import command_help
from harness.cli.common import (
    add_config_arguments,
    add_max_turns_argument,
    config_from_args,
    exit_code_for,
    nonempty_text,
    print_run_footer,
    require_tools_fit,
    stream_task,
)
from harness.cli.live import add_live_arguments, live_viewers
from harness.cli.render import JsonLinesRenderer, TimelineRenderer


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help=command_help("run"),
        description="Run one task with the config's model and robot, printing a line per "
        "step (--json: one event per line); exit 0 when its goal was confirmed.",
    )
    add_config_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print every event as a JSON line")
    add_max_turns_argument(parser)
    add_live_arguments(parser)
    parser.add_argument(
        "instruction", type=nonempty_text("the instruction"), help="what the robot should do"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.assembly.build import build_redactor
    from harness.runtime.harness import Harness

    config = config_from_args(args)
    redactor = build_redactor(config)
    timeline = None if args.json else TimelineRenderer(redactor=redactor)
    render = timeline or JsonLinesRenderer(redactor=redactor)
    with (
        Harness.from_config(config, redactor=redactor) as harness,
        live_viewers(args, harness, _notice) as live,
    ):
        if live is not None:
            render = live.wrap(render)
        require_tools_fit(harness)
        done, interrupted = stream_task(harness, args.instruction, render, max_turns=args.max_turns)
        if timeline is not None and done is not None:
            print_run_footer(timeline.console, harness, done.task_id)
    return exit_code_for(done, interrupted)


def _notice(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
