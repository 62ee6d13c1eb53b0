"""``harness check``: validate a config and everything it names, without running a task.

It loads the config (errors name the key), builds the Harness exactly as ``harness run``
would (driver, profile, skills, memory, store, MCP servers), then runs the named checks of
:mod:`harness.assembly.checks`, where other parts add their own. Exit code 0 when nothing failed,
2 when the configuration or a part is unusable.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.cli import command_help
from harness.cli.common import (
    add_config_arguments,
    add_world_argument,
    config_file,
    config_from_args,
)
from harness.cli.render import wide_console

_STYLE = {"ok": "green", "warn": "yellow", "fail": "red"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help=command_help("check"),
        description="Build everything a config (or a world's deployment) names, exactly as "
        "harness run would, and run the checks, without starting a task or moving the "
        "robot; exit 2 when something failed.",
    )
    add_config_arguments(parser)
    add_world_argument(
        parser, help="check this world's deployment when no --config is given (harness worlds)"
    )
    parser.set_defaults(func=check)


def check(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    with tempfile.TemporaryDirectory(prefix="harness-check-") as scratch:
        return _check(args, config, Path(scratch))


def _check(args: argparse.Namespace, config: Any, scratch: Path) -> int:
    from harness.assembly.checks import CheckResult, run_checks
    from harness.cli import EXIT_CONFIG, EXIT_OK
    from harness.config import with_overrides
    from harness.mcp.server import MCPServerError
    from harness.runtime.harness import Harness
    from harness.store import MemoryRunStore

    console = wide_console()
    world = getattr(args, "world", None)
    source = f"(the {world} world's deployment)" if world else "(built-in defaults)"
    _print(console, CheckResult.ok("config", config_file(args) or source))
    # A check leaves nothing behind: a memory folder that is not there yet is checked to be
    # creatable (the memory check reads the configured path), and the Harness is built
    # with a scratch one instead.
    memory = config.memory
    built = config
    if memory.enabled and not config.resolve_path(memory.path).exists():
        built = with_overrides(config, [f"memory.path={scratch / 'memory'}"])
    try:
        # A check records no session: the store folder is checked on its own.
        harness = Harness.from_config(built, store=MemoryRunStore())
        harness.config.memory.path = memory.path
    except MCPServerError as exc:
        for result in _server_start_results(exc):
            _print(console, result)
        return EXIT_CONFIG
    except Exception as exc:
        _print(console, CheckResult.fail("build", f"{type(exc).__name__}: {exc}"))
        return EXIT_CONFIG
    failed = 0
    warned = 0
    with harness:
        for result in run_checks(harness):
            _print(console, result)
            failed += result.status == "fail"
            warned += result.status == "warn"
    summary = f"{failed} failed, {warned} warnings"
    console.print(f"[{'red' if failed else 'green'}]{summary}[/]")
    return EXIT_CONFIG if failed else EXIT_OK


def _server_start_results(exc: Any) -> list[Any]:
    """One line per configured MCP server when their start failed: which started (and
    were closed again, since the Harness could not be built) and why each other failed."""
    from harness.assembly.checks import CheckResult

    if not exc.failures:
        return [CheckResult.fail("mcp servers", str(exc))]
    results = [
        CheckResult.ok(f"mcp server {name}", f"started ({tools} tools); closed again")
        for name, tools in exc.started.items()
    ]
    results += [CheckResult.fail(f"mcp server {name}", why) for name, why in exc.failures.items()]
    results.append(
        CheckResult.fail(
            "build",
            f"{len(exc.failures)} of {len(exc.failures) + len(exc.started)} "
            "mcp servers failed to start; nothing else was checked",
        )
    )
    return results


def _print(console: Console, result: Any) -> None:
    style = _STYLE[result.status]
    console.print(
        f"[{style}]{result.status:<4}[/{style}] [bold]{escape(result.subject):<14}[/bold] "
        f"{escape(result.detail)}"
    )
