"""The ``harness`` command line. Each subcommand lives in its own module and registers
itself through ``COMMANDS``; nothing imports this package.

Exit codes: 0 the task completed and its goal was confirmed (``outcome: achieved``), or it
completed with no task check configured (``unverified``; the output says so); 1 the task did
not complete, its goal was not achieved, or a configured check could not confirm it; 2 a
configuration or usage error (one line naming the key or the flag, never a traceback);
3 the robot may still be moving; 4 the run store is damaged (one line per damage, naming
the store, the task and what; what was intact was printed); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

# Only the standard library above: this module is what the `harness` script imports first,
# and a Ctrl-C during the imports below (pydantic, the config, the commands: most of the
# first second) must end as "interrupted", not as a traceback.

__all__ = [
    "COMMANDS",
    "EXIT_CONFIG",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_COMPLETED",
    "EXIT_OK",
    "EXIT_ROBOT_NOT_STOPPED",
    "EXIT_STORE_DAMAGED",
    "main",
]

EXIT_OK = 0
EXIT_NOT_COMPLETED = 1
EXIT_CONFIG = 2
EXIT_ROBOT_NOT_STOPPED = 3
"""The task ended but the robot may still be moving (``done.robot_stopped`` is false)."""
EXIT_STORE_DAMAGED = 4
"""The run store is damaged (a file SQLite cannot read, a row that does not parse, an
image whose bytes no longer match its checksum, an empty file): the command printed what
was intact and one line per damage."""
EXIT_INTERRUPTED = 130
DAMAGE_LINES_SHOWN = 20
"""Damage lines printed for a damaged store (``harness runs --check`` lists them all)."""

COMMANDS: tuple[str, ...] = (
    "harness.cli.run",
    "harness.cli.chat",
    "harness.cli.console",
    "harness.cli.check",
    "harness.cli.runs",
    "harness.cli.show",
    "harness.cli.context",
    "harness.cli.export",
    "harness.cli.report",
    "harness.cli.resume",
    "harness.cli.demo",
    "harness.cli.eval",
    "harness.cli.eval_report",
    "harness.cli.worlds",
)
"""Modules that each define ``register(subparsers)`` adding one subcommand."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (``harness run: error: ...``) and exit code 2; the full
    usage is one ``--help`` away."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CONFIG, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("embodied-harness")
    except PackageNotFoundError:  # running from a source tree that was never installed
        ours = "unknown (not installed)"
    parser = _Parser(
        prog="harness",
        description="Let a language model drive a robot or simulator, safely, one tool call "
        "at a time.",
    )
    parser.add_argument("--version", action="version", version=f"harness {ours}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``harness`` command: the exit code (see the module docstring)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before a command began (importing, parsing) or after it
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    import sqlite3

    from embodiment.errors import HardwareBusyError
    from harness.errors import ConfigError, RunStoreDamagedError, RunStoreError, UsageError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_CONFIG
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"harness {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except RunStoreDamagedError as exc:
        print_damage(exc.lines)
        return EXIT_STORE_DAMAGED
    except sqlite3.DatabaseError as exc:  # a damaged file met outside the reader's guard
        print(f"run store is damaged: SQLite says {' '.join(str(exc).split())!r}", file=sys.stderr)
        return EXIT_STORE_DAMAGED
    except RunStoreError as exc:
        print(f"run store: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except HardwareBusyError as exc:
        print(f"harness {args.command}: {exc}", file=sys.stderr)
        return EXIT_NOT_COMPLETED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def print_damage(lines: Sequence[str]) -> None:
    """A damaged store's lines on stderr, at most :data:`DAMAGE_LINES_SHOWN` of them."""
    for line in lines[:DAMAGE_LINES_SHOWN]:
        print(line, file=sys.stderr)
    if len(lines) > DAMAGE_LINES_SHOWN:
        more = len(lines) - DAMAGE_LINES_SHOWN
        print(f"... and {more} more (harness runs --check lists them all)", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
