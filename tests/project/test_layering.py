"""The package's dependencies point one way, and there are no import cycles.

Every import statement is read from the source, module level and inside functions alike,
so a cycle cannot hide behind a function-level import. Imports under ``if TYPE_CHECKING:``
never run, so they cannot form a cycle, but they still must point down the layers:

    core  <-  providers, mcp, planner  <-  context, world, store  <-  assembly, export
          <-  runtime  <-  cli, fleet, console   (fleet: ``harness eval``; only the CLI and the
          console import it; console: the operator console, beside the CLI)

``embodiment``, ``scene``, ``skills`` and ``memory`` are libraries the harness uses; they
never import ``harness``. ``worlds`` sits between them and the harness: each world folder
(``worlds/<name>/``) uses the libraries and never the harness, and the harness reaches the
worlds only through the world-neutral modules, the contract and the registry (so a world
from another package is one the harness can use). No library imports a world, and no
world imports another.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "embodiment", "worlds", "scene", "skills", "memory")
INDEPENDENT = ("embodiment", "worlds", "scene", "skills", "memory")
LIBRARIES = ("embodiment", "scene", "skills", "memory")
WORLD_NEUTRAL = {"worlds", "worlds.contract", "worlds.registry"}
"""The modules of ``worlds`` that name no world's code: the harness may import these."""

CORE = {
    "harness.cancel",
    "harness.config",
    "harness.errors",
    "harness.events",
    "harness.images",
    "harness.image_metadata",
    "harness.messages",
    "harness.prompts",
    "harness.protocols",
    "harness.redact",
    "harness.tokens",
    "harness.tools",
}
LAYERS: dict[str, int] = {
    "tools": 0,
    "providers": 1,
    "mcp": 1,
    "planner": 1,
    "context": 2,
    "world": 2,
    "store": 2,
    "assembly": 3,
    "export": 3,
    "runtime": 4,
    "cli": 5,
    "fleet": 5,
    "console": 5,
}
"""Subpackages of ``harness`` by layer; the core modules (and ``harness.tools``, a core
module split by concern) are layer 0."""
PUBLIC_API = 6
"""``harness/__init__``: the public names, loaded lazily from every layer; nothing in the
package imports it."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found[_module_name(path)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[ast.AST]:
    """Import statements inside ``if TYPE_CHECKING:`` blocks."""
    found: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                found.update(ast.walk(child))
    return found


def _imports(path: Path, name: str, known: dict[str, Path], *, type_checking: bool) -> set[str]:
    """Project modules ``path`` imports (``from a import b`` counts ``a.b`` if a module);
    with ``type_checking=False``, only the imports that run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set() if type_checking else _type_checking_nodes(tree)
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {target for target in targets if target in known and target != name}


def _graph(*, type_checking: bool) -> nx.DiGraph:
    known = _modules()
    graph = nx.DiGraph()
    for name, path in known.items():
        graph.add_node(name)
        for target in _imports(path, name, known, type_checking=type_checking):
            graph.add_edge(name, target)
    return graph


def _layer(module: str) -> int:
    if module == "harness":
        return PUBLIC_API
    if module in CORE or module.rsplit(".", 1)[0] in CORE:
        return 0  # a core module, or a module of a core package (harness.events.task)
    parts = module.split(".")
    if parts[0] != "harness" or len(parts) < 2:
        raise AssertionError(f"{module} is not a harness module")
    if parts[1] not in LAYERS:
        raise AssertionError(
            f"{module} is neither a core module nor in a known subpackage; add it to "
            "CORE or LAYERS in this test (and to docs/architecture.md)"
        )
    return LAYERS[parts[1]]


@functools.cache
def import_graph() -> nx.DiGraph:
    """Every import, those under ``if TYPE_CHECKING:`` too (built on first use, so a worker
    that runs none of these tests never parses the tree)."""
    return _graph(type_checking=True)


@functools.cache
def runtime_graph() -> nx.DiGraph:
    """Only the imports that run."""
    return _graph(type_checking=False)


def test_there_are_no_import_cycles() -> None:
    tangles = [sorted(c) for c in nx.strongly_connected_components(runtime_graph()) if len(c) > 1]
    if tangles:
        cycle = [edge[0] for edge in nx.find_cycle(runtime_graph().subgraph(tangles[0]))]
        pytest.fail(
            f"{len(tangles)} group(s) of modules import each other, e.g. "
            + " -> ".join([*cycle, cycle[0]])
            + "; groups: "
            + "; ".join(", ".join(group) for group in tangles)
        )


@pytest.mark.parametrize("package", INDEPENDENT)
def test_libraries_never_import_the_harness(package: str) -> None:
    offending = sorted(
        f"{source} imports {target}"
        for source, target in import_graph().edges
        if source.split(".")[0] == package and target.split(".")[0] == "harness"
    )
    assert not offending, offending


@pytest.mark.parametrize("package", LIBRARIES)
def test_libraries_never_import_a_world(package: str) -> None:
    offending = sorted(
        f"{source} imports {target}"
        for source, target in import_graph().edges
        if source.split(".")[0] == package and target.split(".")[0] == "worlds"
    )
    assert not offending, offending


def test_the_harness_reaches_worlds_only_through_the_contract_and_the_registry() -> None:
    offending = sorted(
        f"{source} imports {target}"
        for source, target in import_graph().edges
        if source.split(".")[0] == "harness"
        and target.split(".")[0] == "worlds"
        and target not in WORLD_NEUTRAL
    )
    assert not offending, offending
    assert import_graph().has_edge("harness.fleet.driver_pool", "worlds.registry")


def _world_folder(module: str) -> str | None:
    parts = module.split(".")
    return (
        parts[1]
        if parts[0] == "worlds" and len(parts) > 1 and module not in WORLD_NEUTRAL
        else None
    )


def test_no_world_imports_another_and_the_contract_imports_no_world() -> None:
    offending = sorted(
        f"{source} imports {target}"
        for source, target in import_graph().edges
        if target.split(".")[0] == "worlds"
        and _world_folder(target) is not None
        and _world_folder(source) != _world_folder(target)
        and source.split(".")[0] == "worlds"
    )
    assert not offending, offending
    worlds = {_world_folder(m) for m in import_graph().nodes} - {None}
    assert {"tabletop", "mobile", "libero", "fake"} <= worlds


def test_every_harness_module_has_a_layer() -> None:
    for module in import_graph().nodes:
        if module.split(".")[0] == "harness":
            _layer(module)


def test_no_lower_layer_imports_a_higher_one() -> None:
    offending = sorted(
        f"{source} (layer {_layer(source)}) imports {target} (layer {_layer(target)})"
        for source, target in import_graph().edges
        if source.startswith("harness")
        and target.startswith("harness")
        and _layer(target) > _layer(source)
    )
    assert not offending, "\n".join(offending)


def test_only_the_cli_imports_the_fleet() -> None:
    """``harness.fleet`` (``harness eval``) sits beside the CLI: it may use the runtime and
    the assembly, and nothing but the CLI may depend on it."""
    offending = sorted(
        f"{source} imports {target}"
        for source, target in import_graph().edges
        if target.startswith("harness.fleet")
        and not source.startswith(("harness.fleet", "harness.cli", "harness.console"))
    )
    assert not offending, offending
    assert import_graph().has_edge("harness.fleet.episode", "harness.runtime.harness")
    assert not any(
        target.startswith("harness.cli")
        for source, target in import_graph().edges
        if source.startswith("harness.fleet")
    )


def test_nothing_inside_the_package_imports_its_public_facade() -> None:
    offending = sorted(source for source, target in import_graph().edges if target == "harness")
    assert not offending, offending


def test_the_graph_is_not_empty() -> None:
    """Guards the test itself: a broken walk would find no cycles and no violations."""
    assert import_graph().number_of_nodes() > 100
    assert import_graph().has_edge("worlds.libero.driver", "worlds.libero.env")
    assert import_graph().has_edge("harness.runtime.loop", "harness.runtime.phases.decide")
    assert import_graph().has_edge("harness.store.writer", "harness.store.schema")
    assert runtime_graph().number_of_edges() < import_graph().number_of_edges()


PROJECT = (*PACKAGES, "benchmarks", "tests", "examples")
"""Every folder of the project's own Python: the import-hygiene checks below read them all."""


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _project_modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PROJECT:
        for path in (ROOT / package).rglob("*.py"):
            found[_module_name(path)] = path
    return found


def private_imports_in(name: str, source: str | ast.Module, known: dict[str, Path]) -> list[str]:
    """``from module import _name`` statements in ``source`` (module ``name``) naming
    another project module's private name."""
    found = []
    for node in ast.walk(ast.parse(source) if isinstance(source, str) else source):
        if isinstance(node, ast.ImportFrom) and node.module and node.module in known:
            found += [
                f"{name} imports {node.module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return found


def _private_imports(package: str) -> list[str]:
    known = _project_modules()
    found = []
    for name, path in known.items():
        if name.split(".")[0] == package:
            found += private_imports_in(name, _tree(path), known)
    return found


def test_world_code_imports_no_private_name_of_another_module() -> None:
    assert _private_imports("worlds") == []


@pytest.mark.parametrize("package", PROJECT)
def test_no_module_imports_another_modules_private_name(package: str) -> None:
    """A name with a leading underscore is its module's own; another module that needs it
    needs it public (named without the underscore, in ``__all__``)."""
    assert _private_imports(package) == []


def test_the_private_import_check_sees_private_imports() -> None:
    """Guards the check: it finds a private import, and only the private one."""
    known = _project_modules()
    source = (
        "from harness.planner.history import find_arguments, _hidden\n"
        "from harness.errors import __all__\n"
    )
    assert private_imports_in("harness.x", source, known) == [
        "harness.x imports harness.planner.history._hidden"
    ]


MAX_PROJECT_BASES = 2


def project_bases(known: dict[str, Path]) -> dict[str, list[str]]:
    """``module.Class`` -> the names of its base classes that are project classes."""
    trees = {name: _tree(path) for name, path in known.items()}
    project_classes = {
        node.name
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }
    found: dict[str, list[str]] = {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
                found[f"{name}.{node.name}"] = [b for b in bases if b in project_classes]
    return found


def test_no_class_has_more_than_two_project_base_classes() -> None:
    """A class that grew too big is split into objects it owns and calls, not into mixins
    sharing its attributes (the safety envelope had eleven)."""
    bases = project_bases({n: p for n, p in _modules().items()})
    crowded = {cls: b for cls, b in bases.items() if len(b) > MAX_PROJECT_BASES}
    assert crowded == {}
    assert bases["embodiment.envelope.core.SafetyEnvelope"] == []
    assert bases["harness.mcp.server.ServerConnection"] == ["ServerHealth"]  # the walk sees bases
