"""``harness check``: validate a config and everything it names, without running a task."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from harness.cli.common import add_config_arguments, config_from_args


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("check", help="validate a config and the parts it names")
    add_config_arguments(parser)
    parser.set_defaults(func=check)


def check(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_CONFIG, EXIT_OK
    from harness.harness import Harness

    console = Console(highlight=False)
    config = config_from_args(args)
    console.print(f"[green]ok[/green]   config {args.config or '(defaults)'}")
    m = config.model
    where = f" at {m.base_url}" if m.base_url else ""
    console.print(f"[green]ok[/green]   model {m.provider}:{m.name}{where}")
    try:
        harness = Harness.from_config(config)
    except Exception as exc:
        console.print(f"[red]fail[/red] building the harness: {type(exc).__name__}: {exc}")
        return EXIT_CONFIG
    with harness:
        budget = harness.context.budget
        console.print(
            f"[green]ok[/green]   context window {budget.context_window} tokens, compaction at "
            f"{budget.threshold} (reserve {budget.reserve_tokens})"
        )
        tools = harness.tools.visible()
        physical = [t.name for t in tools if t.physical]
        console.print(f"[green]ok[/green]   {len(tools)} tools: {', '.join(t.name for t in tools)}")
        if physical:
            guarded = "safety envelope" if harness.safety else "[red]NO safety envelope[/red]"
            console.print(f"[green]ok[/green]   physical tools {', '.join(physical)} ({guarded})")
        failed = False
        for line in _extra_checks(harness):
            console.print(line)
            failed = failed or line.startswith("[red]fail")
    return EXIT_CONFIG if failed else EXIT_OK


def _extra_checks(harness: Any) -> list[str]:
    """Parts report themselves here (driver, profile, skills, MCP servers)."""
    lines = []
    if harness.driver is not None:
        lines.append(f"[green]ok[/green]   driver {type(harness.driver).__name__}")
    if harness.skills is not None:
        lines.append(f"[green]ok[/green]   skills: {', '.join(harness.skills.names())}")
    lines.extend(_mcp_checks(harness))
    return lines


def _mcp_checks(harness: Any) -> list[str]:
    """One line per MCP server, probed now (a tools/list round trip)."""
    lines = []
    for source in getattr(harness, "tool_sources", []):
        for status in source.check() if hasattr(source, "check") else []:
            where = f"pid {status.pid}" if status.pid else status.transport
            offered = [t for t in harness.tools if t.source == f"mcp:{status.name}"]
            physical = sum(1 for t in offered if t.physical)
            if status.ok:
                lines.append(
                    f"[green]ok[/green]   mcp server {status.name} ({where}, protocol "
                    f"{status.protocol_version}): {len(offered)} tools offered, {physical} physical"
                )
            else:
                lines.append(
                    f"[red]fail[/red] mcp server {status.name}: {status.state} "
                    f"({status.last_error})"
                )
        skipped = source.skipped_tools() if hasattr(source, "skipped_tools") else {}
        for name, reason in skipped.items():
            lines.append(f"[yellow]warn[/yellow] mcp tool {name} not offered: {reason}")
    return lines
