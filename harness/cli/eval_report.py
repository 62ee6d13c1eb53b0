"""``harness eval-report DIR``: one HTML page for an eval, linking every episode's report."""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import command_help


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval-report",
        help=command_help("eval-report"),
        description="Write one HTML page of an eval folder (harness eval --out): the success "
        "table, the chart and a link to every episode's report.",
    )
    parser.add_argument("folder", metavar="DIR", help="the eval folder (harness eval --out)")
    parser.add_argument("--output", "-o", help="HTML file to write (default: DIR/report.html)")
    parser.add_argument(
        "--no-episode-reports",
        action="store_true",
        help="do not write each episode's run report into DIR/reports/",
    )
    parser.set_defaults(func=eval_report)


def eval_report(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK
    from harness.cli.common import output_path, writing
    from harness.fleet.eval_page import write_eval_report

    output = output_path(args.output, option="--output")
    with writing("--output", output or args.folder):
        path = write_eval_report(args.folder, output, episode_reports=not args.no_episode_reports)
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return EXIT_OK
