"""A newcomer's first try (issue 44): one run store for every world, ``last`` that says what
it took, errors that point at what the user gave, help that says the defaults, a timeline
that survives a pipe, and Ctrl-C at any moment ending as "interrupted"."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import EXIT_INTERRUPTED, build_parser, main
from harness.cli.common import config_from_args, store_folder
from tests.tiers import examples
from worlds.registry import world_names

ROOT = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Runs the command; asserts exit 2 and one line on stderr, no traceback."""
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = stop.code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, (argv, captured.out, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def scripted_config(folder: Path, **extra: Any) -> Path:
    data = {
        "model": {
            "provider": "scripted",
            "name": "scripted",
            "options": {"responses": [{"text": "done"}]},
        },
        "embodiment": None,
        "driver": None,
        "memory": {"enabled": False},
        "run": {"store": "store"},
        **extra,
    }
    path = folder / "harness.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


# ============================================================================ item 1: one store


def test_every_world_and_every_reading_command_use_one_store_in_a_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From the checkout's root: the default world (configs/default.yaml), every other
    world (its built-in deployment) and the reading commands all name ./.harness."""
    monkeypatch.chdir(ROOT)
    expected = ROOT / ".harness"
    stores = {}
    for name in world_names():
        config = config_from_args(parse("check", "--world", name))
        assert config.run.store is not None, name
        stores[name] = config.resolve_path(config.run.store).resolve()
    default = config_from_args(parse("demo"))
    assert default.run.store is not None
    stores["demo"] = default.resolve_path(default.run.store).resolve()
    for command in ("show", "runs", "report", "export", "context"):
        stores[command] = store_folder(parse(command)).resolve()
    assert set(stores.values()) == {expected}, stores


def test_last_says_which_task_and_which_store_it_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = scripted_config(tmp_path)
    assert main(["run", "--config", str(config), "say done"]) == 0
    capsys.readouterr()
    store = tmp_path / "store"
    for argv in (["show"], ["show", "last"], ["context"], ["export"], ["report"]):
        assert main([*argv, "--store", str(store)]) == 0, argv
        err = capsys.readouterr().err
        assert f"last task in {store}: task_" in err and "'say done'" in err, (argv, err)
    task_id = json.loads(_runs_json(store, capsys))["id"]
    assert main(["show", task_id, "--store", str(store)]) == 0
    assert "last task" not in capsys.readouterr().err  # named: nothing to say


def _runs_json(store: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["runs", "--json", "--store", str(store)]) == 0
    return capsys.readouterr().out.splitlines()[0]


# ============================================================================ item 4: errors


def test_a_bad_set_key_is_named_as_the_set_not_as_the_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # configs/default.yaml is read
    err = one_line_error(capsys, "run", "--set", "run.max_turnz=5", "x")
    assert "--set run.max_turnz=5" in err and "default.yaml" not in err
    assert "unknown key (value 5)" in err and "did you mean 'run.max_turns'?" in err
    err = one_line_error(capsys, "demo", "--set", "run.max_turns=many")
    assert "--set run.max_turns=many" in err and "'many'" in err
    # A file that is wrong itself is named, whatever --set says.
    bad = scripted_config(tmp_path, run={"store": "store", "max_turnz": 3})
    err = one_line_error(capsys, "run", "--config", str(bad), "--set", "run.max_turns=4", "x")
    assert str(bad) in err and "run.max_turnz" in err and "--set" not in err


def test_a_folder_as_config_and_an_empty_config_are_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = one_line_error(capsys, "demo", "--config", str(ROOT / "configs"))
    assert "is a folder, not a config file" in err and "default.yaml" in err
    assert "not found" not in err
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n", encoding="utf-8")
    for command in ("check", "run"):
        argv = [command, "--config", str(empty)] + (["x"] if command == "run" else [])
        err = one_line_error(capsys, *argv)
        assert f"{empty} is empty" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.yaml"]  # nothing created


def test_check_leaves_no_folder_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = scripted_config(tmp_path, memory={"enabled": True, "path": "memory"})
    assert main(["check", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path / 'store'} (will be created)" in out
    assert f"{tmp_path / 'memory'} (will be created)" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["harness.yaml"]
    (tmp_path / "store").mkdir()  # a store folder that is there is opened and read
    assert main(["check", "--config", str(config)]) == 0
    assert f"{tmp_path / 'store'} (SQLite WAL, schema v" in capsys.readouterr().out


def test_eval_folders_are_named_by_the_option_that_named_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = one_line_error(capsys, "eval-report", str(tmp_path))
    assert f"{tmp_path}: no eval there" in err and "--resume" not in err
    err = one_line_error(capsys, "eval", "--resume", str(tmp_path))
    assert f"--resume {tmp_path}: no eval there" in err
    err = one_line_error(capsys, "eval", "--compare", str(tmp_path), str(tmp_path))
    assert f"--compare {tmp_path}: no eval there" in err


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["demo", "--max-turns", "0"], "--max-turns must be at least 1, got 0"),
        (["demo", "--max-turns", "three"], "--max-turns takes a whole number, got 'three'"),
        (["console", "--port", "99999"], "--port must be 0..65535, got 99999"),
        (["run", "--set", "run.max_turns", "x"], "'run.max_turns': expected KEY.PATH=VALUE"),
    ],
)
def test_bad_flags_are_one_line_naming_the_flag_and_the_value(
    capsys: pytest.CaptureFixture[str], argv: list[str], named: str
) -> None:
    assert named in one_line_error(capsys, *argv)


def test_demo_takes_max_turns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pybullet")
    store = tmp_path / "store"
    code = main(["demo", "--max-turns", "2", "--json", "--set", f"run.store={store}"])
    assert code == 1  # ended by the limit: not achieved
    done = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (done["type"], done["status"], done["turns"]) == ("done", "max_turns", 2)


# ============================================================================ item 5: help


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _option(parser: argparse.ArgumentParser, dest: str) -> argparse.Action:
    return next(a for a in parser._actions if a.dest == dest)


def test_every_command_has_a_description_and_every_option_a_help() -> None:
    for name, parser in _subparsers().items():
        assert parser.description, f"harness {name} has no description"
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"harness {name} {action.option_strings or action.dest}: no help"


def test_help_says_the_defaults_a_user_asks_about() -> None:
    commands = _subparsers()
    for name in ("run", "demo", "resume"):
        assert "run.max_turns" in (_option(commands[name], "max_turns").help or ""), name
    assert "default: JSON lines" in (_option(commands["export"], "format").help or "")
    for name in ("show", "context", "report", "export"):
        run = _option(commands[name], "run")
        assert run.default == "last" and "omitted: the last task" in (run.help or ""), name
        assert "RUN omitted: the last task" in (commands[name].description or ""), name
    console_port = _option(commands["console"], "port").default
    foxglove_port = _option(commands["demo"], "foxglove").const
    assert console_port != foxglove_port


# ============================================================================ item 6: output


def test_a_piped_timeline_keeps_each_event_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Captured output is no terminal: a long decision stays one line, its JSON whole."""
    note = "a note long enough to pass the eighty columns a pipe used to be wrapped at " * 2
    config = scripted_config(
        tmp_path,
        model={
            "provider": "scripted",
            "name": "scripted",
            "options": {
                "responses": [
                    {"tool": {"name": "update_task_notes", "arguments": {"add_notes": [note]}}},
                    {"text": "done"},
                ]
            },
        },
    )
    assert main(["run", "--config", str(config), "take a note"]) == 0
    out = capsys.readouterr().out
    decide = [line for line in out.splitlines() if " decide " in line]
    assert len(decide) == 1, out
    shown = decide[0].split("update_task_notes(", 1)[1].removesuffix(")")
    whole = json.dumps({"add_notes": [note]}, separators=(",", ":"))
    assert len(decide[0]) > 80 and len(whole) > 160
    assert shown.endswith("…") and whole.startswith(shown[:-1])  # cut, and marked as cut


# ============================================================================ Ctrl-C


def test_the_cli_module_imports_nothing_heavy_before_main_runs() -> None:
    """Ctrl-C while the `harness` script imports the CLI: only the standard library is
    loaded before main() can catch it (and the two stdlib-only modules the packages' lazy
    names need: ``embodiment``'s ``__init__`` and ``embodiment.lazy_names``)."""
    heavy = ("pydantic", "numpy", "rich", "yaml")
    code = (
        "import sys, harness.cli; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r} "
        "or (m.startswith('embodiment.') and m != 'embodiment.lazy_names')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_ctrl_c_while_the_commands_load_is_interrupted_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.import_module

    def interrupted(name: str, package: str | None = None) -> Any:
        if name == "harness.cli.demo":
            raise KeyboardInterrupt
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", interrupted)
    assert main(["demo"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.strip() == "interrupted"


# ============================================================================ item 6: the report


def test_the_report_shows_a_plan_as_a_list_and_a_short_call_on_one_line() -> None:
    from harness.store.report_timeline import call_html

    assert call_html("pick", {"ref": "blue_cube_1"}) == "<b>pick</b>(ref=blue_cube_1)"
    plan = ["plan: blue_cube_1 in tray_1", "plan: green_cube_1 in tray_1"]
    html = call_html("update_task_notes", {"add_notes": plan, "phase": "planned"})
    assert "[" not in html and "&quot;" not in html
    assert html.count("<li>plan: ") == 2 and "<i>phase</i>: planned" in html


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@settings(max_examples=examples(200), deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=10), _json_values, max_size=4))
def test_call_arguments_are_escaped_and_none_is_lost(arguments: dict[str, Any]) -> None:
    """Oracle: the page's text (tags removed, entities decoded) holds every key and every
    plain value's text, and no markup comes from the arguments."""
    import html as html_module
    import re

    from harness.store.report_timeline import call_html

    page = call_html("tool<x>", arguments)
    assert "<x>" not in page
    tags = re.findall(r"<[^>]*>", page)
    assert set(tags) <= {
        "<b>",
        "</b>",
        "<ul>",
        "</ul>",
        '<ul class="args">',
        "<li>",
        "</li>",
        "<i>",
        "</i>",
    }
    text = html_module.unescape(re.sub(r"<[^>]*>", " ", page))

    def leaves(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [k for k in value] + [t for v in value.values() for t in leaves(v)]
        if isinstance(value, list):
            return [t for v in value for t in leaves(v)]
        return [value if isinstance(value, str) else json.dumps(value)]

    for key, value in arguments.items():
        assert key in text
        if isinstance(value, (str, int, bool)) or value is None:
            assert leaves(value)[0] in text
        elif isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
            assert all(item in text for item in leaves(value))
