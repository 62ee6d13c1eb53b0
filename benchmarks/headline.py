"""The two headline benchmarks with their defaults; optionally their tables in the README.

    python -m benchmarks.headline                  # both, tables printed (context
                                                   # efficiency on four traces/summarizers)
    python -m benchmarks.headline --update-readme  # ... and "Latest results" rewritten

The README section records the date, the commit and this command, so re-measuring after a
change (for example when the compactor lands on main) is this one command.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import context_efficiency, turn_overhead

__all__ = ["main", "update_readme"]

README = Path(__file__).resolve().parent / "README.md"
CONTEXT_RUNS: tuple[tuple[str, ...], ...] = (
    (),
    ("--summary-addresses", "none"),
    ("--tasks", "4"),
    ("--tasks", "4", "--summary-addresses", "none"),
)
"""The context-efficiency runs recorded: the default trace and a session of four tasks,
each with the default summarizer and with one that writes no addresses."""
START, END = "<!-- results:start -->", "<!-- results:end -->"
_FILE_NOTES = re.compile(r"^(JSON|plot) (written|skipped).*$", re.MULTILINE)


def _captured(run: Callable[[Sequence[str]], int], argv: Sequence[str]) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = run(argv)
    text = buffer.getvalue()
    print(text, end="")
    if code != 0:
        raise SystemExit(code)
    return _FILE_NOTES.sub("", text).strip()


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=True,
            cwd=README.parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return out.stdout.strip()


def update_readme(sections: dict[str, str], *, readme: Path = README) -> None:
    """Replace the text between the results markers of ``readme``."""
    text = readme.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise ValueError(f"{readme} has no {START} ... {END} markers")
    cpus = os.cpu_count() or 0
    body = [
        START,
        "",
        f"Measured {datetime.date.today().isoformat()} on this machine ({cpus} cores, shared "
        f"with other work) at commit `{_commit()}`, with `python -m benchmarks.headline "
        "--update-readme`.",
    ]
    for title, section in sections.items():
        body += ["", f"### {title}", "", section]
    body += ["", END]
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(head + "\n".join(body) + tail, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.headline",
        description="Run both headline benchmarks with their defaults.",
    )
    parser.add_argument("--update-readme", action="store_true", help="record the tables")
    args = parser.parse_args(argv)
    sections = {
        f"Context efficiency (`python -m benchmarks.context_efficiency{' ' if options else ''}"
        f"{' '.join(options)}`)": _captured(context_efficiency.main, options)
        for options in CONTEXT_RUNS
    }
    sections["Turn overhead (`python -m benchmarks.turn_overhead`)"] = _captured(
        turn_overhead.main, []
    )
    if args.update_readme:
        update_readme(sections)
        print(f"\n{README} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
