"""The command line as a new user meets it: flags that must reach the config, trivial
input that must be a one-line usage error, and one rule for config files and paths."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from harness.cli import build_parser, main
from harness.cli.common import config_from_args, default_deployment, store_flag
from harness.config import HarnessConfig, load_config

ROOT = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Runs the command; asserts exit code 2 and one line on stderr with no traceback."""
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = stop.code
    assert code == 2, argv
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


# ============================================================================ item 1


def test_context_window_and_model_sets_reach_a_model_given_with_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = "openai:my-model@http://127.0.0.1:9/v1"
    config = config_from_args(parse("run", "--model", url, "--context-window", "32768", "x"))
    assert (config.model.name, config.model.context_window) == ("my-model", 32768)
    config = config_from_args(
        parse(
            "run",
            "--model",
            url,
            "--set",
            "model.context_window=8192",
            "-s",
            "model.timeout_s=5",
            "x",
        )
    )
    assert (config.model.context_window, config.model.timeout_s) == (8192, 5)
    assert config.model.base_url == "http://127.0.0.1:9/v1"


def test_an_unknown_window_names_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--model", "openai:my-model@http://127.0.0.1:9/v1", "hi"]) == 2
    err = capsys.readouterr().err
    assert "--context-window N" in err and "Traceback" not in err


# ============================================================================ item 2


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["run", ""], "instruction is empty"),
        (["run", "   "], "instruction is empty"),
        (["run", "--max-turns", "0", "go"], "--max-turns must be at least 1"),
        (["run", "--max-turns", "-3", "go"], "--max-turns must be at least 1"),
        (["run", "--max-turns", "many", "go"], "--max-turns takes a whole number"),
        (["run", "--context-window", "0", "go"], "--context-window must be at least 1"),
        (["demo", ""], "instruction is empty"),
        (["resume", "last", "--max-turns", "0"], "--max-turns must be at least 1"),
    ],
)
def test_trivial_bad_input_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], names: str
) -> None:
    assert names in usage_error(capsys, *argv)


def test_gui_without_a_display_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert "--gui needs a display" in usage_error(capsys, "demo", "--gui")


def test_unknown_drop_first_grasp_ref_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    err = usage_error(capsys, "demo", "--drop-first-grasp", "purple_cube_1")
    assert "--drop-first-grasp purple_cube_1: no such object" in err
    assert "red_cube_1" in err  # names the refs that exist


def test_an_unknown_fault_ref_in_a_config_is_a_config_error() -> None:
    from worlds.tabletop.scene import TabletopConfig

    with pytest.raises(ValueError, match="no object 'purple_cube_1'"):
        TabletopConfig.model_validate({"faults": {"drop_on_lift": {"purple_cube_1": 1}}})
    assert TabletopConfig.model_validate({"faults": {"drop_on_lift": {"red_cube_1": 1}}})


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"harness {version('embodied-harness')}"


# ============================================================================ item 3


def test_a_profile_given_as_the_config_is_named_as_a_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for path in (
        ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml",
        ROOT / "configs" / "embodiments" / "thea_example.md",
    ):
        assert main(["check", "--config", str(path)]) == 2
        err = capsys.readouterr().err
        assert "embodiment profile, not a harness config" in err and "`embodiment:`" in err
        assert "unknown key" not in err


@pytest.mark.sim
def test_check_runs_the_driver_checks_against_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pybullet")
    monkeypatch.chdir(tmp_path)
    mobile = ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml"
    args = ["check", "--set", f"embodiment={mobile}", "--set", "memory.enabled=false"]
    assert main(args) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "fail driver safety_readings missing_reading:base_pose" in out
    assert main(["check", "--set", "memory.enabled=false"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ok driver checks" in out and "against profile 'panda_tabletop'" in out


# ============================================================================ item 4


def test_demo_run_chat_and_check_read_the_same_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for where in (tmp_path, ROOT):  # outside a checkout (built-in defaults) and inside
        monkeypatch.chdir(where)
        dumps = {
            command: config_from_args(parse(*argv)).model_dump()
            for command, argv in {
                "demo": ["demo"],
                "run": ["run", "x"],
                "chat": ["chat"],
                "check": ["check"],
            }.items()
        }
        assert dumps["demo"] == dumps["run"] == dumps["chat"] == dumps["check"]
        assert dumps["run"]["evaluation"]["required_tools"] == ["pick", "place"]


def test_the_built_in_defaults_are_the_checkout_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same deployment, with its store and memory in the same folders when run from
    the checkout's root (the file's paths are relative to configs/, the defaults' to the
    working directory)."""
    monkeypatch.chdir(ROOT)
    checkout = load_config(ROOT / "configs" / "default.yaml")
    built_in = HarnessConfig.model_validate(default_deployment())
    for config in (checkout, built_in):
        assert config.run.store is not None
        assert config.resolve_path(config.run.store).resolve() == ROOT / ".harness"
        assert config.resolve_path(config.memory.path).resolve() == ROOT / ".harness" / "memory"
    paths = {"run": {"store"}, "memory": {"path"}}
    assert checkout.model_dump(exclude=paths) == built_in.model_dump(exclude=paths)


def test_every_relative_path_in_a_config_file_is_relative_to_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule: run.store and memory.path written in a config live beside the config
    file, whatever the working directory; the reading commands find them from there."""
    deployment = tmp_path / "cell7"
    deployment.mkdir()
    elsewhere = tmp_path / "somewhere-else"
    elsewhere.mkdir()
    config = {
        "embodiment": None,
        "driver": None,
        "model": {
            "provider": "scripted",
            "name": "scripted",
            "options": {"responses": [{"text": "done"}]},
        },
        "run": {"store": "runs"},
        "memory": {"path": "memory"},
    }
    (deployment / "harness.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(elsewhere)
    assert main(["run", "--config", str(deployment / "harness.yaml"), "say done"]) == 0
    assert (deployment / "runs" / "runs.db").is_file()
    assert (deployment / "memory").is_dir()
    assert not any(elsewhere.iterdir())  # nothing written where the command ran
    capsys.readouterr()
    assert main(["runs", "--config", str(deployment / "harness.yaml")]) == 0
    assert "completed" in capsys.readouterr().out


def test_the_printed_report_hint_names_the_store(tmp_path: Path) -> None:
    assert store_flag(tmp_path / "x y") == f" --store '{tmp_path / 'x y'}'"
    assert store_flag(Path(".harness")) == " --store .harness"


def test_package_data_names_files_that_exist() -> None:
    import glob
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for package, patterns in data["tool"]["setuptools"]["package-data"].items():
        for pattern in patterns:
            matches = glob.glob(str(ROOT / package / pattern), recursive=True)
            assert matches, f"package-data {package}: {pattern} matches no file"


def test_docs_do_not_talk_about_branches() -> None:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        assert "is on the branch" not in text and "branches merged" not in text, path


def test_examples_name_the_models_the_readme_names() -> None:
    readme = (ROOT / "README.md").read_text()
    for example in sorted((ROOT / "examples").glob("*.py")):
        for name in ("claude-sonnet-4-5",):
            if name in example.read_text():
                assert name in readme, f"{example.name} names {name}, the README does not"


# ============================================================================ item 5: wording


def test_planner_wording_names_things_once_and_plainly() -> None:
    from harness.messages import ToolCall, ToolResultItem
    from harness.planner.policy import History, reaction_to

    def reaction(name: str, text: str, kind: str) -> str:
        history = History()
        call = ToolCall(id="c1", name=name, arguments={"ref": "red_cube_1"})
        result = ToolResultItem(call_id="c1", name=name, text=text, is_error=True, error_kind=kind)
        history.results.append((call, result))
        return reaction_to(history)

    blocked = reaction("place", "blocked by the safety envelope: keep-out zone k1", "blocked")
    assert blocked == "place was blocked by the safety envelope: keep-out zone k1"
    interrupted = reaction(
        "pick", "pick was interrupted, outcome unknown: the harness stopped", "outcome_unknown"
    )
    assert "grasp" not in interrupted and "did not finish" in interrupted


def test_task_notes_reply_does_not_show_an_internal_version() -> None:
    from harness.runtime.builtins import record_task_notes
    from harness.tools import ToolContext
    from memory.task_notes import TaskNotes

    notes = TaskNotes()
    notes.reset("stack the cubes")
    notes.record_outcome(1, "look", "ok")

    class Session:
        last_notes = notes

        def lane(self, task_id: str) -> None:
            return None

    reply = record_task_notes(
        Session(),  # type: ignore[arg-type]
        ToolContext(task_id="t"),
        phase="picking",
        add_notes=["red first"],
        remove_notes=[],
    )
    assert notes.version > 2  # the internal counter moved with the outcome, too
    assert reply == "Task Notes updated (phase: picking; 1 notes)"


@pytest.mark.sim
def test_report_summary_first_failed_results_marked_and_frames_enlarge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pybullet")
    pytest.importorskip("matplotlib")
    from harness.store.task_page import write_report

    monkeypatch.chdir(tmp_path)
    argv = ["demo", "put the red cube in the tray", "--drop-first-grasp", "red_cube_1"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "report: harness report task_" in out and "--store .harness" in out
    page = write_report(tmp_path / ".harness").read_text()
    assert page.index("<h2>Result</h2>") < page.index("<h2>Context tokens per turn</h2>")
    assert page.index("<h2>Result</h2>") < page.index("<h2>Timeline</h2>")
    blocks = page.split('<div class="ev ')[1:]
    failed = [b for b in blocks if 'tag">result</span>' in b[:80] and "b-failure" in b[:300]]
    assert failed and all(block.startswith("error") for block in failed)
    assert "this.classList.toggle('big')" in page and "img.big{max-width:100%" in page


@pytest.mark.sim
def test_a_missing_object_is_named_without_a_stray_article(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pybullet")
    monkeypatch.chdir(tmp_path)
    main(["demo", "put the purple cube in the tray"])
    out = " ".join(capsys.readouterr().out.split())
    assert "no purple cube in the scene" in out and "no the " not in out
