"""``harness report RUN``: one self-contained HTML file for a recorded task."""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import command_help
from harness.cli.common import (
    add_run_argument,
    add_store_arguments,
    open_run_log,
    output_path,
    resolve_run,
    store_folder,
    writing,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help=command_help("report"),
        description="Write one self-contained HTML file of a recorded task (RUN omitted: the "
        "last task in the store): camera frames, decisions, results, verdicts, compactions "
        "and the context's tokens per turn.",
    )
    add_run_argument(parser)
    add_store_arguments(parser)
    parser.add_argument(
        "--output", "-o", help="HTML file to write (default: <store>/reports/<task>.html)"
    )
    parser.set_defaults(func=report)


def report(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK
    from harness.store.task_page import save_report

    output = output_path(args.output, option="--output")
    with writing("--output", output or store_folder(args)), open_run_log(args) as log:
        path = save_report(log, resolve_run(log, args.run).id, output)
        # Said before a damaged store's lines: the report shows what was intact.
        print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return EXIT_OK
