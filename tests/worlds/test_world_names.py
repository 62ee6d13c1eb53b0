"""Outside a world's own folder, nothing names it: only the registry table does.

The check reads every module of the packages (code, docstrings and comments alike, the way
``tests/project/test_layering.py`` reads imports) and looks for what identifies each built-in
world: its name as a string, its driver names, its module path and folder, the profiles
it ships, and the names of its classes that a caller would otherwise reach for. The one
module allowed to name them is :mod:`worlds.registry` (its ``BUILTIN_WORLDS`` table).
Docs, configs, examples, benchmarks and tests name worlds as a user would, and are not
read. A test of the test plants each identifier in a module and sees it found.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from worlds.registry import BUILTIN_WORLDS, load_world

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "embodiment", "worlds", "scene", "skills", "memory")
REGISTRY = ROOT / "worlds" / "registry.py"
CLASSES: dict[str, tuple[str, ...]] = {
    "tabletop": ("TabletopSim", "TabletopConfig", "TabletopDemo"),
    "mobile": ("MobileManipulatorSim",),
    "libero": (),
    "fake": ("FakeRobot",),
    "so101": ("So101Sim", "So101Demo", "So101Suites"),
}
"""Class names of each world that code outside it would otherwise import by name."""
CASE_INSENSITIVE = {"libero", "so101"}
"""Worlds whose name is no ordinary word: any mention of it, in any case, names the world
(``tabletop``, ``mobile`` and ``fake`` are also plain English, so for those only the
identifiers count)."""


_ATTRIBUTE = re.compile(r"getattr\([^,()]+,\s*[\"']\w+[\"']")


@functools.cache
def patterns(name: str) -> list[re.Pattern[str]]:
    """What identifies the built-in world ``name`` (see the module docstring)."""
    world = load_world(name)
    folder = BUILTIN_WORLDS[name].split(":")[0].split(".")[1]
    words = [rf"[\"']{re.escape(name)}[\"']", rf"\bworlds[./]{folder}\b"]
    for entry in world.drivers:  # a dotted name is unmistakable; a plain word only quoted
        driver = re.escape(entry.name)
        words.append(
            rf"(?<![\w.]){driver}(?![\w])" if "." in entry.name else rf"[\"']{driver}[\"']"
        )
    words += [rf"\b{re.escape(path.name)}\b" for path in world.profiles.values()]
    words += [rf"\b{cls}\b" for cls in CLASSES[name]]
    found = [re.compile(word) for word in words]
    if name in CASE_INSENSITIVE:
        found.append(re.compile(re.escape(name), re.IGNORECASE))
    return found


@functools.cache
def literals(name: str) -> tuple[str, ...]:
    """A text each identifier of :func:`patterns` contains (the world's name, its folder,
    driver names, profile files and classes): a file holding none of them, and (for a world
    of :data:`CASE_INSENSITIVE`) not the name in any case, names no identifier of it."""
    world = load_world(name)
    folder = BUILTIN_WORLDS[name].split(":")[0].split(".")[1]
    return (
        name,
        folder,
        *(entry.name for entry in world.drivers),
        *(path.name for path in world.profiles.values()),
        *CLASSES[name],
    )


def _may_name(text: str, name: str) -> bool:
    if any(literal in text for literal in literals(name)):
        return True
    return name in CASE_INSENSITIVE and name.lower() in text.lower()


def _folder_of(name: str) -> Path:
    return ROOT / "worlds" / BUILTIN_WORLDS[name].split(":")[0].split(".")[1]


def _modules() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def mentions(text: str, name: str) -> list[str]:
    """Each line of ``text`` that names the world ``name`` (``LINE: text``)."""
    if not _may_name(text, name) or not any(pattern.search(text) for pattern in patterns(name)):
        # No identifier matches within a single line, and blanking attribute names only
        # removes text: a file none of them matches as a whole has no line that names it
        # (and one holding none of their literal texts matches none of them).
        return []
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = _ATTRIBUTE.sub("getattr(...)", line)  # an attribute's name is not a world's
        if any(pattern.search(line) for pattern in patterns(name)):
            hits.append(f"{number}: {line.strip()}")
    return hits


@pytest.mark.parametrize("name", sorted(BUILTIN_WORLDS))
def test_no_module_outside_a_world_names_it(name: str) -> None:
    folder = _folder_of(name)
    offending = []
    for path in _modules():
        if path == REGISTRY or folder in path.parents:
            continue
        for hit in mentions(path.read_text(encoding="utf-8"), name):
            offending.append(f"{path.relative_to(ROOT)}:{hit}")
    assert not offending, f"{len(offending)} line(s) outside worlds/ name {name}:\n" + "\n".join(
        offending
    )


@pytest.mark.parametrize("name", sorted(BUILTIN_WORLDS))
def test_the_check_finds_each_identifier_it_looks_for(name: str) -> None:
    """Guards the test itself: every identifier of the world, planted in a line, is found,
    and the registry's own table names every world."""
    world = load_world(name)
    folder = _folder_of(name).name
    planted = [
        f'world = "{name}"',
        f"from worlds.{folder}.simulator import X",
        *(f'driver = {{"name": "{entry.name}"}}' for entry in world.drivers),
        *(f"embodiment: worlds/{folder}/{path.name}" for path in world.profiles.values()),
        *(f"robot = {cls}(profile)" for cls in CLASSES[name]),
    ]
    for line in planted:
        assert mentions(line, name), line
    assert mentions("a neutral line about a robot on a table", name) == []
    assert mentions(REGISTRY.read_text(encoding="utf-8"), name)
