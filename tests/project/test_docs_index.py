"""docs/architecture.md lists every module of the packages, as the tree has them."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def load_generator():
    spec = importlib.util.spec_from_file_location("module_index", ROOT / "docs" / "module_index.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_module_index_matches_the_tree() -> None:
    generator = load_generator()
    page = generator.PAGE.read_text(encoding="utf-8")
    assert page == generator.page_with_section(page), (
        "docs/architecture.md's module index is stale: run `python docs/module_index.py --write`"
    )


def test_every_module_of_the_packages_has_a_docstring() -> None:
    generator = load_generator()
    missing = [
        module.relative_to(ROOT).as_posix()
        for package in generator.packages()
        for module in package.glob("*.py")
        if module.name != "__main__.py" and not generator.summary(module)
    ]
    assert missing == [], f"modules without a docstring saying what they own: {missing}"
