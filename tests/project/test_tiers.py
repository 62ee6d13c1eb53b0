"""The fast tier's exclusions still name tests, and the fast tier keeps what it promises."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.tiers import SLOW_FILES, SLOW_MARKERS, SLOW_TESTS

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
    assert set(SLOW_FILES.values()) <= set(SLOW_MARKERS)


def _module_marks(path: Path) -> set[str]:
    """The markers a test file's module-level ``pytestmark`` applies (``pytest.mark.X``)."""
    marks: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            marks |= set(re.findall(r"pytest\.mark\.(\w+)", ast.unparse(node.value)))
    return marks


def test_a_file_that_is_slow_as_a_whole_is_not_imported_by_the_fast_tier() -> None:
    """A file whose ``pytestmark`` keeps every test out of the fast tier is in SLOW_FILES,
    so the fast tier does not import it (and what it imports) for nothing."""
    unlisted = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        if _module_marks(path) & set(SLOW_MARKERS) and path.stem not in SLOW_FILES
    ]
    assert unlisted == []
    assert _module_marks(ROOT / "tests/worlds/test_libero.py") >= {"long", "libero"}


def test_the_fast_profile_scales_every_stated_count_and_the_full_one_keeps_it() -> None:
    from hypothesis import settings

    from tests.tiers import FAST_MINIMUM, FAST_PROFILE, FULL_PROFILE, examples

    before = settings.default
    try:
        settings.load_profile(FULL_PROFILE)
        assert [examples(n) for n in (1, 6, 40, 300, 2000)] == [1, 6, 40, 300, 2000]
        assert settings.default.max_examples == 100
        settings.load_profile(FAST_PROFILE)
        assert [examples(n) for n in (1, 6, 40, 300, 2000)] == [1, 6, FAST_MINIMUM, 30, 200]
        assert settings.default.max_examples == 10 and settings.default.deadline is None
    finally:
        settings.load_profile(FAST_PROFILE if before.max_examples == 10 else FULL_PROFILE)


def test_only_a_run_that_leaves_slow_out_is_the_fast_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.tiers import TIER_ENV, is_fast_tier, leaves_out_slow

    monkeypatch.delenv(TIER_ENV, raising=False)
    assert is_fast_tier("not slow") and is_fast_tier("not  slow and not hardware")
    assert not is_fast_tier("") and not is_fast_tier("slow") and not is_fast_tier("browser")
    assert leaves_out_slow("not slow") and not leaves_out_slow("")
    monkeypatch.setenv(TIER_ENV, "full")
    assert not is_fast_tier("not slow")
    monkeypatch.setenv(TIER_ENV, "fast")
    assert is_fast_tier("")


def test_every_property_count_is_stated_through_examples() -> None:
    """A count written as a bare number would run in full in the fast tier too."""
    bare = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"max_examples=\d", line):
                bare.append(f"{path.relative_to(ROOT)}:{number}")
    assert bare == []


def test_this_run_loaded_the_profile_its_tier_asks_for(pytestconfig: pytest.Config) -> None:
    """The wiring in tests/conftest.py: ``-m "not slow"`` runs with the fast profile, any
    other run with the full one (unless ``--hypothesis-profile`` chose)."""
    from hypothesis import settings

    from tests.tiers import FAST_EXAMPLES, FULL_EXAMPLES, is_fast_tier

    if pytestconfig.getoption("hypothesis_profile", None):
        pytest.skip("an explicit --hypothesis-profile chose the profile")
    fast = is_fast_tier(pytestconfig.getoption("markexpr", "") or "")
    assert settings.default.max_examples == (FAST_EXAMPLES if fast else FULL_EXAMPLES)
