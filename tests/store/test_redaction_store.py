"""Secrets in tool outputs, error messages and configuration never reach the run store,
an export or a report (the raw database files are searched byte by byte)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.redact import REDACTED
from harness.store import MemoryRunStore
from harness.store.reader import RunLog
from tests.recorded import SECRETS, RecordedSession, record_session


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordedSession:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return record_session(tmp_path_factory.mktemp("redaction"), monkeypatch)


def _assert_clean(data: bytes, where: str) -> None:
    for secret in SECRETS:
        assert secret.encode() not in data, f"{secret!r} leaked into {where}"


def test_no_secret_in_any_file_of_the_store(recorded: RecordedSession) -> None:
    files = [p for p in recorded.store.rglob("*") if p.is_file()]
    assert any(p.name == "runs.db" for p in files)
    for path in files:
        _assert_clean(path.read_bytes(), str(path))


def test_secrets_are_replaced_where_they_were(recorded: RecordedSession) -> None:
    with RunLog(recorded.store) as log:
        results = {
            e.name: e.text  # type: ignore[union-attr]
            for e in log.events(task_id=recorded.first_task, types=["tool_result"])
        }
        config = log.session(recorded.session_id).config
        archived = [entry["text"] for entry in log.archive_entries(recorded.first_task)]
    assert results["leaky_status"].count(REDACTED) == 3  # pattern, key shape, env value
    assert "Bearer" not in results["gripper_login"] and REDACTED in results["gripper_login"]
    assert config["model"]["options"]["headers"]["Authorization"] == REDACTED
    assert config["model"]["api_key_env"] == "HARNESS_TEST_PROVIDER_KEY"  # a name, kept
    assert any(REDACTED in text for text in archived)


@pytest.mark.parametrize("what", ["events", "items", "archive"])
def test_no_secret_in_exports(
    recorded: RecordedSession, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"{what}.jsonl"
    argv = ["export", recorded.first_task, "--store", str(recorded.store), "--what", what]
    assert main([*argv, "--format", "jsonl", "-o", str(out)]) == 0
    _assert_clean(out.read_bytes(), f"export of {what}")
    assert main(argv) == 0  # to standard output
    _assert_clean(capsys.readouterr().out.encode(), f"export of {what} to stdout")


def test_no_secret_in_the_report_or_the_timeline(
    recorded: RecordedSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "report.html"
    store = str(recorded.store)
    assert main(["report", recorded.first_task, "--store", store, "-o", str(page)]) == 0
    _assert_clean(page.read_bytes(), "the report")
    assert main(["show", recorded.first_task, "--store", store]) == 0
    _assert_clean(capsys.readouterr().out.encode(), "harness show")


def test_the_memory_store_redacts_too() -> None:
    from harness.events import ToolResultEvent

    store = MemoryRunStore()
    store.append_event(ToolResultEvent(call_id="c", name="t", text=f"key {SECRETS[2]}"))
    store.archive_put("archive://t/c", f"Bearer {SECRETS[3]}", task_id="t", call_id="c", tool="t")
    assert SECRETS[2] not in store.events[0].text  # type: ignore[attr-defined]
    assert SECRETS[3] not in (store.archive_get("archive://t/c") or "")
