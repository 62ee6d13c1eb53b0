"""The fast tier's exclusions still name tests, and the fast tier keeps what it promises."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.tiers import SLOW_FILES, SLOW_TESTS

ROOT = Path(__file__).resolve().parents[2]


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_every_slow_test_names_a_test_that_exists_and_is_no_property_test() -> None:
    missing, properties = [], []
    for test in sorted(SLOW_TESTS):
        path, name = test.split("::")[0], test.split("::")[-1]
        functions = _functions(ROOT / path) if (ROOT / path).is_file() else {}
        if name not in functions:
            missing.append(test)
        elif any("given" in ast.unparse(d) for d in functions[name].decorator_list):
            properties.append(test)
    assert missing == [] and properties == []
    assert len(SLOW_TESTS) > 20


def test_every_slow_file_exists_and_says_what_it_starts() -> None:
    stems = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
    assert set(SLOW_FILES) <= stems
    assert set(SLOW_FILES.values()) <= {"browser", "ray", "servers"}
