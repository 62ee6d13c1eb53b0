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
from collections.abc import Iterator
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


STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")
"""The fields of a node that hold statements (``handlers`` and ``cases`` hold the except
clauses and match cases whose bodies do)."""


def statements(node: ast.AST, guarded: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every statement under ``node``, each with whether it sits in the body of an
    ``if TYPE_CHECKING:``.

    Imports and class definitions are statements, so this finds every one of them (at
    module level, in functions, classes, branches and handlers) without entering a single
    expression: a few times faster than ``ast.walk``, which visits every node."""
    checking = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
    for field in STATEMENT_LISTS:
        inside = guarded or (checking and field == "body")
        children = getattr(node, field, None)
        if not isinstance(children, list):
            continue
        for child in children:
            if isinstance(child, ast.stmt):
                yield child, inside
            yield from statements(child, inside)


@functools.cache
def _statements_of(path: Path) -> tuple[tuple[ast.stmt, bool], ...]:
    return tuple(statements(_tree(path)))


def _imports(path: Path, name: str, known: dict[str, Path], *, type_checking: bool) -> set[str]:
    """Project modules ``path`` imports (``from a import b`` counts ``a.b`` if a module);
    with ``type_checking=False``, only the imports that run."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node, guarded in _statements_of(path):
        if guarded and not type_checking:
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
    for node, _ in statements(ast.parse(source) if isinstance(source, str) else source):
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
    project_classes = {
        node.name
        for path in known.values()
        for node, _ in _statements_of(path)
        if isinstance(node, ast.ClassDef)
    }
    found: dict[str, list[str]] = {}
    for name, path in known.items():
        for node, _ in _statements_of(path):
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


INTERFACES = frozenset({"Protocol", "ABC"})
"""Direct bases that make a class an interface (so does ``metaclass=ABCMeta``)."""

DATA_ROOTS = frozenset(
    {
        "BaseModel",
        "RootModel",
        "BaseException",
        "Exception",
        "Warning",
        "Enum",
        "IntEnum",
        "StrEnum",
        "TypedDict",
        "NamedTuple",
    }
)
"""Ancestors that make a class a data type: a pydantic model, an exception (builtin
exception names end in ``Error``), an enum, a TypedDict or a NamedTuple."""

INHERITANCE_DEBT: dict[tuple[str, str], str] = {
    ("FakeRobot", "FakeMotion"): "the fake's motion is a mixin over the robot's state; "
    "tests and the safety fuzzer override its _travel",
    ("ObservingGraph", "GraphState"): "the scene graph is a chain of layers",
    ("TimelineReads", "StoreFile"): "the run-store reader is a chain of layers",
    ("MemoryRunStore", "RedactingStore"): "the in-memory store extends the redacting one",
    ("RecordingArm", "FakeRobot"): "the body fuzzer's arm extends the arm fuzzer's",
}
"""Inheritance edges (class, base) known to break the rule, and why: the check does not
follow them. The list may only shrink: an edge that no longer makes any class break the
rule fails the test, so a fix removes it."""


Table = dict[str, list[tuple[str, list[str], list[str]]]]
"""Class name -> every definition of it: (module, base names, metaclass expressions)."""


def _class_table() -> Table:
    table: Table = {}
    for module, path in sorted(_project_modules().items()):
        for node, _ in _statements_of(path):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).split("[")[0].rsplit(".", 1)[-1] for b in node.bases]
                meta = [ast.unparse(k.value) for k in node.keywords if k.arg == "metaclass"]
                table.setdefault(node.name, []).append((module, bases, meta))
    return table


def inherited_project_classes(
    table: Table, excused: frozenset[tuple[str, str]] = frozenset()
) -> dict[str, list[str]]:
    """``module.Class`` -> the project classes among its ancestors, interfaces and data
    types not counted, for every project class that is neither itself (the ``excused``
    (class, base) edges are not followed). Classes are matched by name: a base named
    like several project classes stands for all of them (the check errs strict)."""

    def bases_of(name: str) -> list[str]:
        return [b for _, bases, _ in table.get(name, []) for b in bases]

    @functools.cache
    def is_data(name: str) -> bool:
        if name in DATA_ROOTS or (name.endswith("Error") and name not in table):
            return True
        return any(is_data(base) for base in bases_of(name))

    def is_interface(name: str) -> bool:
        defs = table.get(name, [])
        return any(INTERFACES & set(b) or any("ABCMeta" in m for m in meta) for _, b, meta in defs)

    def counted(name: str) -> bool:
        return not (is_data(name) or is_interface(name))

    def ancestors(name: str, bases: list[str], seen: frozenset[str]) -> list[str]:
        found: list[str] = []
        for base in bases:
            if base in table and base not in seen and (name, base) not in excused:
                found += [base, *ancestors(base, bases_of(base), seen | {base})]
        return found

    result = {}
    for name, definitions in table.items():
        for module, bases, meta in definitions:
            interface = INTERFACES & set(bases) or any("ABCMeta" in m for m in meta)
            if is_data(name) or interface:
                continue
            chain = dict.fromkeys(ancestors(name, bases, frozenset({name})))
            result[f"{module}.{name}"] = [a for a in chain if counted(a)]
    return result


def test_no_project_class_inherits_from_more_than_one_project_class() -> None:
    """The rule: a project class has at most one project class among all its ancestors
    (bases, their bases, ...), interfaces and data types aside (:data:`INTERFACES`,
    :data:`DATA_ROOTS`).
    A class that needs more owns the other parts as objects and calls them: a mixin over
    an attribute contract, or a chain of layers, is one class split across files."""
    table = _class_table()
    inherited = inherited_project_classes(table, frozenset(INHERITANCE_DEBT))
    crowded = {cls: chain for cls, chain in inherited.items() if len(chain) > 1}
    assert crowded == {}
    for edge in INHERITANCE_DEBT:  # each excused edge is still needed
        others = frozenset(INHERITANCE_DEBT) - {edge}
        still = inherited_project_classes(table, others)
        assert any(len(chain) > 1 for chain in still.values()), f"{edge} no longer breaks it"
    assert inherited["harness.runtime.harness.Harness"] == []
    assert inherited["harness.runtime.session.Session"] == []
    assert inherited["harness.context.model.Context"] == []
    assert inherited["harness.mcp.server.ServerConnection"] == ["ServerHealth"]


def test_the_inheritance_rule_sees_chains_and_spares_interfaces() -> None:
    """Guards the check: a chain through a mixin counts, a Protocol or model does not."""
    table: Table = {
        "Part": [("m", [], [])],
        "Mixin": [("m", ["Part"], [])],
        "Big": [("m", ["Mixin"], [])],
        "Shape": [("m", ["Protocol"], [])],
        "Record": [("m", ["BaseModel"], [])],
        "Base": [("m", [], ["ABCMeta"])],
        "Fine": [("m", ["Shape", "Base", "Part"], [])],
        "Data": [("m", ["Record", "Part"], [])],
    }
    inherited = inherited_project_classes(table)
    assert inherited["m.Big"] == ["Mixin", "Part"]
    assert inherited_project_classes(table, frozenset({("Mixin", "Part")}))["m.Big"] == ["Mixin"]
    assert inherited["m.Fine"] == ["Part"]
    assert "m.Data" not in inherited and "m.Shape" not in inherited


MAX_MODULE_LINES = 500


LINE_LIMITED = (*PACKAGES, "benchmarks")
"""Where the limit holds: the packages, and the benchmarks with their helpers in
``benchmarks/lib/`` (what a user runs is read like the packages are)."""


def test_no_module_of_the_packages_or_benchmarks_is_longer_than_500_lines() -> None:
    """A module of the packages or of ``benchmarks/`` past about 500 lines holds more than
    one responsibility: it is split by responsibility (what it does), not by line count.
    (Test files, long lists of cases, are not counted.)"""
    long = {}
    for folder in LINE_LIMITED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_MODULE_LINES:
                long[str(path.relative_to(ROOT))] = lines
    assert long == {}
