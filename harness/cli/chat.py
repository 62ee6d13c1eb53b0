"""``harness chat``: an interactive session, one task per line.

Tasks share the session's Accumulated context, so a follow-up ("now the blue one") sees
what came before. Commands: ``/reset`` clears Accumulated context, ``/context`` shows what
the model currently sees, ``/quit`` (or Ctrl-D) leaves. Ctrl-C while a task runs cancels
it (the robot is stopped) and returns to the prompt; a second Ctrl-C, or Ctrl-C at the
prompt, exits with code 130. ``query_user`` questions are asked right here.
"""

from __future__ import annotations

import argparse
import select
import sys
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.cli import command_help
from harness.cli.common import (
    add_config_arguments,
    config_from_args,
    require_tools_fit,
    stream_task,
)
from harness.cli.render import TimelineRenderer, wide_console

PROMPT = "harness> "
POLL_S = 0.1

HELP = (
    "type an instruction to run it as a task; /reset clears the conversation, /context "
    "shows the context, /quit leaves; Ctrl-C cancels a running task"
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chat",
        help=command_help("chat"),
        description="An interactive session: each line you type is a task; /reset, /context "
        "and /quit; Ctrl-C cancels the running task, a second one exits.",
    )
    add_config_arguments(parser)
    parser.set_defaults(func=chat)


class ConsoleUserChannel:
    """``query_user`` and ``notify_user`` at the terminal the chat runs in."""

    def __init__(self, console: Console, stdin: TextIO | None = None) -> None:
        self.console = console
        self.stdin = stdin or sys.stdin

    def ask(self, question: str, *, timeout_s: float, cancelled: Callable[[], bool]) -> str | None:
        self.console.print(f"[bold cyan]robot asks:[/bold cyan] {escape(question)}")
        self.console.print("[cyan]answer> [/cyan]", end="")
        line = _read_line(self.stdin, timeout_s=timeout_s, cancelled=cancelled)
        return None if line is None else line.strip()

    def notify(self, message: str, level: str) -> None:
        pass  # the timeline already shows the notification event


def _read_line(stream: TextIO, *, timeout_s: float, cancelled: Callable[[], bool]) -> str | None:
    """A line from ``stream``; None on timeout, cancellation or end of input.

    Terminals and pipes are polled so cancellation and the timeout are honoured; other
    streams (tests) are read directly.
    """
    try:
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):
        line = stream.readline()
        return line or None
    waited = 0.0
    while waited < timeout_s:
        if cancelled():
            return None
        ready, _, _ = select.select([fileno], [], [], POLL_S)
        if ready:
            line = stream.readline()
            return line or None
        waited += POLL_S
    return None


def chat(args: argparse.Namespace) -> int:
    from harness.assembly.build import build_redactor
    from harness.cli import EXIT_INTERRUPTED, EXIT_OK
    from harness.runtime.harness import Harness

    config = config_from_args(args)
    console = wide_console()
    redactor = build_redactor(config)
    render = TimelineRenderer(console, redactor=redactor)
    user_channel = ConsoleUserChannel(console)
    with Harness.from_config(config, user_channel=user_channel, redactor=redactor) as harness:
        require_tools_fit(harness)
        console.print(
            f"[bold]harness chat[/bold] session {harness.session_id}, model "
            f"{config.model.provider}:{config.model.name}\n[dim]{HELP}[/dim]"
        )
        while True:
            try:
                line = input(PROMPT)
            except EOFError:
                console.print()
                return EXIT_OK
            except KeyboardInterrupt:
                console.print("\n[dim]interrupted[/dim]")
                return EXIT_INTERRUPTED
            command = line.strip()
            if not command:
                continue
            if command in ("/quit", "/exit"):
                return EXIT_OK
            if command == "/reset":
                harness.reset_session()
                console.print("[dim]Accumulated context cleared; tools and skills stay[/dim]")
                continue
            if command == "/context":
                _print_context(console, harness)
                continue
            if command in ("/help", "/?"):
                console.print(f"[dim]{HELP}[/dim]")
                continue
            if command.startswith("/"):
                console.print(f"[red]unknown command {escape(command)}[/red]; {HELP}")
                continue
            _, interrupted = stream_task(harness, command, render)
            if interrupted:
                console.print("[yellow]task cancelled; Ctrl-C again exits[/yellow]")


def _print_context(console: Console, harness: Any) -> None:
    table = Table("item", "lifetime", "kind", "state", "tokens", "reason", expand=False)
    for row in harness.context_report():
        if row.get("in_context") is False:
            continue
        table.add_row(
            str(row["id"]),
            row["lifetime"],
            str(row.get("kind", "")),
            row["state"],
            str(row["tokens"]),
            escape(harness.session.redactor.text(row.get("reason", ""))),
        )
    console.print(table)
