"""What the ``harness`` command imports before it does anything: only what the command run
needs. Every start of the command (a user's, a test's subprocess, an eval worker's
``harness`` call) paid for the config schema, the events, the worlds and numpy, about half
a second of CPU, to print ``--help``.

Checked in a fresh interpreter (this process has imported everything already), step by
step, each step naming what it must not have loaded yet."""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import COMMANDS, build_parser
from tests.tiers import examples

ROOT = Path(__file__).resolve().parents[2]

HEAVY = (
    "numpy",
    "pydantic",
    "rich",
    "yaml",
    "harness.config",
    "harness.events",
    "harness.messages",
    "harness.store",
    "harness.mcp.manager",
    "embodiment.types",
    "embodiment.profile",
    "worlds.registry",
    "scene",
)

STEPS = f"""
import contextlib, io, json, sys
heavy = {HEAVY!r}
loaded = lambda: sorted(name for name in heavy if name in sys.modules)
seen = {{}}
from harness.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--help"])
seen["help"] = loaded()
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--version"])
seen["version"] = loaded()
from harness.cli import build_parser
build_parser(["runs", "--store", "nowhere"]).parse_args(["runs", "--store", "nowhere"])
seen["runs parsed"] = loaded()
import harness.store.reader
seen["store reader"] = loaded()
import worlds.registry
worlds.registry.world_names()
seen["world names"] = loaded()
import harness.assembly.build
seen["assembly"] = sorted(m for m in ("networkx", "harness.planner.policy") if m in sys.modules)
print(json.dumps(seen))
"""


def test_each_step_of_a_start_loads_only_what_it_needs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STEPS], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["help"] == [], seen  # the table of commands, argparse, nothing else
    assert seen["version"] == [], seen
    assert seen["runs parsed"] == ["rich"], seen  # its table printer, no store yet
    # Reading a store needs the events and the config's secret sources, never the writer,
    # the MCP manager, numpy or a world.
    reader = set(seen["store reader"])
    assert {"harness.events", "harness.store"} <= reader, seen
    assert not reader & {"numpy", "harness.mcp.manager", "embodiment.types", "scene"}, seen
    assert "worlds.registry" not in reader, seen
    # Listing the worlds' names imports no world (and so no numpy or profile model).
    assert not set(seen["world names"]) & {"numpy", "embodiment.types", "scene"}, seen
    # What builds a Harness loads neither the offline planner's policy nor networkx (a
    # scene graph imports it when one is built): `harness run` with a model and no robot.
    assert seen["assembly"] == [], seen


def _listed(parser: argparse.ArgumentParser) -> dict[str, str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: str(choice.help) for choice in action._choices_actions}


def test_every_command_is_listed_alike_whichever_command_is_run() -> None:
    """``harness --help`` lists the commands from the table without importing them; what
    it prints is what the commands' own modules register (the same names, order and help)
    and the same whichever command the parser was built for."""
    full = build_parser()
    assert _listed(full) == {name: summary for name, (_, summary) in COMMANDS.items()}
    for argv in (["--help"], ["runs"], ["demo", "--world", "fake"], ["--version"], []):
        lean = build_parser(argv)
        assert lean.format_help() == full.format_help(), argv
        assert _listed(lean) == _listed(full), argv


def _command(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def test_each_command_built_alone_has_the_help_it_has_among_all() -> None:
    """``harness NAME --help`` prints the same whether NAME's parser was built alone (as
    ``main`` builds it) or with every command (every option, default and description)."""
    full = build_parser()
    for name in COMMANDS:
        for argv in ([name], ["--version", name], [name, "--help"]):
            alone = _command(build_parser(argv), name)
            assert alone.format_help() == _command(full, name).format_help(), argv


def test_a_command_parses_the_same_built_alone_or_with_all() -> None:
    """The chosen command is registered in full: its arguments and defaults are those of
    the parser with every command."""
    for argv in (
        ["runs", "--store", "s"],
        ["show", "last", "--store", "s"],
        ["export", "task_1", "--format", "jsonl", "--store", "s"],
        ["demo", "--seed", "3"],
        ["worlds", "--json"],
        ["eval-report", "folder"],
    ):
        alone = vars(build_parser(argv).parse_args(argv))
        together = vars(build_parser().parse_args(argv))
        assert alone.keys() == together.keys(), argv
        for key, value in together.items():
            assert alone[key] == value or (callable(value) and alone[key] is value), (argv, key)


WORDS = [
    *COMMANDS,
    *["--help", "-h", "--version", "--json", "--store", "s", "last", "--world", "fake"],
    *["--seed", "3", "x", "-", "--", "--set", "a=1", "nosuch", "--config", "c.yaml", "-c"],
]


def _outcome(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[Any, ...]:
    """Exit code, what was printed, and the namespace (its function by name)."""
    out, err = io.StringIO(), io.StringIO()
    code, namespace = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            parsed = vars(parser.parse_args(argv))
        except SystemExit as exc:
            code = exc.code
        else:
            namespace = {k: getattr(v, "__qualname__", v) for k, v in parsed.items()}
    return code, out.getvalue(), err.getvalue(), namespace


@functools.cache
def _full_parser() -> argparse.ArgumentParser:
    return build_parser()  # parsing changes nothing in a parser: one serves every example


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=6))
def test_any_command_line_parses_as_with_every_command_registered(argv: list[str]) -> None:
    """Whatever the words (commands anywhere, options before and after, help, version,
    unknown commands): the parser ``main`` builds for them exits, prints and parses
    exactly as the parser with every command does."""
    assert _outcome(build_parser(argv), argv) == _outcome(_full_parser(), argv)
