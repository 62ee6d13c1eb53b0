"""``harness runs``: sessions and their tasks in the run store, newest first.

``--check`` reads the whole store instead: SQLite's integrity check, every row read back
and validated, every image hashed against its stored SHA-256 (:mod:`harness.store.integrity`);
exit 0 when nothing is damaged, 4 with one line per damage otherwise."""

from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import groupby
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from harness.cli import command_help
from harness.cli.common import add_store_arguments, open_run_log, store_folder, wide_console

STATUS_STYLE = {
    "completed": "green",
    "running": "cyan",
    "interrupted": "bold magenta",
    "cancelled": "yellow",
}
OUTCOME_STYLE = {"achieved": "green", "not_achieved": "red", "unverified": "yellow"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "runs",
        help=command_help("runs"),
        description="List the run store's sessions and tasks, newest first: status, outcome, "
        "turns, tokens, cost and the task's time (from its start to its done event).",
    )
    add_store_arguments(parser)
    parser.add_argument("--session", help="only this session's tasks")
    parser.add_argument("--limit", "-n", type=int, default=20, help="tasks to list (default 20)")
    parser.add_argument("--json", action="store_true", help="one JSON object per task")
    parser.add_argument(
        "--check",
        action="store_true",
        help="check the whole store: SQLite's integrity check, every row and image read back "
        "(exit 4 and one line per damage)",
    )
    parser.set_defaults(func=runs)


def runs(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK

    if args.check:
        return check(args)

    with open_run_log(args) as log:
        tasks = log.tasks(session_id=args.session, limit=args.limit)
        if args.json:
            for task in tasks:
                print(json.dumps(task.model_dump(mode="json")))
            return EXIT_OK
        console = wide_console()
        if not tasks:
            console.print(f"no tasks recorded in {log.folder}")
            return EXIT_OK
        console.print(f"[bold]runs in {log.folder}[/bold] (newest first)")
        for session_id, group in groupby(tasks, key=lambda t: t.session_id):
            session_tasks = list(group)
            session = log.session(session_id)
            console.print(
                f"\nsession [bold]{session_id}[/bold]  {session.tasks} task(s), pid "
                f"{session.pid} on {session.host}"
            )
            console.print(_table(session_tasks))
        console.print(
            "[dim]time: each task's, from its start to its end (what the demo and the report "
            "give); tokens: the prompt's in, the model's out[/dim]"
        )
        interrupted = [t for t in tasks if t.status == "interrupted"]
        if interrupted:
            console.print(
                f"\n[magenta]{len(interrupted)} interrupted task(s): continue with "
                f"`harness resume {interrupted[0].session_id}`[/magenta]"
            )
    return EXIT_OK


def _table(tasks: list[Any]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    table.add_column("task", no_wrap=True, min_width=21)
    table.add_column("started", no_wrap=True, min_width=11)
    table.add_column("status", no_wrap=True, min_width=11)
    table.add_column("outcome", no_wrap=True, min_width=12)
    table.add_column("turns", justify="right", min_width=5)
    table.add_column("tokens in/out", justify="right", no_wrap=True, min_width=13)
    table.add_column("cost", justify="right", min_width=7)
    table.add_column("time", justify="right", min_width=6)  # the task's: start to end
    table.add_column("instruction", no_wrap=True, overflow="ellipsis", min_width=12)
    for task in tasks:
        style = STATUS_STYLE.get(task.status, "red")
        u = task.usage
        resumed = f" (resumed x{task.resumes})" if task.resumes else ""
        table.add_row(
            task.id,
            time.strftime("%m-%d %H:%M", time.localtime(task.started_at)),
            f"[{style}]{task.status}{resumed}[/{style}]",
            _outcome(task),
            str(task.turns),
            f"{u.prompt_tokens}/{u.output_tokens}",
            f"${u.cost_usd:.4f}" if u.cost_usd is not None else "-",
            f"{task.duration_s:.1f}s" if task.duration_s is not None else "-",
            escape(task.instruction),
        )
    return table


def _outcome(task: Any) -> str:
    """The goal's outcome; "-" while the task has not ended (nothing was checked yet)."""
    if task.recorded_status == "running":
        return "-"
    style = OUTCOME_STYLE.get(task.outcome, "yellow")
    checked = "" if task.evidence.check != "none" or task.outcome != "unverified" else " (no check)"
    return f"[{style}]{task.outcome}{checked}[/{style}]"


def check(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK, EXIT_STORE_DAMAGED
    from harness.store.integrity import check_store

    result = check_store(store_folder(args))
    counted = ", ".join(f"{count} {table}" for table, count in result.rows.items())
    print(
        f"checked {result.store}: SQLite integrity "
        f"{'ok' if not result.integrity else f'{len(result.integrity)} problem(s)'}; "
        f"read back {counted or 'nothing'}"
    )
    if result.ok:
        print("no damage found")
        return EXIT_OK
    lines = result.lines()
    for line in lines:
        print(f"  {line}")
    print(f"run store {result.store}: {len(lines)} damaged (listed above)", file=sys.stderr)
    return EXIT_STORE_DAMAGED
