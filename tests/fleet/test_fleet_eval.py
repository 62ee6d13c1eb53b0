"""``harness eval`` end to end on the simulator with local worker processes: the same
outcomes whatever the worker count, a worker that dies mid-episode, a kill of the whole
eval and ``--resume``, a physical driver, the page, and usage errors."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.fleet.journal import EvalFolder
from tests.fleet_helpers import ROOT, fingerprint, write_deployment, write_suite

pytest.importorskip("pybullet")
pytestmark = [pytest.mark.long, pytest.mark.sim]


def _tasks_in(store: Path) -> int:
    (database,) = store.glob("*.db")
    with sqlite3.connect(database) as db:
        return int(db.execute("select count(*) from tasks").fetchone()[0])


def test_one_and_two_workers_give_the_same_outcomes_and_a_dead_worker_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_deployment(tmp_path)
    suite = write_suite(tmp_path, crash_key=True)
    one, two = tmp_path / "one", tmp_path / "two"

    assert main(["eval", str(suite), "--workers", "1", "--out", str(one)]) == 0
    printed = capsys.readouterr().out
    assert "overall" in printed and "95% interval" in printed
    # The second eval's first worker to build pick_place/red/s0 dies (os._exit) doing it.
    crash = tmp_path / "crash"
    crash.mkdir()
    monkeypatch.setenv("HARNESS_TEST_CRASH_DIR", str(crash))
    assert main(["eval", str(suite), "--workers", "2", "--out", str(two)]) == 0
    assert (crash / "crashed").is_file()  # it really died once

    records_one, records_two = EvalFolder(one).records(), EvalFolder(two).records()
    assert len(records_one) == len(records_two) == 4
    assert fingerprint(records_one) == fingerprint(records_two)
    by_key = {r.key: r for r in records_two}
    assert by_key["pick_place/red/s0"].attempt == 2
    assert {r.attempt for k, r in by_key.items() if k != "pick_place/red/s0"} == {1}
    assert {r.status for r in records_one} == {"completed"}
    # The planner does all four (the simulator's ground truth says so), and says why.
    assert all(r.success for r in records_two), [(r.key, r.outcome) for r in records_two]
    assert by_key["pick_place/red/s0"].outcome == "achieved"
    assert "goal conditions hold" in by_key["pick_place/red/s0"].outcome_summary
    assert by_key["refusal/absent/s0"].outcome == "not_achieved"  # declined, touched nothing
    assert by_key["recovery/green/s2"].tools_run["pick"] >= 2  # the first grasp slipped
    assert len({r.worker for r in records_two}) >= 2

    for folder, records in ((one, records_one), (two, records_two)):
        for record in records:
            store = folder / record.store
            assert _tasks_in(store) == 1  # its own run store, one task in it
            memory = store.parent / "memory" / "MEMORY.md"
            assert "light grey" in memory.read_text(encoding="utf-8")
    # No episode wrote into the deployment's own memory.
    assert sorted(p.name for p in (tmp_path / "memory").iterdir()) == ["MEMORY.md"]
    summary = json.loads((two / "summary.json").read_text(encoding="utf-8"))
    assert summary["finished"] == 4 and summary["families"][-1]["family"] == "overall"

    # The page: the table, the chart and a working link to every episode's report.
    assert main(["eval-report", str(two)]) == 0
    page = (two / "report.html").read_text(encoding="utf-8")
    assert "<svg" in page and "overall" in page
    for record in records_two:
        link = f"reports/{record.key.replace('/', '.')}.html"
        assert f'href="{link}"' in page
        assert record.run_id in (two / link).read_text(encoding="utf-8")

    # --compare: the same outcomes, so no family differs.
    assert main(["eval", "--compare", str(one), str(two)]) == 0
    compared = capsys.readouterr().out
    assert (
        "B - A" in compared
        and "+0.0 pp" in compared
        and "differs" not in compared.split("pp: percentage points")[0]
    )


def _descendants(root: int) -> dict[int, int]:
    """Every process below ``root``, with its parent's pid."""
    parents: dict[int, int] = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        parents[int(status.parent.name)] = int(fields.get("PPid", "0").strip() or 0)
    found: dict[int, int] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found.update((child, parent) for child in children)
        frontier += children
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


def test_kill_the_eval_mid_run_then_resume_without_repeating_episodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_deployment(tmp_path)
    suite = write_suite(tmp_path)
    out = tmp_path / "eval"
    command = [sys.executable, "-m", "harness.cli", "eval", str(suite), "--workers", "2"]
    eval_process = subprocess.Popen(
        [*command, "--out", str(out)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    journal = out / "episodes.jsonl"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if journal.is_file() and journal.read_bytes().count(b"\n") >= 1:
            break
        assert eval_process.poll() is None, eval_process.stderr.read().decode()  # type: ignore[union-attr]
        time.sleep(0.1)
    # The coordinator's children are the forkserver and its resource tracker; the workers
    # are the forkserver's children.
    left_behind = _descendants(eval_process.pid)
    workers = [pid for pid, parent in left_behind.items() if parent != eval_process.pid]
    assert len(workers) == 2, left_behind
    eval_process.kill()  # kill -9 of the coordinator, mid-run
    eval_process.wait(timeout=10)
    before = EvalFolder(out).records()
    assert 1 <= len(before) < 4, "the kill came too late to test anything"
    # Orphaned workers cancel their episode and leave on their own, and so does every
    # other process the eval started.
    deadline = time.monotonic() + 60
    while any(_alive(pid) for pid in left_behind) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in left_behind if _alive(pid)]
    with journal.open("a", encoding="utf-8") as handle:
        handle.write('{"key": "pick_place/red/s1", "task": "pick')  # a line cut by the kill

    # The resume runs in this process: the killed coordinator was the real process to test.
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["eval", "--resume", str(out)])
    resumed = capsys.readouterr().err
    assert code == 0, resumed
    assert f"({len(before)} already finished)" in resumed
    after = EvalFolder(out).records()
    lines = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    keys = [line["key"] for line in lines]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 4  # each episode once
    assert [r.model_dump() for r in after[: len(before)]] == [r.model_dump() for r in before]
    for record in after:
        assert _tasks_in(out / record.store) == 1  # finished ones were not run again


def test_a_physical_driver_runs_one_episode_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_deployment(
        tmp_path,
        driver={"name": "fake", "hardware_id": "test-arm", "lease_dir": str(tmp_path / "leases")},
    )
    suite_data = {
        "suite": "robot",
        "config": "deployment.yaml",
        "seed_option": None,
        "tasks": [
            {"name": "look", "instruction": "put the red cube in the tray", "seeds": [0, 1],
             "max_turns": 3}
        ],
    }  # fmt: skip
    suite = tmp_path / "robot.yaml"
    suite.write_text(yaml.safe_dump(suite_data), encoding="utf-8")
    # In this process, as every eval here that is not killed (a subprocess costs a second
    # of CPU to start, and its own forkserver another).
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["eval", str(suite), "--workers", "2", "--out", str(tmp_path / "eval")])
    printed = capsys.readouterr().err
    assert code == 0, printed
    assert "physical hardware (test-arm)" in printed and "one at a time" in printed
    assert "1 local worker process;" in printed
    records = EvalFolder(tmp_path / "eval").records()
    assert len(records) == 2 and len({r.worker for r in records}) == 1
    # Refused before anything starts.
    assert main(["eval", str(suite), "--ray", "--out", str(tmp_path / "eval2")]) == 2
    refused = capsys.readouterr().err
    assert "physical hardware" in refused and "Traceback" not in refused
    assert not (tmp_path / "eval2").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["eval"], "name a suite file"),
        (["eval", "missing.yaml"], "suite file not found"),
        (["eval", "--resume", "nowhere"], "no eval there"),
        (["eval", "--resume", "{out}", "--episodes", "2"], "--episodes cannot be used"),
        (["eval", "--resume", "{out}", "--model", "planner"], "--model cannot be used"),
        (["eval", "{suite}", "--out", "{out}"], "already holds an eval"),
        (["eval", "{suite}", "--episodes", "0"], "--episodes must be at least 1"),
        (["eval", "--compare", "{out}", "nowhere"], "no eval there"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    write_deployment(tmp_path)
    suite = write_suite(tmp_path)
    out = tmp_path / "existing"
    from harness.fleet.journal import Manifest

    EvalFolder(out).create(Manifest(suite="small", suite_path=str(suite), episodes=[]))
    filled = [a.replace("{suite}", str(suite)).replace("{out}", str(out)) for a in arguments]
    os.chdir(tmp_path)
    try:
        code = main(filled)
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_ctrl_c_cancels_running_episodes_and_records_only_finished_ones(tmp_path: Path) -> None:
    write_deployment(tmp_path)
    suite = write_suite(tmp_path)
    out = tmp_path / "eval"
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "eval", str(suite), "--workers", "2", "--out",
         str(out)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / "runs").is_dir():
        time.sleep(0.1)
    time.sleep(1.0)  # episodes are running
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "continue with: harness eval --resume" in err
    records = EvalFolder(out).records()
    assert all(r.status != "cancelled" for r in records)  # a cut-short episode is not a result
    assert len(records) < 4


def test_an_unreachable_ray_cluster_is_a_usage_error_and_leaves_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An address where nothing can answer, whatever else runs on the machine (``auto``
    would find a cluster another process started): a port this test holds bound and never
    listens on, so every connection to it is refused."""
    pytest.importorskip("ray")
    write_deployment(tmp_path)
    suite = write_suite(tmp_path)
    out = tmp_path / "eval"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        for address in (
            f"127.0.0.1:{held.getsockname()[1]}",
            f"ray://127.0.0.1:{held.getsockname()[1]}",
        ):
            assert main(["eval", str(suite), "--ray", address, "--out", str(out)]) == 2
            err = capsys.readouterr().err
            assert f"--ray: could not reach {address}: nothing answers there" in err, err
            assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # nothing to --resume: the eval never began
