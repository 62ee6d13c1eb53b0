"""``harness console``: the operator console in a browser, for tasks started from the page.

Builds the Harness from the config, attaches the console (:mod:`harness.console`), prints
the page's URL and then waits for tasks: each one started from the page runs here, in this
process's main thread, through ``run_stream()`` with the page's Stop as ``should_cancel``
and its revisions as ``poll_replan``; its timeline is printed here too. Ctrl-C while a task
runs cancels it (the robot is stopped) whether or not a page is open; Ctrl-C while idle
leaves.

Acting needs the console's secret, on localhost too: the command prints a one-time link
(a browser that opens it gets a session; the next link is printed when it is used). The
secret is generated, or read from ``$HARNESS_CONSOLE_TOKEN`` (refused below about 128 bits).
``--viewers`` lets clients without it watch, never act. See docs/console.md.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from harness.cli import command_help
from harness.cli.common import (
    add_config_arguments,
    add_world_argument,
    config_from_args,
    follow_stream,
)

WAIT_S = 0.5
DEFAULT_PORT = 8770
"""The console's port: not Foxglove's 8765 (``--foxglove``), so both can run at once."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "console",
        help=command_help("console"),
        description="Serve the operator console on this machine and print a one-time link "
        "for your browser: start tasks, watch the camera, the timeline and the context gauge, "
        "answer the robot's questions, revise and stop. A simulator that runs as fast as it "
        "can (the default world's does) is paced in real time with --set "
        "driver.real_time_factor=1, to watch its motions.",
    )
    add_config_arguments(parser)
    add_world_argument(
        parser, help="drive this world's deployment when no --config is given (harness worlds)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1, this machine only)",
    )
    parser.add_argument(
        "--viewers",
        action="store_true",
        help="let clients without the console's secret watch (never act)",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0: any free)",
    )
    parser.add_argument(
        "--eval",
        dest="eval_folder",
        metavar="DIR",
        help="also show the progress of the `harness eval` writing its output to DIR",
    )
    parser.set_defaults(func=console)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--port takes a number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"--port must be 0..65535, got {value}")
    return value


def console(args: argparse.Namespace) -> int:
    import importlib.util

    from harness.errors import UsageError

    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(
            f"the console needs {' and '.join(missing)}: pip install 'embodied-harness[console]'"
        )
    from harness.assembly.build import build_redactor
    from harness.cli import EXIT_OK
    from harness.cli.render import TimelineRenderer, timeline_console
    from harness.console import attach
    from harness.console.access import TOKEN_ENV, check_binding
    from harness.console.server import ConsoleChannel
    from harness.runtime.harness import Harness

    token = os.environ.get(TOKEN_ENV) or None
    check_binding(args.host, token)
    if args.eval_folder and not os.path.isdir(args.eval_folder):
        raise UsageError(f"--eval {args.eval_folder}: no such folder")
    config = config_from_args(args)
    terminal = timeline_console()
    redactor = build_redactor(config)
    render = TimelineRenderer(terminal, redactor=redactor)
    with (
        Harness.from_config(config, redactor=redactor) as harness,
        attach(
            harness,
            host=args.host,
            port=args.port,
            token=token,
            viewers=args.viewers,
            eval_folder=args.eval_folder,
        ) as ui,
    ):
        assert isinstance(harness.user_channel, ConsoleChannel)
        print(f"operator console: {ui.url}", flush=True)
        terminal.print(
            "[dim]open the link once (it is spent then; a new one is printed); start tasks "
            "from the page; Ctrl-C cancels a task, or leaves[/dim]"
        )
        if getattr(harness.driver, "real_time_factor", None) == 0:
            terminal.print(
                "[dim]the simulator runs as fast as it can (a task may end in seconds): "
                "--set driver.real_time_factor=1 paces its motions in real time[/dim]"
            )
        interrupted = False
        while True:
            # No task runs here: a Ctrl-C anywhere in this block leaves (also one pressed
            # while the last task's end is still being said).
            try:
                if interrupted:
                    interrupted = False
                    ui.hub.note_stop("terminal (Ctrl-C)")
                    terminal.print("[yellow]task cancelled from the terminal[/yellow]")
                request = ui.next_task(WAIT_S)
                if not ui.access.unused_links():
                    print(f"link used; the next one-time link: {ui.url}", flush=True)
            except KeyboardInterrupt:
                terminal.print("\n[dim]console closed[/dim]")
                return EXIT_OK
            if request is None:
                continue
            _, interrupted = follow_stream(
                lambda cancelled, request=request: harness.run_stream(
                    request.instruction,
                    max_turns=request.max_turns,
                    should_cancel=lambda: cancelled() or ui.stop_requested(),
                    poll_replan=ui.next_revision,
                ),
                render,
            )
