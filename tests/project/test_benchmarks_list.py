"""``python -m benchmarks`` lists exactly the benchmarks a user runs, one line each."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from benchmarks.__main__ import BENCHMARKS, listing, main

ROOT = Path(__file__).resolve().parents[2]


def _runnable() -> set[str]:
    """Modules of benchmarks/ with a ``__main__`` guard (helpers in benchmarks/lib/ have none)."""
    found = set()
    for path in (ROOT / "benchmarks").glob("*.py"):
        if path.name.startswith("__"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body):
            found.add(path.stem)
    return found


def test_every_runnable_benchmark_is_listed_and_nothing_else() -> None:
    assert set(BENCHMARKS) == _runnable()
    helpers = list((ROOT / "benchmarks" / "lib").glob("*.py"))
    assert len(helpers) > 10
    assert all('"__main__"' not in p.read_text(encoding="utf-8") for p in helpers)


def test_the_listing_names_each_with_one_line(capsys: object) -> None:
    text = listing()
    for name, what in BENCHMARKS.items():
        assert f"{name}  " in text and what in text
        assert "\n" not in what and len(what) <= 90
    assert main([]) == 0


def test_an_unknown_name_is_a_one_line_error_with_exit_2() -> None:
    assert main(["no_such_benchmark"]) == 2


def test_python_dash_m_benchmarks_prints_the_list() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == listing()
