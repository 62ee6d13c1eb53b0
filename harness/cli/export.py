"""``harness export RUN``: a task's record as JSON lines, an MCAP file or a Rerun recording.

``--format jsonl`` (default): ``--what events`` (default) writes the events exactly as
``harness run --json`` printed them (``harness.events.parse_event`` reads each line back);
``items`` writes the Accumulated items with their lifetime, state and tokens; ``archive``
the exact tool outputs by address.

``--format mcap -o run.mcap`` (Foxglove) and ``--format rrd -o run.rrd`` (Rerun) write the
task and its sub-agent lanes for the viewers: camera frames, the gripper's pose, the scene's
objects, the workspace and keep-out zones, every event in words, and the tool calls, safety
checks, context usage and episodes whole (see ``docs/export.md``; needs the ``viz`` extra).

Secrets are redacted again on the way out (the run log reads them redacted, with every
recorded session's patterns).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from harness.cli.common import UsageError, add_store_arguments, open_run_log


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export", help="export a recorded task as JSON lines, MCAP (Foxglove) or RRD (Rerun)"
    )
    parser.add_argument("run", nargs="?", default="last", help="task id, session id or 'last'")
    add_store_arguments(parser)
    parser.add_argument("--format", choices=["jsonl", "mcap", "rrd"], default="jsonl")
    parser.add_argument(
        "--what",
        choices=["events", "items", "archive"],
        default=None,
        help="what to write as JSON lines (--format jsonl only; default events)",
    )
    parser.add_argument(
        "--output",
        "-o",
        help="file to write (default: standard output; required for mcap and rrd)",
    )
    parser.set_defaults(func=export)


def export(args: argparse.Namespace) -> int:
    if args.format != "jsonl":
        return _export_viewer(args)
    from harness.cli import EXIT_OK
    from harness.cli.common import output_path, writing

    output_path(args.output, option="--output")
    what = args.what or "events"
    with open_run_log(args) as log:
        task = log.resolve(args.run)
        if what == "events":
            records = (json.loads(line) for line in log.raw_events(task_id=task.id))
        elif what == "items":
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
        print(f"wrote {what} of {task.id} to {args.output}", file=sys.stderr)
    return EXIT_OK


def _export_viewer(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK
    from harness.export.files import export_task, require_viz

    if args.what is not None:
        raise UsageError(f"--what works with --format jsonl, not --format {args.format}")
    if not args.output:
        raise UsageError(f"--format {args.format} writes a file: name it with -o run.{args.format}")
    require_viz(args.format)
    from harness.cli.common import output_path

    output_path(args.output, option="--output")
    with open_run_log(args) as log:
        task = log.resolve(args.run)
        count = export_task(log, task, format=args.format, output=args.output)
    viewer = "Foxglove" if args.format == "mcap" else "Rerun: rerun " + args.output
    print(f"wrote {count} messages of {task.id} to {args.output} ({viewer})", file=sys.stderr)
    return EXIT_OK
