"""A world and a robot driver from a separately installed package, found by entry point.

``tests/fixtures/plugin_world`` is a package of its own (``toy-world``): a world ``toy``
(its driver, profile, demo task and a suite) and a driver-only entry point. It is
installed here as pip would leave it, without a network: the package and a
``toy_world-0.1.0.dist-info`` (METADATA and entry_points.txt) on a temporary folder that
the subprocesses get on ``PYTHONPATH``. Then ``harness worlds``, ``eval toy_sort`` (and
its corrupted twin, with their worker processes) and ``console`` run through it in fresh
processes, as a user's would; ``demo --world toy`` (an episode) and ``check`` run in this
process with the folder first on ``sys.path`` (the same discovery by entry point; a
subprocess each cost most of a second of CPU to start, and the process is not what they
test).

Broken plugins (a module that does not exist, one that raises on import, an object that
is not a world, a world that calls itself by another name, a name a built-in world has)
are each reported with the entry point they came from, and never hide the others: listed
by ``harness worlds``, asked for by ``demo`` and ``check``, all in this process.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from worlds import registry
from worlds.contract import World, WorldError

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "plugin_world"
TOY_POINTS = {
    "embodied_harness.worlds": {"toy": "toy_world:WORLD"},
    "embodied_harness.drivers": {"toy.gripper": "toy_world.driver:ToyArm"},
}


def install(target: Path, points: dict[str, dict[str, str]], *, name: str = "toy-world") -> Path:
    """``toy_world`` and a dist-info declaring ``points`` in ``target`` (what ``pip
    install --target`` leaves)."""
    target.mkdir(parents=True, exist_ok=True)
    if not (target / "toy_world").exists():
        shutil.copytree(FIXTURE / "toy_world", target / "toy_world")
    info = target / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    lines = []
    for group, entries in points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{key} = {value}" for key, value in entries.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines))
    return target


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("site"), TOY_POINTS)


def harness(site: Path, cwd: Path, *argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def in_process(
    site: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    *argv: str, err: bool = True,
) -> tuple[int, str]:  # fmt: skip
    """``harness ARGV`` in this process with ``site`` first on ``sys.path`` (what the
    subprocesses get on ``PYTHONPATH``): its exit code and all it printed (with
    ``err=False``, its standard output alone). For commands whose process is not what is
    tested (a subprocess costs most of a second of CPU to start); a fresh ``toy_world`` is
    imported from ``site``."""
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    for module in [m for m in sys.modules if m.split(".")[0] == "toy_world"]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    printed = capsys.readouterr()
    return code, printed.out + printed.err if err else printed.out


# ====================================================================== a working plugin


def test_harness_worlds_lists_the_plugin_world_and_driver(site: Path, tmp_path: Path) -> None:
    done = harness(site, tmp_path, "worlds", "--json")
    assert done.returncode == 0, done.stderr
    rows = {(row["kind"], row["name"]): row for row in map(json.loads, done.stdout.splitlines())}
    toy = rows[("world", "toy")]
    assert toy["error"] is None and toy["suites"] == ["toy_sort"] and toy["demo"]
    assert toy["drivers"] == ["toy.arm"] and toy["installed"]
    assert (
        "entry point toy = toy_world:WORLD" in toy["origin"] and "toy-world 0.1.0" in toy["origin"]
    )
    assert rows[("driver", "toy.gripper")]["error"] is None
    assert {"tabletop", "mobile", "libero", "fake"} <= {
        name for kind, name in rows if kind == "world"
    }


def test_demo_runs_the_plugin_worlds_task(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = in_process(
        site, tmp_path, monkeypatch, capsys, "demo", "--world", "toy", "--seed", "2", "--json",
        err=False,
    )  # fmt: skip
    assert code == 0, out[-2000:]
    events = [json.loads(line) for line in out.splitlines()]
    last = events[-1]
    assert last["type"] == "done" and last["status"] == "completed"
    assert last["outcome"] == "achieved"
    calls = [
        e["tool_calls"][0]["name"]
        for e in events
        if e["type"] == "model_response" and e["tool_calls"]
    ]
    assert "pick" in calls and "place" in calls


def test_a_demo_flag_the_plugin_does_not_take_is_a_usage_error(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = in_process(
        site, tmp_path, monkeypatch, capsys, "demo", "--world", "toy", "--scene", "hidden_cube"
    )
    assert code == 2
    assert "--scene is a tabletop flag; --world toy takes --seed" in err
    assert len(err.strip().splitlines()) == 1


def test_eval_runs_the_plugin_worlds_suite_and_its_corrupted_twin(
    site: Path, tmp_path: Path
) -> None:
    done = harness(site, tmp_path, "eval", "toy_sort", "--episodes", "2", "--out", "ev")
    assert done.returncode == 0, done.stderr[-2000:]
    records = [
        json.loads(line) for line in (tmp_path / "ev" / "episodes.jsonl").read_text().splitlines()
    ]
    assert len(records) == 2 and all(r["success"] for r in records), records
    manifest = json.loads((tmp_path / "ev" / "manifest.json").read_text())
    assert manifest["suite_path"] == "toy:toy_sort"
    broken = harness(site, tmp_path, "eval", "toy_sort_corrupt", "--episodes", "2", "--out", "cv")
    assert broken.returncode == 0, broken.stderr[-2000:]
    refusals = [
        json.loads(line) for line in (tmp_path / "cv" / "episodes.jsonl").read_text().splitlines()
    ]
    assert len(refusals) == 2
    assert all(r["outcome"] != "achieved" for r in refusals)


def test_check_builds_the_plugin_world_and_the_plugin_driver(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = in_process(
        site, tmp_path, monkeypatch, capsys, "check", "--world", "toy",
        "--set", "memory.enabled=false", err=False,
    )  # fmt: skip
    assert code == 0, out
    assert "toy world's deployment" in out and "ToyArm" in out
    code, out = in_process(
        site, tmp_path, monkeypatch, capsys, "check", "--world", "toy",
        "--set", "driver.name=toy.gripper", "--set", "memory.enabled=false",
    )  # fmt: skip
    assert code == 0, out


def test_the_console_drives_the_plugin_world(site: Path, tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "console", "--world", "toy", "--port", "0",
         "--set", "memory.enabled=false"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("operator console: http://127.0.0.1:"), line + process.stderr.read()
    finally:
        process.terminate()
        process.wait(timeout=30)


# ====================================================================== broken plugins

BROKEN_POINTS = {
    "embodied_harness.worlds": {
        "missing": "no_such_module_anywhere:WORLD",
        "raises": "toy_world.broken:WORLD",
        "notaworld": "toy_world.driver:TABLE_Z",
        "misnamed": "toy_world:WORLD",
        "tabletop": "toy_world:WORLD",
    },
    "embodied_harness.drivers": {"bad.driver": "no_such_module_anywhere:Driver"},
}


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = install(tmp_path_factory.mktemp("broken"), TOY_POINTS)
    (target / "toy_world" / "broken.py").write_text('raise RuntimeError("the plugin is broken")\n')
    return install(target, BROKEN_POINTS, name="broken-plugins")


def test_harness_worlds_lists_every_broken_plugin_with_its_entry_point(
    broken_site: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = in_process(
        broken_site, tmp_path, monkeypatch, capsys, "worlds", "--json", err=False
    )
    assert code == 1
    rows = [json.loads(line) for line in out.splitlines()]
    errors = {row["name"]: row["error"] for row in rows if row["error"]}
    assert (
        "no_such_module_anywhere" in errors["missing"]
        and "ModuleNotFoundError" in errors["missing"]
    )
    assert "the plugin is broken" in errors["raises"]
    assert "not a worlds.World" in errors["notaworld"]
    assert "is the world 'toy', not 'misnamed'" in errors["misnamed"]
    assert "is a built-in world's name" in errors["tabletop"]
    assert "no_such_module_anywhere" in errors["bad.driver"]
    for name, error in errors.items():
        assert "entry point" in error and "broken-plugins 0.1.0" in error, (name, error)
    working = {(row["name"], row["origin"]) for row in rows if not row["error"]}
    assert {"toy", "tabletop", "mobile", "libero", "fake"} <= {name for name, _ in working}
    assert ("tabletop", "built in") in working  # a plugin cannot take a built-in's place


@pytest.mark.parametrize("name", ["missing", "raises", "notaworld", "misnamed"])
def test_asking_for_a_broken_world_is_a_usage_error_naming_its_entry_point(
    broken_site: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    code, err = in_process(broken_site, tmp_path, monkeypatch, capsys, "demo", "--world", name)
    assert code == 2, err
    assert f"entry point {name} = " in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_broken_driver_plugin_is_a_config_error_naming_its_entry_point(
    broken_site: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = in_process(
        broken_site, tmp_path, monkeypatch, capsys, "check", "--world", "toy",
        "--set", "driver.name=bad.driver", "--set", "memory.enabled=false",
    )  # fmt: skip
    assert code == 2
    assert "entry point bad.driver = no_such_module_anywhere:Driver" in out
    code, out = in_process(
        broken_site, tmp_path, monkeypatch, capsys, "check", "--world", "toy",
        "--set", "driver.name=nothing.here", "--set", "memory.enabled=false",
    )  # fmt: skip
    assert code == 2 and "toy.arm" in out and "plugins that failed to load" in out


# ====================================================================== in-process


def test_the_registry_finds_an_entry_point_world_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = install(tmp_path / "site", TOY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    for module in [m for m in sys.modules if m.split(".")[0] == "toy_world"]:
        monkeypatch.delitem(sys.modules, module)
    assert "toy" in registry.world_names()
    assert "toy_world" not in sys.modules  # listing imports nothing
    world = registry.load_world("toy")
    assert isinstance(world, World) and world.driver("toy.arm") is not None
    assert registry.world_of_driver("toy.arm") is world
    assert registry.suite_world("toy_sort") == (world, "toy_sort")
    assert registry.suite_world("toy:toy_sort") == (world, "toy_sort")
    assert registry.profile_source("toy_arm") == world.profiles["toy_arm"]
    with pytest.raises(WorldError, match="no world named 'moon'; found: tabletop"):
        registry.load_world("moon")
