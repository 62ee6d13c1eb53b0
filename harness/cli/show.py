"""``harness show RUN``: the timeline of a recorded task, as it looked live.

The exit code is what ``harness run`` returned for the task (0 completed with its goal
confirmed, or with no task check configured; 1 otherwise). ``--follow`` keeps printing new
events of a task that is still running (from another terminal, while the robot works) until
its ``done`` event, or until its process is gone. ``--lanes`` expands the sub-agent lanes
that worked for its turns, indented where they ran; without it each lane is one line after
its ``delegate`` result (``harness show LANE`` shows a lane by its own id).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from rich.markup import escape

from harness.cli import command_help
from harness.cli.common import add_run_argument, add_store_arguments, open_run_log, resolve_run
from harness.cli.render import TimelineRenderer, timeline_console
from harness.events import task_succeeded

FOLLOW_POLL_S = 0.5


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "show",
        help=command_help("show"),
        description="Print a recorded task's timeline as it looked live (RUN omitted: the "
        "last task in the store); --follow keeps printing a running one.",
    )
    add_run_argument(parser)
    add_store_arguments(parser)
    parser.add_argument("--prompt", action="store_true", help="show token counts per turn")
    parser.add_argument("--follow", "-f", action="store_true", help="follow a running task")
    parser.add_argument(
        "--lanes", action="store_true", help="expand the sub-agent lanes where they ran"
    )
    parser.set_defaults(func=show)


def show(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_NOT_COMPLETED, EXIT_OK

    console = timeline_console()
    with open_run_log(args) as log:
        render = TimelineRenderer(console, show_prompt=args.prompt, redactor=log.redactor)
        task = resolve_run(log, args.run)
        console.print(
            f"[bold]{task.id}[/bold] in session {task.session_id}: [cyan]{escape(task.status)}"
            f"[/cyan]" + (f", resumed {task.resumes}x" if task.resumes else "")
        )
        last_pos = 0
        last_turn = 0
        finished = False
        ended = False
        while True:
            lanes = {lane.parent_call_id: lane for lane in log.lanes(task.id)}
            ids = [task.id, *(lane.id for lane in lanes.values())] if args.lanes else [task.id]
            for pos, event in log.events_with_pos(task_ids=ids, since_pos=last_pos):
                last_pos = pos
                render(event)
                if event.task_id != task.id:
                    continue
                last_turn = max(last_turn, event.turn)
                finished = finished or event.type == "done"
                lane = lanes.get(getattr(event, "call_id", None))
                if not args.lanes and lane is not None and event.type == "tool_result":
                    console.print(
                        f"[magenta]      sub-agent lane {lane.id}: {escape(lane.status)}, "
                        f"{lane.turns} turns (--lanes expands it)[/magenta]"
                    )
            if finished or not args.follow:
                break
            if ended:
                console.print(f"[magenta]task is {log.task(task.id).status}[/magenta]")
                break
            # Not running any more: one more read first, for the events it committed
            # between the read above and this check.
            ended = log.task(task.id).status not in ("running",)
            if not ended:
                time.sleep(FOLLOW_POLL_S)
        task = log.task(task.id)
        if task.status == "interrupted":
            console.print(
                f"[magenta]interrupted: its process died during turn {last_turn}; "
                f"`harness resume {task.session_id}` continues it[/magenta]"
            )
    succeeded = task_succeeded(task.status, task.outcome, task.evidence)
    return EXIT_OK if succeeded else EXIT_NOT_COMPLETED
