"""``harness context RUN [--turn N]``: what the model saw at one turn, item by item.

Every Accumulated item in the request of that turn's model call, with its lifetime, state
(verbatim / truncated / pruned / summarized), token estimate and the reason it changed;
``--all`` adds the items that had already left the context (folded into a checkpoint or
pruned). The header gives the request's sections against the window and the threshold,
then the task's episodes (kind, state, dependencies, conclusion); an item recorded in an
episode shows its name beside its kind. ``--lane ID`` shows a sub-agent lane of the task
instead (its own Accumulated history over the parent's Resident blocks); ``--lane`` alone
lists the task's lanes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich import box
from rich.markup import escape
from rich.table import Table

from harness.cli import command_help
from harness.cli.common import (
    add_run_argument,
    add_store_arguments,
    open_run_log,
    resolve_run,
    wide_console,
)

STATE_STYLE = {"verbatim": "", "truncated": "yellow", "pruned": "magenta", "summarized": "cyan"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "context",
        help=command_help("context"),
        description="Every item the model saw at a turn of a recorded task (RUN omitted: the "
        "last task in the store): its lifetime, state, tokens and why it changed.",
    )
    add_run_argument(parser)
    add_store_arguments(parser)
    parser.add_argument("--turn", "-t", type=int, help="turn to show (default: the last)")
    parser.add_argument("--all", action="store_true", help="include items that left context")
    parser.add_argument("--json", action="store_true", help="one JSON object per item")
    parser.add_argument(
        "--lane",
        nargs="?",
        const="",
        metavar="ID",
        help="a sub-agent lane of the task (its id or a unique prefix; alone: list them)",
    )
    parser.set_defaults(func=context)


def context(args: argparse.Namespace) -> int:

    with open_run_log(args) as log:  # printed inside: a damaged row is named after
        task = resolve_run(log, args.run)
        if args.lane is not None:
            lanes = log.lanes(task.id)
            if not args.lane:
                return _list_lanes(task.id, lanes)
            task = _pick_lane(task.id, lanes, args.lane)
        view = log.context_at(task.id, args.turn)
        return _print_view(args, task, view)


def _print_view(args: argparse.Namespace, task: Any, view: Any) -> int:
    from harness.cli import EXIT_OK

    rows = [row for row in view.rows if args.all or row.in_context]
    if args.json:
        for row in rows:
            print(json.dumps(row.model_dump(mode="json")))
        return EXIT_OK
    console = wide_console()
    snap = view.snapshot
    assert snap is not None
    used = snap.total_tokens
    console.print(
        f"[bold]{task.id}[/bold] turn {view.turn}: {used} of {snap.budget_tokens} tokens "
        f"({100 * used / max(1, snap.budget_tokens):.1f}% of the window; compaction at "
        f"{snap.threshold_tokens}), {snap.items} items, {snap.images} images"
    )
    console.print(
        "sections: " + ", ".join(f"{name} {tokens}" for name, tokens in snap.sections.items())
    )
    if view.skills:
        console.print(f"loaded skills (Resident): {', '.join(view.skills)}")
    if view.episodes:
        console.print(f"episodes ({len(view.episodes)}):")
        for episode in view.episodes:
            console.print(f"  {escape(episode.describe())}", soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, expand=False)
    table.add_column("item", no_wrap=True, min_width=21)
    table.add_column("kind", no_wrap=True, min_width=11)
    table.add_column("turn", justify="right", min_width=4)
    table.add_column("state", no_wrap=True, min_width=10)
    table.add_column("tokens", justify="right", min_width=6)
    table.add_column("in ctx", no_wrap=True, min_width=6)
    table.add_column("reason / preview", no_wrap=True, overflow="ellipsis", min_width=16)
    for row in rows:
        style = STATE_STYLE.get(row.state, "")
        state = f"[{style}]{row.state}[/{style}]" if style else row.state
        table.add_row(
            row.id,
            escape(f"{row.kind} [{row.episode}]") if row.episode else row.kind,
            str(row.turn),
            state,
            str(row.tokens) if row.in_context else f"({row.original_tokens})",
            "yes" if row.in_context else "[dim]no[/dim]",
            escape(row.reason or row.preview),
        )
    console.print(table)
    hidden = sum(1 for row in view.rows if not row.in_context)
    if hidden and not args.all:
        console.print(f"[dim]{hidden} items had left the context (--all shows them)[/dim]")
    return EXIT_OK


def _list_lanes(task_id: str, lanes: list[Any]) -> int:
    from harness.cli import EXIT_OK

    console = wide_console()
    if not lanes:
        console.print(f"task {task_id} ran no sub-agent lanes")
        return EXIT_OK
    for lane in lanes:
        console.print(
            f"{lane.id}  turn {lane.parent_turn} ({lane.parent_call_id}): "
            f"{escape(lane.status)}, {lane.turns} turns: {escape(lane.instruction[:80])}"
        )
    return EXIT_OK


def _pick_lane(task_id: str, lanes: list[Any], wanted: str) -> Any:
    from harness.errors import UsageError

    chosen = [lane for lane in lanes if lane.id == wanted] or [
        lane for lane in lanes if lane.id.startswith(wanted)
    ]
    if len(chosen) == 1:
        return chosen[0]
    known = ", ".join(lane.id for lane in lanes) or "none"
    problem = "is ambiguous" if chosen else "is not a lane of this task"
    raise UsageError(f"--lane {wanted!r} {problem}; lanes of {task_id}: {known}")
