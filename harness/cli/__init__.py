"""The ``harness`` command line. Each subcommand lives in its own module and registers
itself through ``COMMANDS``; nothing imports this package. Only the module of the command
run is imported (``harness --help`` lists the others from ``COMMANDS``).

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
# and a Ctrl-C during the imports below (the command's module, and what it imports when it
# runs: pydantic, the config, a world) must end as "interrupted", not as a traceback.

__all__ = [
    "COMMANDS",
    "EXIT_CONFIG",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_COMPLETED",
    "EXIT_OK",
    "EXIT_ROBOT_NOT_STOPPED",
    "EXIT_STORE_DAMAGED",
    "build_parser",
    "command_help",
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

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("harness.cli.run", "run one task and stream its events"),
    "chat": ("harness.cli.chat", "interactive session: one task per line"),
    "console": (
        "harness.cli.console",
        "operator console in a browser: start, watch, steer and stop tasks",
    ),
    "check": ("harness.cli.check", "validate a config and the parts it names"),
    "runs": ("harness.cli.runs", "list recorded sessions and tasks"),
    "show": ("harness.cli.show", "the timeline of a recorded task"),
    "context": ("harness.cli.context", "per-item context state at a turn"),
    "export": (
        "harness.cli.export",
        "export a recorded task as JSON lines, MCAP (Foxglove), RRD (Rerun) or a ROS 2 bag; "
        "tasks or an eval's episodes as a LeRobot dataset",
    ),
    "report": ("harness.cli.report", "write a self-contained HTML report of a task"),
    "resume": ("harness.cli.resume", "continue a session's task after a crash"),
    "demo": ("harness.cli.demo", "run a task on a simulated world with the offline planner"),
    "eval": ("harness.cli.eval", "run a suite of seeded episodes and report success rates"),
    "eval-report": (
        "harness.cli.eval_report",
        "write the HTML page of an eval (table, chart, episode reports)",
    ),
    "worlds": (
        "harness.cli.worlds",
        "list the installed worlds and robot drivers, their suites and extras",
    ),
}
"""Each subcommand: the module whose ``register(subparsers)`` adds it, and its one-line
help (what ``harness --help`` lists; the module passes it as ``help=command_help(NAME)``).

Only the module of the command being run is imported: ``harness --help`` lists the others
from this table, so a command pays for its own imports (the run store reader for ``runs``,
the simulator for ``demo``), never for all of them."""


def command_help(name: str) -> str:
    """The one-line help of subcommand ``name`` (from :data:`COMMANDS`)."""
    return COMMANDS[name][1]


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (``harness run: error: ...``) and exit code 2; the full
    usage is one ``--help`` away."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CONFIG, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked for (reading the
    package metadata costs more than the rest of ``harness --help``)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        help = "show program's version number and exit"  # argparse's own wording
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            ours = version("embodied-harness")
        except PackageNotFoundError:  # running from a source tree that was never installed
            ours = "unknown (not installed)"
        print(f"harness {ours}")
        parser.exit()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``harness`` parser. Given the command line about to be parsed, only the command
    it names is registered in full (its module imported); the others are listed by name
    and help alone, which is all ``harness --help`` or a misspelled command shows of them.
    Without ``argv``, every command in full."""
    parser = _Parser(
        prog="harness",
        description="Let a language model drive a robot or simulator, safely, one tool call "
        "at a time.",
    )
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else _command_named(argv)
    for name, (module_name, summary) in COMMANDS.items():
        if argv is None or name == chosen:
            importlib.import_module(module_name).register(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` runs: its first word that is not an option (the top-level
    options, ``--help`` and ``--version``, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


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

    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
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
