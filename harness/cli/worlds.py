"""``harness worlds``: the worlds and robot drivers installed, and what each needs.

One row per world found (built in, or from an installed package's
``embodied_harness.worlds`` entry point): its drivers, its suites, whether it has a demo
task, where its scene and task check come from, and the extra it needs with whether that
is installed. Robot drivers from ``embodied_harness.drivers`` entry points follow. A
plugin that fails to load is listed with its error, never skipped. Exit code 0, or 1
when a plugin failed to load.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.markup import escape
from rich.table import Table

from harness.cli import command_help
from harness.cli.render import wide_console

__all__ = ["register", "rows"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "worlds",
        help=command_help("worlds"),
        description="List the worlds and robot drivers installed (built in or from "
        "packages' entry points), with their suites, demo, task check and the extra each "
        "needs.",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per world/driver")
    parser.set_defaults(func=list_worlds)


def rows() -> list[dict[str, Any]]:
    """Every world and plugin driver found, as plain data (``error`` set when it failed)."""
    from worlds.contract import World
    from worlds.registry import PluginError, driver_entry, find_drivers, find_worlds, load_found

    found: list[dict[str, Any]] = []
    for item in find_worlds():
        row: dict[str, Any] = {"kind": "world", "name": item.name, "origin": item.origin}
        try:
            world: World = load_found(item)
        except PluginError as exc:
            found.append({**row, "error": str(exc)})
            continue
        missing = world.missing()
        found.append(
            {
                **row,
                "summary": world.summary,
                "drivers": [entry.name for entry in world.drivers],
                "suites": list(world.suites.names()) if world.suites is not None else [],
                "demo": world.demo is not None,
                "scene": world.scene,
                "task_check": world.task_check,
                "install": world.install,
                "installed": not missing,
                "missing": missing,
                "error": None,
            }
        )
    for item in find_drivers():
        row = {"kind": "driver", "name": item.name, "origin": item.origin}
        try:
            entry = driver_entry(item.name)
        except PluginError as exc:
            found.append({**row, "error": str(exc)})
            continue
        found.append({**row, "reusable": bool(entry and entry.reusable), "error": None})
    return found


def list_worlds(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_NOT_COMPLETED, EXIT_OK

    found = rows()
    failed = any(row["error"] for row in found)
    if args.json:
        for row in found:
            print(json.dumps(row, sort_keys=True))
        return EXIT_NOT_COMPLETED if failed else EXIT_OK
    console = wide_console()
    table = Table(title="worlds", title_justify="left", header_style="bold")
    for column in ("world", "drivers", "suites", "demo", "scene / task check", "needs", "from"):
        table.add_column(column)
    for row in (r for r in found if r["kind"] == "world"):
        if row["error"]:
            table.add_row(row["name"], "", "", "", "", f"[red]{escape(row['error'])}[/red]", "")
            continue
        needs = row["install"] or "nothing more"
        if row["install"]:
            state = (
                "[green]installed[/green]"
                if row["installed"]
                else f"[red]missing: {escape(', '.join(row['missing']))}[/red]"
            )
            needs = f"{escape(needs)} ({state})"
        table.add_row(
            row["name"],
            escape(", ".join(row["drivers"])),
            escape(", ".join(row["suites"])) or "-",
            "yes" if row["demo"] else "-",
            f"{row['scene']} / {row['task_check']}",
            needs,
            escape(row["origin"]),
        )
    console.print(table)
    drivers = [r for r in found if r["kind"] == "driver"]
    if drivers:
        console.print("[bold]robot drivers from packages[/bold]")
        for row in drivers:
            text = f"[red]{escape(row['error'])}[/red]" if row["error"] else escape(row["origin"])
            console.print(f"  {escape(row['name'])}: {text}")
    console.print(
        "[dim]harness demo --world NAME runs a world's demo task; harness eval SUITE a suite; "
        "a config names a driver with driver.name[/dim]"
    )
    return EXIT_NOT_COMPLETED if failed else EXIT_OK
