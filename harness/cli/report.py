"""``harness report RUN``: one self-contained HTML file for a recorded task."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.common import add_store_arguments, open_run_log


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("report", help="write a self-contained HTML report of a task")
    parser.add_argument("run", nargs="?", default="last", help="task id, session id or 'last'")
    add_store_arguments(parser)
    parser.add_argument(
        "--output", "-o", help="HTML file to write (default: <store>/reports/<task>.html)"
    )
    parser.set_defaults(func=report)


def report(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK
    from harness.report import render_report

    with open_run_log(args) as log:
        task = log.resolve(args.run)
        page = render_report(log, task.id)
        output = Path(args.output) if args.output else log.folder / "reports" / f"{task.id}.html"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page, encoding="utf-8")
    print(f"wrote {output} ({len(page) // 1024} KB) for task {task.id} ({task.status})")
    return EXIT_OK
