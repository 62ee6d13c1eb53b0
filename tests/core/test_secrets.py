"""No planted key survives, whole or in fragments of 10+ characters, in any sink.

The attacker's test first (tests/secret_planting.py plants the keys and collects every
sink; its oracle counts raw bytes and knows nothing of the redactor), then the stream
redaction on its own: every split offset of a key through a real Harness, and
hypothesis over arbitrary text and arbitrary cuts.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig
from harness.events import ModelDeltaEvent, ModelResponseEvent
from harness.messages import ModelResponse, ToolCall, new_id
from harness.providers.base import Delta
from harness.redact import REDACTED, Redactor
from harness.store import MemoryRunStore
from tests.secret_planting import (
    API_KEY_ENV,
    API_KEY_VALUE,
    FRAGMENT_CHARS,
    OPENAI_KEY,
    PLANTED,
    Leaks,
    SplitStreamModel,
    Splitter,
    chunks_of,
    halves_of_the_key,
    leaks_in,
    one_char,
    plant_and_run,
)
from tests.tiers import examples

pytest.importorskip("mcp")
pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif(os.name != "posix", reason="MCP stderr goes through a pipe"),
]

CUSTOM_SECRET = "ROBOT-SECRET-778899"
CUSTOM_PATTERN = r"ROBOT-SECRET-\d{6}"


# ====================================================================== every sink


@pytest.mark.parametrize(
    "split",
    [one_char, halves_of_the_key, chunks_of(7)],
    ids=["one character per delta", "key cut in half", "7-character deltas"],
)
def test_no_planted_key_or_fragment_in_any_sink(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    split: Splitter,
) -> None:
    run = plant_and_run(tmp_path, monkeypatch, capsys, split)

    # The run did what the attack needs: both tasks completed, memory's model was asked
    # for lessons and summaries, every kind of sink exists and holds the redacted spots.
    done = [e for e in run.events if e.type == "done"]
    assert [d.status for d in done] == ["completed", "completed"]  # type: ignore[attr-defined]
    assert {"consolidate", "summarize"} <= set(run.purposes)
    sinks = run.sinks
    for expected in (
        "store file runs.db",
        "store file mcp/leaky.log",
        "memory file TASK_NOTES.md",
        "memory file MEMORY.md",
        "memory file tool_experience/flaky_login.md",
        "memory file tool_experience/.summaries.json",
    ):
        assert expected in sinks, f"{expected} was not written: {sorted(sinks)}"
    log = sinks["store file mcp/leaky.log"].decode()
    assert log.count("credential [REDACTED] in use") >= 4, log  # start-up and leak, 2 keys
    assert "log notification: credentials [REDACTED], [REDACTED]" in log, log
    for name in (
        "events handed to the caller",
        "memory file TASK_NOTES.md",
        "memory file MEMORY.md",
        "memory file tool_experience/flaky_login.md",
    ):
        assert REDACTED.encode() in sinks[name], f"{name} holds no redacted spot"

    report = {name: leaks_in(data, name) for name, data in sinks.items()}
    total = sum(report.values(), Leaks())
    assert total.whole == 0 and total.fragments == 0, "\n".join(total.where)


# ====================================================================== streams


def _config(root: Path) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "model": {"provider": "scripted", "name": "planted", "api_key_env": API_KEY_ENV},
            "embodiment": None,
            "driver": None,
            "memory": {"enabled": False},
            "skills": {"builtin": False},
            "run": {"store": None, "secret_patterns": [CUSTOM_PATTERN]},
        }
    )


TEXT = f"Key {OPENAI_KEY}, provider {API_KEY_VALUE}, robot {CUSTOM_SECRET}."


def test_a_key_split_in_two_at_every_offset_never_leaves_in_fragments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cut of the answer (text and tool arguments) into two deltas, through a real
    Harness: the caller's events and the store hold no fragment, and the joined deltas
    are exactly the redacted ``model_response``."""
    monkeypatch.setenv(API_KEY_ENV, API_KEY_VALUE)
    cuts = range(1, len(TEXT))
    arguments = {"token": OPENAI_KEY}
    wire_arguments = json.dumps(arguments)
    answers = [
        ModelResponse(
            text=TEXT,
            tool_calls=[ToolCall(id=new_id("call"), name="nothing", arguments=arguments)],
        )
        for _ in cuts
    ]
    text_cuts = iter(cuts)
    argument_cuts = itertools.cycle(range(1, len(wire_arguments)))

    def split(text: str) -> list[str]:
        cut = next(argument_cuts) if text == wire_arguments else next(text_cuts)
        return [text[:cut], text[cut:]]

    model = SplitStreamModel(answers, split=split)
    store = MemoryRunStore()
    tried = 0
    with Harness(_config(tmp_path), model=model, store=store, tools=[nothing]) as harness:
        for _ in cuts:
            events = list(harness.run_stream("go", max_turns=1))
            harness.reset_session()
            tried += 1
            deltas = [e for e in events if isinstance(e, ModelDeltaEvent)]
            text = "".join(d.delta for d in deltas if d.kind == "text")
            streamed_arguments = "".join(d.delta for d in deltas if d.kind == "tool_arguments")
            [response] = [e for e in events if isinstance(e, ModelResponseEvent)]
            assert text == response.text
            assert response.text.count(REDACTED) == 3
            assert streamed_arguments == json.dumps({"token": REDACTED})
            blob = "\n".join(e.model_dump_json() for e in events).encode()
            assert leaks_in(blob) == Leaks(), leaks_in(blob, "events").where
    stored = "\n".join(e.model_dump_json() for e in store.events).encode()
    assert leaks_in(stored) == Leaks(), leaks_in(stored, "store").where
    # the stored deltas of every task join to that task's stored model_response
    for task in {e.task_id for e in store.events}:
        kept = [e for e in store.events if e.task_id == task]
        joined = "".join(
            e.delta for e in kept if isinstance(e, ModelDeltaEvent) and e.kind == "text"
        )
        [stored_response] = [e for e in kept if isinstance(e, ModelResponseEvent)]
        assert joined == stored_response.text
    assert CUSTOM_SECRET.encode() not in stored
    assert tried == len(TEXT) - 1


def nothing(token: str) -> str:
    """Do nothing with a token.

    Args:
        token: Ignored.
    """
    return "ok"


class HalfAKeyThenCancel:
    """Streams the first part of each key, then hangs until the operator's cancel."""

    name = "half"
    context_window = 200_000
    image_cost = "generic"

    def __init__(self) -> None:
        self.cancel = False

    def stream(self, request: Any, *, cancelled: Any = None) -> Any:
        yield Delta("text", "my key is ")
        yield Delta("text", OPENAI_KEY[:30])
        yield Delta("text", f" and the provider's {API_KEY_VALUE[:20]}")
        self.cancel = True
        while cancelled is not None and not cancelled():  # in flight when cancelled
            time.sleep(0.01)


def test_a_cancelled_answer_releases_nothing_it_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The held tail of an answer that never completes (the first part of a key) is not
    released, neither as a delta nor in the ``model_discarded`` event: a cancel mid-key
    leaves no fragment in the events or the store."""
    monkeypatch.setenv(API_KEY_ENV, API_KEY_VALUE)
    model = HalfAKeyThenCancel()
    store = MemoryRunStore()
    with Harness(_config(tmp_path), model=model, store=store) as harness:
        events = list(harness.run_stream("go", should_cancel=lambda: model.cancel))
    assert events[-1].status == "cancelled"  # type: ignore[attr-defined]
    deltas = "".join(e.delta for e in events if isinstance(e, ModelDeltaEvent))
    [discarded] = [e for e in events if e.type == "model_discarded"]
    assert discarded.text == deltas  # type: ignore[attr-defined]
    assert deltas.startswith("my key is ")
    blob = "\n".join(e.model_dump_json() for e in [*events, *store.events]).encode()
    assert leaks_in(blob) == Leaks(), leaks_in(blob, "events").where


def _oracle_windows() -> list[str]:
    keys = [*PLANTED.values(), CUSTOM_SECRET]
    return [k[i : i + FRAGMENT_CHARS] for k in keys for i in range(len(k) - FRAGMENT_CHARS + 1)]


WINDOWS = _oracle_windows()


def _redactor(monkeypatch: pytest.MonkeyPatch) -> Redactor:
    monkeypatch.setenv(API_KEY_ENV, API_KEY_VALUE)
    return Redactor([CUSTOM_PATTERN], env_vars=[API_KEY_ENV])


def test_every_pair_of_cuts_inside_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exhaustive: the OpenAI-shaped key cut into three pieces at every pair of offsets."""
    redactor = _redactor(monkeypatch)
    text = f"a {OPENAI_KEY} b"
    start = 2
    tried = 0
    for i in range(start, start + len(OPENAI_KEY)):
        for j in range(i, start + len(OPENAI_KEY) + 1):
            stream = redactor.stream()
            out = stream.feed(text[:i]) + stream.feed(text[i:j]) + stream.feed(text[j:])
            out += stream.finish()
            assert out == f"a {REDACTED} b", (i, j, out)
            tried += 1
    assert tried == sum(len(OPENAI_KEY) - k + 1 for k in range(len(OPENAI_KEY)))


_filler = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40
) | st.sampled_from(["s", "sk-", "sk-proj-", "bearer ", "api_key=", "hpk_", "ROBOT-", "\n"])


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(
        st.tuples(_filler, st.sampled_from([*PLANTED.values(), CUSTOM_SECRET])), max_size=4
    ),
    tail=_filler,
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_stream_redaction_equals_whole_text_redaction(
    parts: list[tuple[str, str]], tail: str, cuts: list[int]
) -> None:
    """Any text, any planted keys, any cuts: the released pieces joined are exactly the
    redaction of the whole text, and no piece or join carries a fragment of a key."""
    redactor = Redactor([CUSTOM_PATTERN], literals=[API_KEY_VALUE])
    text = "".join(f"{a}{b}" for a, b in parts) + tail
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    stream = redactor.stream()
    released = [stream.feed(piece) for piece in pieces] + [stream.finish()]
    joined = "".join(released)
    assert joined == redactor.text(text)
    # An independent check: the oracle's windows, not the redactor's patterns. A window
    # may occur by chance in the filler, so only count what the raw text did not hold
    # outside the keys.
    background = "".join(a for a, _ in parts) + tail
    for window in WINDOWS:
        if window not in background:
            assert window not in joined, window
    # each piece is final: redacting it again changes nothing (the store does)
    assert [redactor.text(piece) for piece in released] == released


def test_ordinary_prose_is_held_back_by_a_few_characters_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stream stays live: plain text is released as it comes."""
    redactor = _redactor(monkeypatch)
    stream = redactor.stream()
    words = [
        "The",
        "red",
        "cube",
        "is",
        "on",
        "the",
        "tray;",
        "placing",
        "the",
        "blue",
        "one",
        "next",
        "to",
        "it",
        "now.",
    ]
    held = []
    for word in words:
        stream.feed(word + " ")
        held.append(stream.held)
    assert max(held) <= 3, held
    assert stream.finish() == ""


def test_bad_secret_patterns_are_config_errors() -> None:
    from harness.assembly.build import build_redactor
    from harness.errors import ConfigError

    for pattern, why in (("(unclosed", "not a regular expression"), ("x*", "empty string")):
        config = HarnessConfig.model_validate({"run": {"secret_patterns": ["ok-\\d+", pattern]}})
        with pytest.raises(ConfigError, match=re.escape("run.secret_patterns.1")) as info:
            build_redactor(config)
        assert why in str(info.value)


# ====================================================================== the pieces


WRITER = """
import sys, time
key = sys.argv[1]
sys.stderr.write("boot: token " + key[:9]); sys.stderr.flush(); time.sleep(0.05)
sys.stderr.write(key[9:30]); sys.stderr.flush(); time.sleep(0.05)
sys.stderr.write(key[30:] + " ok\\n"); sys.stderr.flush()
sys.stderr.write("last words " + key)  # no newline: released only at the end
"""


def test_a_server_log_is_redacted_across_writes_and_complete_after_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a subprocess writes to the log's descriptor reaches the file only redacted,
    a key split across three writes included, and all of it is in the file as soon as
    ``sync()`` returns after the process ended (a crash's last words)."""
    import subprocess
    import sys

    from harness.mcp.stderr_log import RedactedLog

    path = tmp_path / "server.log"
    log = RedactedLog(path, _redactor(monkeypatch))
    log.write("--- server start 1\n")
    process = subprocess.Popen([sys.executable, "-c", WRITER, OPENAI_KEY], stderr=log)
    log.close()  # our end: the process keeps writing to its own
    process.wait(timeout=30)
    log.sync()
    text = path.read_text()
    assert text == (f"--- server start 1\nboot: token {REDACTED} ok\nlast words {REDACTED}"), text
    assert leaks_in(path.read_bytes()) == Leaks()


def test_memory_files_are_redacted_but_peoples_text_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store redacts what it writes whole (Task Notes, ledgers) and the lessons it
    adds to MEMORY.md; a line a person wrote there is theirs and stays byte for byte."""
    from memory.store import MemoryStore
    from memory.task_record import TaskRecord, ToolOutcome

    class Proposer:
        name = "a model that saw the key"

        def propose(self, record: TaskRecord) -> list[dict[str, Any]]:
            return [{"text": f"The provider key is {API_KEY_VALUE}.", "confidence": 0.9}]

    redactor = _redactor(monkeypatch)
    store = MemoryStore(tmp_path, proposer=Proposer(), redact=redactor.text)
    hand = f"- Use the staging controller (its key is {OPENAI_KEY}).\n"
    store.memory_file.write_text("# Robot memory\n\n## Preferences\n" + hand + "\n## Conventions\n")
    store.mirror_task_notes(f"goal: log in with {API_KEY_VALUE}")
    store.record_tool_outcome(
        ToolOutcome(turn=1, tool="login", ok=False, verdict=None, detail=f"bad {OPENAI_KEY}")
    )
    record = TaskRecord(
        task_id="t", instruction="log in", status="completed", report="ok", notes=""
    )
    assert store.consolidate(record).kept
    for path in (store.task_notes_file, store.ledger_path("login")):
        assert leaks_in(path.read_bytes()) == Leaks(), path.read_text()
    memory = store.memory_file.read_text()
    assert hand in memory  # people's text, untouched
    assert f"The provider key is {REDACTED}." in memory
    assert API_KEY_VALUE not in memory


def test_parts_built_by_hand_adopt_the_sessions_redactor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store and a memory built without a redactor of their own, given to a Harness
    whose config names the API-key variable, redact its value like built ones."""
    from harness.providers import ScriptedModel, call, reply
    from harness.store import SQLiteRunStore
    from memory.store import MemoryStore
    from tests.secret_planting import leaky_status

    monkeypatch.setenv(API_KEY_ENV, API_KEY_VALUE)
    config = _config(tmp_path)
    config.memory.enabled = True
    store = SQLiteRunStore(tmp_path / "store")
    memory = MemoryStore(tmp_path / "memory")
    model = ScriptedModel(
        [
            call("leaky_status"),
            call("update_task_notes", add_notes=[f"provider {API_KEY_VALUE}"]),
            reply(f"done with {API_KEY_VALUE}"),
        ]
    )
    with Harness(config, model=model, store=store, memory=memory, tools=[leaky_status]) as h:
        h.run(f"read the status; the provider key is {API_KEY_VALUE}")
    store.close()
    files = [p for root in ("store", "memory") for p in (tmp_path / root).rglob("*")]
    assert any(p.name == "TASK_NOTES.md" for p in files)
    for path in files:
        if path.is_file():
            assert leaks_in(path.read_bytes()) == Leaks(), path
