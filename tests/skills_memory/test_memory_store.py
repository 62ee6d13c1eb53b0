"""MemoryStore: atomic writes (also across a killed process), ledgers, Resident text within
its budget, the Task Notes mirror and the summary cache."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memory.atomic
from harness.tokens import TokenEstimator
from memory import MemoryStore, ToolLedger, ToolOutcome, atomic_write_text
from memory.ledger import MAX_RECENT, ledger_file_name
from tests.tiers import examples

ESTIMATE = TokenEstimator().text
FIXED_TIME = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]


def store_at(folder: Path, **kw: object) -> MemoryStore:
    return MemoryStore(folder, clock=lambda: FIXED_TIME, **kw)  # type: ignore[arg-type]


def outcome(tool: str, turn: int = 1, *, ok: bool = True, verdict: str | None = None,
            detail: str = "done", executed: bool = True) -> ToolOutcome:  # fmt: skip
    return ToolOutcome(turn, tool, ok, verdict, detail, executed)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- atomic writes


def test_failure_between_write_and_rename_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "MEMORY.md"
    target.write_text("old content\n")

    def broken_replace(src: str, dst: str) -> None:
        assert Path(src).read_text() == "new content\n"  # fully written and synced
        raise OSError("disk went away")

    monkeypatch.setattr(memory.atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk went away"):
        atomic_write_text(target, "new content\n")
    assert target.read_text() == "old content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MEMORY.md"]  # no temp left


def test_failed_ledger_update_leaves_the_ledger_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_at(tmp_path)
    store.record_tool_outcome(outcome("pick", detail="held cube"))
    before = store.ledger_path("pick").read_text()
    monkeypatch.setattr(memory.atomic.os, "fsync", _raise_io)
    with pytest.raises(OSError):
        store.record_tool_outcome(outcome("pick", 2, ok=False, detail="slipped"))
    assert store.ledger_path("pick").read_text() == before


def _raise_io(fd: int) -> None:
    raise OSError("fsync failed")


_KILLED_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import memory.atomic as atomic

    target, marker, stall = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    real = getattr(os, stall)

    def stalled(*args):
        if stall == "replace":
            marker.write_text(str(args[0]))
        else:
            real(*args)  # the data reached the disk; now hang before the rename
            marker.write_text("synced")
        time.sleep(120)

    setattr(os, stall, stalled)
    atomic.atomic_write_text(target, "NEW " * 200_000)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
@pytest.mark.parametrize("stall", ["fsync", "replace"])
def test_process_killed_mid_write_leaves_the_old_file(tmp_path: Path, stall: str) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    target = folder / "MEMORY.md"
    target.write_text("# Robot memory\nold and complete\n")
    marker = tmp_path / "marker"
    process = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(target), str(marker), stall],
        cwd=REPO,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60  # hang guard only
        while not marker.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the writer never reached the stall point"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        if process.stderr:
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    assert target.read_text() == "# Robot memory\nold and complete\n"
    leftovers = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and str(process.pid) in leftovers[0].name
    # the next store on the folder removes the dead writer's temporary file
    MemoryStore(folder)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert target.read_text() == "# Robot memory\nold and complete\n"


def test_a_live_writers_temp_file_is_not_removed(tmp_path: Path) -> None:
    live = tmp_path / f".MEMORY.md.{os.getpid()}.0123abcd.tmp"
    live.write_text("in progress")
    MemoryStore(tmp_path)
    assert live.exists()


# --------------------------------------------------------------------------- ledgers


def test_ledger_counts_reasons_and_recent_outcomes(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.record_tool_outcome(outcome("pick", 1, ok=False, verdict="failure", detail="not held"))
    store.record_tool_outcome(outcome("pick", 2, ok=False, verdict="failure", detail="Not held"))
    store.record_tool_outcome(outcome("pick", 3, verdict="success", detail="held red_cube_1"))
    store.record_tool_outcome(outcome("pick", 4, ok=False, detail="blocked: x", executed=False))
    ledger = store.ledger("pick")
    assert ledger.counts == {
        "runs": 4, "success": 1, "ok": 0, "failure": 2, "error": 0, "blocked": 1, "process": 0,
    }  # fmt: skip
    assert ledger.reasons["not held"] == ("not held", 2)
    assert ledger.recent[2] == "- 2025-01-02T03:04:05Z t3 success: held red_cube_1"
    assert ToolLedger.parse("pick", ledger.render()) == ledger


def test_ledger_totals_survive_trimming_and_hand_written_sections_are_kept(
    tmp_path: Path,
) -> None:
    store = store_at(tmp_path)
    store.record_tool_outcome(outcome("place"))
    path = store.ledger_path("place")
    path.write_text(path.read_text() + "\n## Operator notes\nThe tray edge is 2 cm high.\n")
    for turn in range(MAX_RECENT + 10):
        store.record_tool_outcome(outcome("place", turn, verdict="success"))
    ledger = store.ledger("place")
    assert ledger.runs == MAX_RECENT + 11
    assert len(ledger.recent) == MAX_RECENT
    assert path.read_text().endswith("## Operator notes\nThe tray edge is 2 cm high.\n")


@pytest.mark.parametrize("name", ["..", ".hidden", "a..b", "x" * 80])
def test_ledger_file_names_stay_in_their_folder(tmp_path: Path, name: str) -> None:
    file_name = ledger_file_name(name)
    assert "/" not in file_name and not file_name.startswith(".") and ".." not in file_name
    store = store_at(tmp_path)
    store.record_tool_outcome(outcome(name))
    assert store.ledger_path(name).parent == store.ledger_folder
    assert store.ledger(name).runs == 1
    assert list(store.tool_summaries()) == [name]


# --------------------------------------------------------------------------- Resident


def test_empty_store_has_no_resident_text(tmp_path: Path) -> None:
    assert store_at(tmp_path).resident_text(budget_tokens=1500, estimate=ESTIMATE) == ""


def test_resident_text_shows_memory_without_comments_or_empty_sections(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.memory_file.write_text(
        "# Robot memory\n<!-- a comment for people -->\n\n## Preferences\n"
        "- Put fragile objects down slowly.\n\n## Conventions\n\n## Empty\n"
    )
    store.record_tool_outcome(outcome("pick", verdict="success", detail="held"))
    text = store.resident_text(budget_tokens=1500, estimate=ESTIMATE)
    assert text == (
        "Memory (kept between tasks; written by people and by earlier tasks):\n"
        "# Robot memory\n\n## Preferences\n- Put fragile objects down slowly.\n\n"
        "Tool experience (from earlier tasks):\n"
        "- pick: 1 run(s) - 1 confirmed success"
    )


def test_resident_text_is_cut_at_lines_with_a_marker(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    lines = [f"- preference number {i} about the workspace" for i in range(200)]
    store.memory_file.write_text("## Preferences\n" + "\n".join(lines) + "\n")
    for tool in ("pick", "place", "look"):
        store.record_tool_outcome(outcome(tool))
    text = store.resident_text(budget_tokens=300, estimate=ESTIMATE)
    assert ESTIMATE(text) <= 300
    assert "- preference number 0 about the workspace" in text
    assert "more line(s) of MEMORY.md not shown" in text
    assert "Tool experience" in text  # memory may not crowd out tool experience entirely


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    memory_lines=st.lists(st.text(min_size=0, max_size=120), max_size=40),
    tools=st.lists(st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True), max_size=6),
    budget=st.integers(min_value=0, max_value=400),
)
def test_resident_text_never_exceeds_its_budget(
    memory_lines: list[str], tools: list[str], budget: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = store_at(Path(folder))
        store.memory_file.write_text("\n".join(memory_lines), encoding="utf-8")
        for index, tool in enumerate(tools):
            store.record_tool_outcome(outcome(tool, index, ok=index % 2 == 0, detail="x" * 90))
        text = store.resident_text(budget_tokens=budget, estimate=ESTIMATE)
        assert ESTIMATE(text) <= budget


def test_task_notes_mirror_is_rewritten_atomically(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.mirror_task_notes("Task Notes\ngoal: a\nphase: started")
    store.mirror_task_notes("Task Notes\ngoal: b\nphase: placing")
    text = store.task_notes_file.read_text()
    assert text.endswith("Task Notes\ngoal: b\nphase: placing\n")
    assert "goal: a" not in text


# --------------------------------------------------------------------------- summaries


class CountingSummarizer:
    def __init__(self, name: str = "tiny", *, fail: bool = False) -> None:
        self.name = name
        self.fail = fail
        self.calls: list[str] = []

    def summarize(self, tool: str, ledger: str, *, max_chars: int) -> str:
        self.calls.append(tool)
        if self.fail:
            raise RuntimeError("summarizer is down")
        runs = ToolLedger.parse(tool, ledger).runs
        return f"{tool} worked {runs} time(s)"


def test_summaries_are_recomputed_only_for_changed_ledgers(tmp_path: Path) -> None:
    summarizer = CountingSummarizer()
    store = store_at(tmp_path, summarizer=summarizer)
    for tool in ("pick", "place", "look"):
        store.record_tool_outcome(outcome(tool))
    first = store.tool_summaries()
    assert sorted(summarizer.calls) == ["look", "pick", "place"]
    assert first["pick"] == "- pick worked 1 time(s)"

    assert store.tool_summaries() == first
    assert len(summarizer.calls) == 3
    assert store.last_summary_stats.reused == 3

    store.record_tool_outcome(outcome("pick", 2))
    assert store.tool_summaries()["pick"] == "- pick worked 2 time(s)"
    assert summarizer.calls[3:] == ["pick"]
    assert (store.last_summary_stats.reused, store.last_summary_stats.recomputed) == (2, 1)

    # the cache is on disk: a new session on the same folder reuses it
    again = CountingSummarizer()
    assert store_at(tmp_path, summarizer=again).tool_summaries()["pick"].endswith("2 time(s)")
    assert again.calls == []


def test_a_failing_summarizer_falls_back_to_the_digest_and_is_not_asked_again(
    tmp_path: Path,
) -> None:
    summarizer = CountingSummarizer(fail=True)
    store = store_at(tmp_path, summarizer=summarizer)
    store.record_tool_outcome(outcome("pick", ok=False, verdict="failure", detail="not held"))
    summary = store.tool_summaries()["pick"]
    assert summary.startswith("- pick: 1 run(s) - 1 failed verdict")
    assert store.last_summary_stats.summarizer_failures == 1
    store.tool_summaries()
    assert summarizer.calls == ["pick"]  # same ledger version: not retried this session


def test_digest_is_recomputed_once_a_summarizer_is_available(tmp_path: Path) -> None:
    store_at(tmp_path).record_tool_outcome(outcome("pick"))
    assert store_at(tmp_path).tool_summaries()["pick"].startswith("- pick: 1 run(s)")
    summarizer = CountingSummarizer()
    assert store_at(tmp_path, summarizer=summarizer).tool_summaries()["pick"] == (
        "- pick worked 1 time(s)"
    )
    assert summarizer.calls == ["pick"]


def test_a_damaged_cache_only_costs_a_recomputation(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.record_tool_outcome(outcome("pick"))
    store.tool_summaries()
    (store.ledger_folder / ".summaries.json").write_text("{not json")
    fresh = store_at(tmp_path)
    assert fresh.tool_summaries()["pick"].startswith("- pick:")
    assert fresh.last_summary_stats.recomputed == 1


def test_long_model_summaries_are_bounded(tmp_path: Path) -> None:
    class Wordy(CountingSummarizer):
        def summarize(self, tool: str, ledger: str, *, max_chars: int) -> str:
            return "\n".join(f"line {i} " + "x" * 50 for i in range(40))

    store = store_at(tmp_path, summarizer=Wordy(), summary_max_chars=200)
    store.record_tool_outcome(outcome("pick"))
    summary = store.tool_summaries()["pick"]
    assert len(summary) <= 200 and summary.startswith("- pick: line 0")


def test_sessions_sharing_a_folder_do_not_lose_updates(tmp_path: Path) -> None:
    import threading

    def writer(tool_turns: range) -> None:
        store = store_at(tmp_path)  # its own store and lock object, like another session
        for turn in tool_turns:
            store.record_tool_outcome(outcome("pick", turn))

    threads = [threading.Thread(target=writer, args=(range(i * 25, i * 25 + 25),)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert store_at(tmp_path).ledger("pick").runs == 50
