"""A damaged run store is reported, not crashed on.

Found in the third attack round: a truncated ``runs.db`` or an overwritten header ended
``harness show``, ``runs``, ``report`` and ``resume`` in ``sqlite3.DatabaseError``
tracebacks; one row with invalid JSON or a wrong type (a task's usage or evidence, an
event) in ``JSONDecodeError`` / ``ValidationError`` tracebacks, and the console's past-runs
routes in 500 "Exception in ASGI application"; bytes flipped inside a stored image went
unnoticed; a zero-length store read as an empty one without a word.

Every damage here is made from outside the harness (SQLite's own connection, plain file
writes) on a copy of a real recorded session; the oracle is the command's exit code, its
stderr (one line, no traceback, naming the store and what is damaged) and what it still
prints of the intact part.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import EXIT_STORE_DAMAGED, main
from harness.store import STORE_FILENAME
from tests.recorded import RecordedSession, record_session

COMMANDS: list[list[str]] = [
    ["runs"],
    ["show", "last"],
    ["report", "last"],
    ["context", "last"],
    ["resume", "last"],
    ["runs", "--check"],
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordedSession:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return record_session(tmp_path_factory.mktemp("damage-source"), monkeypatch)


@pytest.fixture
def store(recorded: RecordedSession, tmp_path: Path) -> Path:
    """A private copy of the recorded store (every test damages its own)."""
    copy = tmp_path / "store"
    shutil.copytree(recorded.store, copy)
    return copy


def _run(capsys: pytest.CaptureFixture[str], store: Path, *args: str) -> tuple[int, str, str]:
    extra = ["--output", str(store.parent / "out.html")] if args[0] == "report" else []
    code = main([*args, "--store", str(store), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _sql(store: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(store / STORE_FILENAME)
    conn.execute(statement, params)
    conn.commit()
    conn.close()


def _assert_reported(code: int, err: str, *names: str) -> None:
    assert "Traceback" not in err, err
    assert code == EXIT_STORE_DAMAGED, (code, err)
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert lines, "nothing said on stderr"
    assert all(len(line) < 400 for line in lines), err
    for name in names:
        assert name in err, (name, err)


# ------------------------------------------------------------------ the file itself


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _overwrite_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[:100] = b"\xa5" * 100
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _overwrite_header], ids=["truncated", "header"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_damaged_file_is_one_line_naming_the_store(
    store: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
    command: list[str],
) -> None:
    damage(store / STORE_FILENAME)
    code, _, err = _run(capsys, store, *command)
    _assert_reported(code, err, str(store))


def test_a_zero_length_store_says_it_is_empty(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (store / STORE_FILENAME).write_bytes(b"")
    for command in COMMANDS:
        code, _out, err = _run(capsys, store, *command)
        _assert_reported(code, err, str(store), "empty")
    assert (store / STORE_FILENAME).stat().st_size == 0, "a reader wrote to it"


# ------------------------------------------------------------------ one bad row


def test_a_task_with_invalid_usage_json_is_named_and_the_others_listed(
    recorded: RecordedSession, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sql(store, "UPDATE tasks SET usage = '{not json' WHERE id = ?", recorded.first_task)
    code, out, err = _run(capsys, store, "runs")
    _assert_reported(code, err, recorded.first_task, "usage")
    assert recorded.second_task in out  # the intact task is still listed
    code, out, err = _run(capsys, store, "runs", "--json")
    _assert_reported(code, err, recorded.first_task)
    listed = [json.loads(line)["id"] for line in out.splitlines()]
    assert recorded.second_task in listed


def test_evidence_of_the_wrong_type_is_named(
    recorded: RecordedSession, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = json.dumps({"check": 5, "conditions": "all of them"})
    _sql(store, "UPDATE tasks SET evidence = ? WHERE id = ?", bad, recorded.second_task)
    code, out, err = _run(capsys, store, "show", recorded.second_task)
    _assert_reported(code, err, recorded.second_task, "evidence")
    assert "done" in out  # its timeline is still shown


def test_an_event_with_invalid_json_is_skipped_and_named(
    recorded: RecordedSession, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = sqlite3.connect(store / STORE_FILENAME)
    seq = conn.execute(
        "SELECT seq FROM events WHERE task_id = ? AND type = 'tool_call' ORDER BY pos LIMIT 1",
        (recorded.first_task,),
    ).fetchone()[0]
    conn.execute(
        'UPDATE events SET data = \'{"type": "tool_call", \' WHERE session_id = ? AND seq = ?',
        (recorded.session_id, seq),
    )
    conn.commit()
    conn.close()
    code, out, err = _run(capsys, store, "show", recorded.first_task)
    _assert_reported(code, err, recorded.first_task, f"event {seq}")
    assert "done" in out
    code, out, err = _run(capsys, store, "report", recorded.first_task)
    _assert_reported(code, err, recorded.first_task)
    assert (store.parent / "out.html").is_file()


def test_an_event_of_the_wrong_shape_is_skipped_and_named(
    recorded: RecordedSession, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sql(
        store,
        "UPDATE events SET data = json_set(data, '$.turn', 'seven') "
        "WHERE task_id = ? AND type = 'prompt_snapshot' AND turn = 1",
        recorded.first_task,
    )
    code, out, err = _run(capsys, store, "context", recorded.first_task)
    _assert_reported(code, err, recorded.first_task, "prompt_snapshot")
    assert "turn" in out  # the last turn's context is still shown


def test_flipped_bytes_in_a_stored_image_are_found(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = sqlite3.connect(store / STORE_FILENAME)
    sha, data = conn.execute("SELECT sha256, data FROM images ORDER BY sha256 LIMIT 1").fetchone()
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0xFF
    conn.execute("UPDATE images SET data = ? WHERE sha256 = ?", (bytes(flipped), sha))
    conn.commit()
    conn.close()
    code, out, err = _run(capsys, store, "runs", "--check")
    _assert_reported(code, out + err, sha[:16], "image")
    code, _, err = _run(capsys, store, "report", "last")
    assert "Traceback" not in err


def test_an_intact_store_passes_the_check(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, store, "runs", "--check")
    assert code == 0, err
    assert "no damage" in out and "integrity" in out


# ------------------------------------------------------------------ faults at every point


def test_damage_anywhere_in_the_file_never_gives_a_traceback(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Overwrite 512 bytes at offsets across the file (and truncate there): every reading
    command ends with one of its documented exit codes (0, 1; 2 for a usage or config
    error, as resume's recorded scripted model is; 4 damaged), never a traceback, and
    ``runs --check`` finds every truncation."""
    path = store / STORE_FILENAME
    original = path.read_bytes()
    rng = random.Random(41)
    offsets = sorted({0, 100, *(rng.randrange(0, len(original)) for _ in range(14))})
    tries = 0
    for offset in offsets:
        for mode in ("overwrite", "truncate"):
            data = bytearray(original)
            if mode == "overwrite":
                data[offset : offset + 512] = bytes(rng.randrange(256) for _ in range(512))
            else:
                del data[offset:]
            for command in COMMANDS:
                path.write_bytes(bytes(data))
                for side in store.glob(f"{STORE_FILENAME}-*"):
                    side.unlink()
                code, _, err = _run(capsys, store, *command)
                tries += 1
                assert "Traceback" not in err, (offset, mode, command, err)
                assert code in (0, 1, 2, EXIT_STORE_DAMAGED), (offset, mode, command, code, err)
                if code == 2:
                    # the one line that says which run 'last' took is a notice, not the error
                    lines = [
                        x for x in err.strip().splitlines() if not x.startswith("last task in ")
                    ]
                    assert len(lines) == 1, err
                if command == ["runs", "--check"] and mode == "truncate":
                    assert code == EXIT_STORE_DAMAGED, (offset, err)
    assert tries == len(offsets) * 2 * len(COMMANDS)
