"""``harness export RUN --format jsonl``: a task's record as JSON lines.

``--what events`` (default) writes the events exactly as ``harness run --json`` printed
them (``harness.events.parse_event`` reads each line back); ``items`` writes the
Accumulated items with their lifetime, state and tokens; ``archive`` the exact tool outputs
by address. Secrets are redacted again on the way out (the run log reads them redacted,
with every recorded session's patterns).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from harness.cli.common import add_store_arguments, open_run_log


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("export", help="export a recorded task as JSON lines")
    parser.add_argument("run", nargs="?", default="last", help="task id, session id or 'last'")
    add_store_arguments(parser)
    parser.add_argument("--format", choices=["jsonl"], default="jsonl")
    parser.add_argument("--what", choices=["events", "items", "archive"], default="events")
    parser.add_argument("--output", "-o", help="file to write (default: standard output)")
    parser.set_defaults(func=export)


def export(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK
    from harness.cli.common import output_path, writing

    output_path(args.output, option="--output")
    with open_run_log(args) as log:
        task = log.resolve(args.run)
        if args.what == "events":
            records = (json.loads(line) for line in log.raw_events(task_id=task.id))
        elif args.what == "items":
            records = (
                {
                    "pos": stored.pos,
                    "lifetime": stored.lifetime,
                    "state": stored.state,
                    "reason": stored.reason,
                    "tokens": stored.tokens,
                    "item": stored.item.model_dump(mode="json"),
                }
                for stored in log.items(task.session_id, task_id=task.id)
            )
        else:
            records = iter(log.archive_entries(task.id))
        with contextlib.ExitStack() as stack:
            if args.output:
                stack.enter_context(writing("--output", args.output))
            out = (
                stack.enter_context(open(args.output, "w", encoding="utf-8"))
                if args.output
                else sys.stdout
            )
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if args.output:
        print(f"wrote {args.what} of {task.id} to {args.output}", file=sys.stderr)
    return EXIT_OK
