"""Every CLI command on a recorded run (in-process through ``harness.cli.main``), plus the
installed ``harness`` console script for run, JSON output and Ctrl-C."""

from __future__ import annotations

import io
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import Harness, HarnessConfig, tool
from harness.cli import EXIT_CONFIG, EXIT_INTERRUPTED, EXIT_NOT_COMPLETED, EXIT_OK, main
from harness.events import parse_event
from harness.providers import ScriptedModel, call, reply
from harness.store.reader import RunLog
from tests.fixtures.cli import HARNESS_BIN, child_env, scripted_config
from tests.recorded import RecordedSession, record_session

HANG_GUARD_S = 60


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordedSession:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return record_session(tmp_path_factory.mktemp("cli"), monkeypatch)


# --------------------------------------------------------------------------- reading commands


def test_runs_lists_sessions_and_tasks(
    recorded: RecordedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "--store", str(recorded.store)]) == EXIT_OK
    out = capsys.readouterr().out
    assert recorded.session_id in out
    assert recorded.first_task in out and recorded.second_task in out
    assert "completed" in out and "put the red cube in the tray" in out
    assert "$0.0" in out  # priced
    assert main(["runs", "--store", str(recorded.store), "--json"]) == EXIT_OK
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == [recorded.second_task, recorded.first_task]
    first = rows[1]
    assert first["turns"] == 6 and first["usage"]["requests"] == 6
    assert first["usage"]["cost_usd"] > 0


def test_show_prints_the_timeline(
    recorded: RecordedSession, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(recorded.store)
    assert main(["show", recorded.first_task, "--store", store, "--prompt"]) == EXIT_OK
    out = capsys.readouterr().out
    for expected in (
        "put the red cube in the tray",
        "clamp move_to",
        "evaluate",
        "success",
        "[exception]",
        "compaction",
        "prompt",
        "completed after 6 turns",
        "Placed the cube in the tray",
    ):
        assert expected in out, expected
    assert main(["show", recorded.session_id, "--store", store]) == EXIT_OK
    assert "say hello" in capsys.readouterr().out
    assert main(["show", "last", "--store", store]) == EXIT_OK
    assert "hello again" in capsys.readouterr().out


def test_unknown_run_or_store_exits_2(
    recorded: RecordedSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "task_nope", "--store", str(recorded.store)]) == EXIT_CONFIG
    assert "recent tasks" in capsys.readouterr().err
    assert main(["runs", "--store", str(tmp_path / "none")]) == EXIT_CONFIG
    assert "no run store" in capsys.readouterr().err


def test_context_at_a_turn(recorded: RecordedSession, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(recorded.store)
    assert main(["context", recorded.first_task, "--store", store, "--turn", "5"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "turn 5:" in out and "checkpoint" in out and "truncated" in out
    assert "items had left the context" in out
    assert main(["context", recorded.first_task, "--store", store, "-t", "5", "--all"]) == 0
    assert "summarized" in capsys.readouterr().out
    argv = ["context", recorded.first_task, "--store", store, "--turn", "2", "--json"]
    assert main(argv) == EXIT_OK
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["kind"] for r in rows] == [
        "instruction",
        "task_notes",
        "assistant",
        "tool_result",
        "task_notes",
    ]
    assert all(r["state"] == "verbatim" and r["in_context"] for r in rows)
    assert main(["context", recorded.first_task, "--store", store, "--turn", "99"]) == 2
    assert "no model call at turn 99" in capsys.readouterr().err


def test_export_jsonl(
    recorded: RecordedSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(recorded.store)
    assert main(["export", recorded.first_task, "--store", store, "--format", "jsonl"]) == 0
    events = [parse_event(line) for line in capsys.readouterr().out.splitlines()]
    with RunLog(recorded.store) as log:
        assert events == log.events(task_id=recorded.first_task)
    assert events[0].type == "task_started" and events[-1].type == "done"

    out = tmp_path / "archive.jsonl"
    argv = ["export", recorded.first_task, "--store", store, "--what", "archive", "-o", str(out)]
    assert main(argv) == 0
    archive = {r["tool"]: r for r in map(json.loads, out.read_text().splitlines())}
    log_text = archive["dump_log"]["text"]
    assert log_text.count("\n") == 119 and log_text.startswith("log line 0000")  # exact
    assert archive["dump_log"]["address"].startswith(f"archive://{recorded.first_task}/")

    assert main(["export", "last", "--store", store, "--what", "items"]) == 0
    items = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [i["item"]["kind"] for i in items][-1] == "assistant"


def test_report_writes_one_self_contained_html_file(
    recorded: RecordedSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(recorded.store)
    assert main(["report", recorded.first_task, "--store", store]) == EXIT_OK
    default = recorded.store / "reports" / f"{recorded.first_task}.html"
    assert str(default) in capsys.readouterr().out
    page = default.read_text()
    assert page.count("<svg") >= 1 and "threshold" in page  # the plot
    assert page.count('src="data:image/jpeg;base64,') >= 3  # camera frames
    assert "frame not kept" in page  # run.image_retention_every: 2
    for expected in ("clamp", "eval-success", "compaction", "Placed the cube in the tray"):
        assert expected in page, expected
    assert 'src="http' not in page and "<link" not in page and "<script" not in page


def test_report_without_matplotlib_lists_the_numbers(
    recorded: RecordedSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    out = tmp_path / "plain.html"
    assert main(["report", "last", "--store", str(recorded.store), "-o", str(out)]) == 0
    page = out.read_text()
    assert "pip install 'embodied-harness[report]'" in page and "<svg" not in page
    assert '<table class="tokens">' in page


# --------------------------------------------------------------------------- check


def test_check_reports_each_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = scripted_config(tmp_path / "ok.yaml", tmp_path / "store", [{"text": "hi"}])
    assert main(["check", "--config", str(config)]) == EXIT_OK
    out = capsys.readouterr().out
    for expected in ("config", "model", "scripted:scripted", "context", "tools", "run store"):
        assert expected in out, expected
    assert "0 failed" in out
    assert not (tmp_path / "store").exists()  # a check creates no store: it would be created
    (tmp_path / "store").mkdir()
    assert main(["check", "--config", str(config)]) == EXIT_OK  # an existing one is opened
    assert "0 sessions" in capsys.readouterr().out
    with RunLog(tmp_path / "store") as log:
        assert log.sessions() == []  # a check records no session


def test_check_fails_on_unusable_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HARNESS_TEST_UNSET_KEY", raising=False)
    config = scripted_config(
        tmp_path / "bad.yaml",
        tmp_path / "store",
        [{"text": "hi"}],
        tools=["tests.fixtures.parts:slow_move"],
    )
    data = yaml.safe_load(config.read_text())
    data["model"]["api_key_env"] = "HARNESS_TEST_UNSET_KEY"
    data["model"]["base_url"] = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    config.write_text(yaml.safe_dump(data))
    assert main(["check", "--config", str(config)]) == EXIT_CONFIG
    out = capsys.readouterr().out
    assert "HARNESS_TEST_UNSET_KEY, which is not set" in out
    assert "NO safety envelope" in out
    assert "127.0.0.1:9 is not reachable" in out


def test_check_runs_registered_and_part_hooks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.assembly import checks

    def broken(harness: Any) -> list[checks.CheckResult]:
        raise RuntimeError("probe exploded")

    monkeypatch.setitem(checks.CHECKS, "custom", lambda h: [checks.CheckResult.warn("x", "y")])
    monkeypatch.setitem(checks.CHECKS, "broken", broken)
    config = scripted_config(tmp_path / "ok.yaml", None, [{"text": "hi"}])
    assert main(["check", "--config", str(config)]) == EXIT_CONFIG
    out = capsys.readouterr().out
    assert "warn x" in out and "probe exploded" in out and "kept in memory only" in out


def test_check_names_a_bad_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "typo.yaml"
    bad.write_text("run:\n  max_turnz: 3\n")
    assert main(["check", "--config", str(bad)]) == EXIT_CONFIG
    assert "run.max_turnz" in capsys.readouterr().err


# --------------------------------------------------------------------------- run


def test_run_exit_codes_and_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    done = scripted_config(tmp_path / "done.yaml", store, [{"text": "all done"}])
    assert main(["run", "--config", str(done), "say hi"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "all done" in out and f"in {store}" in out and "harness report task_" in out
    looping = scripted_config(
        tmp_path / "loop.yaml",
        store,
        [{"tool": {"name": "update_task_notes", "arguments": {"phase": "a"}}}],
    )
    assert main(["run", "--config", str(looping), "--max-turns", "1", "loop"]) == 1
    assert "max_turns" in capsys.readouterr().out
    with RunLog(store) as log:
        assert [t.status for t in log.tasks()] == ["max_turns", "completed"]
    assert main(["run", "--config", str(tmp_path / "missing.yaml"), "x"]) == EXIT_CONFIG
    assert main(["run", "--set", "run.max_turns=0", "x"]) == EXIT_CONFIG
    assert "run.max_turns" in capsys.readouterr().err


def test_console_script_run_json(tmp_path: Path) -> None:
    config = scripted_config(tmp_path / "c.yaml", tmp_path / "store", [{"text": "done"}])
    result = subprocess.run(
        [str(HARNESS_BIN), "run", "--config", str(config), "--json", "go"],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=tmp_path,
        timeout=HANG_GUARD_S,
    )
    assert result.returncode == EXIT_OK, result.stderr
    events = [parse_event(line) for line in result.stdout.splitlines()]
    assert events[0].type == "task_started" and events[-1].type == "done"
    with RunLog(tmp_path / "store") as log:
        assert log.events(task_id=events[0].task_id) == events


def _wait_for(path_glob: tuple[Path, str], proc: subprocess.Popen[str]) -> None:
    folder, pattern = path_glob
    deadline = time.monotonic() + HANG_GUARD_S
    while not list(folder.glob(pattern)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)


def _slow_wait_process(tmp_path: Path, *command: str) -> subprocess.Popen[str]:
    """``harness COMMAND --config C ...`` where the model calls ``slow_wait`` (which runs
    until cancelled and leaves a marker under ``tmp_path/markers`` when it starts)."""
    config = scripted_config(
        tmp_path / "c.yaml",
        tmp_path / "store",
        [{"tool": {"name": "slow_wait", "arguments": {}}}],
        tools=["tests.fixtures.parts:slow_wait"],
    )
    return subprocess.Popen(
        [str(HARNESS_BIN), command[0], "--config", str(config), *command[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(tmp_path / "markers"),
        cwd=tmp_path,
    )


def test_console_script_ctrl_c_cancels_and_exits_130(tmp_path: Path) -> None:
    proc = _slow_wait_process(tmp_path, "run", "wait for me")
    _wait_for((tmp_path / "markers", "slow_wait-*"), proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "cancelled" in out
    with RunLog(tmp_path / "store") as log:
        assert log.resolve("last").status == "cancelled"


# --------------------------------------------------------------------------- chat


def test_chat_runs_tasks_resets_and_answers_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = scripted_config(
        tmp_path / "chat.yaml",
        tmp_path / "store",
        [
            {"tool": {"name": "query_user", "arguments": {"question": "Which cube?"}}},
            {"text": "picked the blue cube"},
            {"text": "second answer"},
            {"text": "third answer"},
        ],
    )
    lines = "pick a cube\nblue\n/context\nfollow up\n/reset\nafter reset\n/bogus\n/quit\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    assert main(["chat", "--config", str(config)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "robot asks: Which cube?" in out
    assert "picked the blue cube" in out and "third answer" in out
    assert "Accumulated context cleared" in out and "unknown command /bogus" in out
    with RunLog(tmp_path / "store") as log:
        tasks = log.tasks()
        assert [t.instruction for t in tasks] == ["after reset", "follow up", "pick a cube"]
        assert len({t.session_id for t in tasks}) == 1
        answered = log.events(task_id=tasks[-1].id, types=["user_query"])
        assert [e.status for e in answered] == ["asked", "answered"]  # type: ignore[union-attr]
        follow_up = log.context_at(tasks[1].id)
        after_reset = log.context_at(tasks[0].id)
    assert any("pick a cube" in r.preview for r in follow_up.rows)  # the session remembers
    assert not any("pick a cube" in r.preview for r in after_reset.rows if r.in_context)


def test_chat_ctrl_c_cancels_the_task_then_exits(tmp_path: Path) -> None:
    proc = _slow_wait_process(tmp_path, "chat")
    assert proc.stdin is not None
    proc.stdin.write("wait for me\n")
    proc.stdin.flush()
    _wait_for((tmp_path / "markers", "slow_wait-*"), proc)
    lines: queue.Queue[str] = queue.Queue()
    errors: list[str] = []  # read all along: a child blocked on a full stderr pipe would hang
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []], daemon=True).start()
    threading.Thread(target=lambda: errors.extend(proc.stderr or []), daemon=True).start()
    proc.send_signal(signal.SIGINT)  # cancels the task; the chat goes back to its prompt
    seen: list[str] = []
    while not any("task cancelled; Ctrl-C again exits" in line for line in seen):
        try:
            seen.append(lines.get(timeout=HANG_GUARD_S))
        except queue.Empty:
            raise AssertionError(("no 'task cancelled'", proc.poll(), seen, errors)) from None
    with RunLog(tmp_path / "store") as log:
        assert log.resolve("last").status == "cancelled", (seen, errors)
    proc.send_signal(signal.SIGINT)  # exits
    proc.wait(HANG_GUARD_S)
    assert proc.returncode == EXIT_INTERRUPTED, (proc.returncode, seen, errors)
    assert any("cancelled after 1 turns" in line for line in seen), (seen, errors)


def test_not_completed_task_exit_code_for_show(
    recorded: RecordedSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    looping = scripted_config(
        tmp_path / "loop.yaml",
        store,
        [{"tool": {"name": "update_task_notes", "arguments": {"phase": "a"}}}],
    )
    assert main(["run", "--config", str(looping), "--max-turns", "1", "loop"]) == 1
    assert main(["show", "last", "--store", str(store)]) == EXIT_NOT_COMPLETED


def test_show_follow_streams_a_running_task_from_another_process(tmp_path: Path) -> None:
    gate = threading.Event()

    @tool
    def wait_for_gate() -> str:
        """Wait until the test opens the gate."""
        gate.wait(HANG_GUARD_S)
        return "gate opened"

    config = HarnessConfig.model_validate(
        {
            "embodiment": None,
            "driver": None,
            "memory": {"enabled": False},
            "run": {"store": str(tmp_path / "store")},
        }
    )
    model = ScriptedModel([call("wait_for_gate"), reply("followed to the end")])
    with Harness.from_config(config, model=model, tools=[wait_for_gate]) as harness:
        worker = threading.Thread(target=harness.run, args=("be followed",))
        worker.start()
        try:
            deadline = time.monotonic() + HANG_GUARD_S
            while True:  # the task is recorded (the store itself exists since from_config)
                with RunLog(tmp_path / "store") as log:
                    if log.tasks():
                        break
                assert time.monotonic() < deadline
                time.sleep(0.02)
            follower = subprocess.Popen(
                [str(HARNESS_BIN), "show", "last", "--follow", "--store", str(tmp_path / "store")],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=child_env(),
            )
            assert follower.stdout is not None
            for line in follower.stdout:  # live: the decision shows while the tool blocks
                if "wait_for_gate" in line and "decide" in line:
                    break
            gate.set()
            rest = follower.stdout.read()
            follower.wait(HANG_GUARD_S)
        finally:
            gate.set()
            worker.join(HANG_GUARD_S)
    assert follower.returncode == EXIT_OK
    assert "gate opened" in rest and "followed to the end" in rest


def test_chat_ends_at_end_of_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = scripted_config(tmp_path / "c.yaml", None, [{"text": "one"}])
    monkeypatch.setattr(sys, "stdin", io.StringIO("\nhello\n"))  # then Ctrl-D
    assert main(["chat", "--config", str(config)]) == EXIT_OK
    assert "one" in capsys.readouterr().out


def test_check_probes_mcp_tool_sources_and_reports_silent_servers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP check asks a tool source that can probe its servers, and fails a configured
    server that registered no tools."""
    from dataclasses import dataclass

    from harness.assembly import checks
    from harness.config import MCPServerConfig

    @dataclass
    class Status:
        name: str
        ok: bool
        state: str
        last_error: str = ""

    class Source:
        def check(self) -> list[Status]:
            return [Status("arm", True, "ready"), Status("camera", False, "crashed", "EOF")]

        def skipped_tools(self) -> dict[str, str]:
            return {"camera.raw": "schema is not an object"}

    config = HarnessConfig.model_validate(
        {"embodiment": None, "driver": None, "memory": {"enabled": False}, "run": {"store": None}}
    )
    config.mcp.servers = [
        MCPServerConfig(name="arm", command="x"),
        MCPServerConfig(name="ros", command="y"),
    ]
    with Harness(config, model=ScriptedModel([reply("x")])) as harness:
        harness.tool_sources = [Source()]  # type: ignore[attr-defined]
        results = {r.subject: r for r in checks.check_mcp(harness)}
    assert results["mcp server arm"].status == "ok"
    camera = results["mcp server camera"]
    assert camera.status == "fail" and "crashed (EOF)" in camera.detail
    assert results["mcp tool camera.raw"].status == "warn"
    assert results["mcp server ros"].status == "fail"
