"""No planted secret, whole or as a 10-character fragment, in any byte the harness wrote.

The attack (tests/secret_scan.py plants, the oracle there counts raw bytes): a session
whose tool results, notes, instructions, sub-agent handoff, summaries, reports and
images all carry three configured secrets where bounds cut them, and an eval on local
workers whose suite instruction carries them. Then every file of the store, the memory
folder, every CLI output (show, context, export, report) and the whole eval folder
(episodes.jsonl, manifest, summary, the episodes' run stores, the page) is scanned.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Harness, HarnessConfig, tool
from harness.cli import main
from harness.events import EventBase
from harness.image_metadata import PNG_SIGNATURE as PNG_HEAD
from harness.image_metadata import strip_metadata
from harness.messages import ImagePart
from harness.redact import Redactor
from tests.fleet_helpers import write_deployment
from tests.secret_scan import (
    CHILD_DECISIONS,
    CUSTOM,
    CUSTOM_PATTERN,
    PARENT_DECISIONS,
    SECRETS,
    VALUE,
    VALUE_ENV,
    PlantedModel,
    Scan,
    dense,
    dense_text,
    jpeg_with_metadata,
    planted_images,
    png_with_text,
    snapshot,
)
from tests.tiers import examples


def session_config(root: Path) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "model": {"provider": "scripted", "name": "planted", "api_key_env": VALUE_ENV},
            "embodiment": None,
            "driver": None,
            "scene": {"enabled": False},
            "skills": {"builtin": False},
            "memory": {"enabled": True, "path": str(root / "memory")},
            "run": {
                "store": str(root / "store"),
                "store_sync": "normal",
                "secret_patterns": [CUSTOM_PATTERN],
                "max_turns": 30,
            },
            "context": {"record_max_chars": 500},
            "subagents": {"enabled": True, "handoff_max_chars": 500},
        }
    )


@pytest.fixture(scope="module")
def session_scan(tmp_path_factory: pytest.TempPathFactory) -> tuple[Scan, list[EventBase]]:
    """Run the planted session once; scan every file and CLI output it leads to."""
    root = tmp_path_factory.mktemp("planted")
    patch = pytest.MonkeyPatch()
    patch.setenv(VALUE_ENV, VALUE)
    try:
        return _run_session(root)
    finally:
        patch.undo()


def _run_session(root: Path) -> tuple[Scan, list[EventBase]]:
    config = session_config(root)
    parent = PlantedModel(PARENT_DECISIONS, name="planted", window=12_000)
    child = PlantedModel(CHILD_DECISIONS, name="planted-child", window=12_000)
    events: list[EventBase] = []
    tasks: list[str] = []
    with Harness.from_config(
        config, model=parent, subagent_model=child, tools=[tool(dense_text), tool(snapshot)]
    ) as harness:
        for instruction, kw in (
            ("Log in with the keys: " + dense(0), {"images": planted_images("operator")}),
            (f"Say hello; the key {CUSTOM} still holds.", {"max_turns": 1}),
        ):
            stream = harness.run_stream(instruction, **kw)
            events.extend(stream)
            tasks.append(stream.task_id)
    scan = Scan()
    scan.add(
        "events handed to the caller", b"\n".join(e.model_dump_json().encode() for e in events)
    )
    out = root / "out"
    out.mkdir()
    store = str(root / "store")
    for task in tasks:
        for argv in (
            ["show", task],
            ["context", task],
            ["context", task, "--all"],
            ["context", task, "--all", "--json"],
        ):
            target = out / ("-".join(argv) + ".txt")
            _cli_to(target, [*argv, "--store", store])
        for what in ("events", "items", "archive"):
            main(
                [
                    "export",
                    task,
                    "--what",
                    what,
                    "-o",
                    str(out / f"{task}-{what}.jsonl"),
                    "--store",
                    store,
                ]
            )
        main(["report", task, "-o", str(out / f"{task}.html"), "--store", store])
    scan.add_tree(root / "store", "store/")
    scan.add_tree(root / "memory", "memory/")
    scan.add_tree(out, "cli/")
    assert {"decide", "summarize", "consolidate"} <= set(parent.purposes) | set(child.purposes), (
        parent.purposes
    )
    return scan, events


def _cli_to(target: Path, argv: list[str]) -> None:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(argv)
    assert code in (0, 1), (argv, code, buffer.getvalue()[-500:])
    target.write_text(buffer.getvalue(), encoding="utf-8")


def test_the_session_did_what_the_attack_needs(
    session_scan: tuple[Scan, list[EventBase]],
) -> None:
    scan, events = session_scan
    kinds = {e.type for e in events}
    assert {"handoff", "compaction", "tool_result"} <= kinds, sorted(kinds)
    truncated = [e for e in events if e.type == "tool_result" and "characters cut" in e.text]
    assert truncated, "no tool result was bounded"
    done = [e for e in events if e.type == "done"]
    assert [d.status for d in done] == ["completed", "max_turns"]  # type: ignore[attr-defined]
    assert scan.files >= 20 and scan.bytes > 100_000


def test_no_planted_secret_or_fragment_in_any_file_of_the_session(
    session_scan: tuple[Scan, list[EventBase]],
) -> None:
    scan, _ = session_scan
    assert scan.whole == 0 and scan.fragments == 0, "\n".join(scan.where[:20])


# ====================================================================== images


def test_metadata_is_stripped_from_every_image_and_the_pixels_kept() -> None:
    from harness.images import decode_image

    secrets = " ".join(SECRETS.values())
    for data, media in (
        (jpeg_with_metadata(secrets), "image/jpeg"),
        (png_with_text(secrets), "image/png"),
    ):
        planted = Scan()
        planted.add("as planted", data)
        assert planted.whole >= 3, "the planted file holds the secrets"
        image = ImagePart(data=data, media_type=media, width=1, height=1)
        clean = Scan()
        clean.add("stored", image.data)
        assert clean.whole == 0 and clean.fragments == 0, clean.where
        assert strip_metadata(image.data) == image.data  # idempotent
        original = ImagePart.model_construct(data=data, media_type=media, width=1, height=1)
        assert (decode_image(image) == decode_image(original)).all()  # same pixels


# ====================================================================== the eval


@pytest.mark.sim
def test_no_planted_secret_in_the_eval_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pybullet")
    monkeypatch.setenv(VALUE_ENV, VALUE)
    write_deployment(
        tmp_path,
        model={"provider": "planner", "name": "tabletop-planner", "api_key_env": VALUE_ENV},
        run={"max_turns": 6, "store": ".harness", "secret_patterns": [CUSTOM_PATTERN]},
    )
    suite = tmp_path / "suite.yaml"
    instruction = "put the red cube in the tray; the keys are " + dense(0, 2500)
    suite.write_text(
        yaml.safe_dump(
            {
                "suite": "planted",
                "config": "deployment.yaml",
                "check": "programmatic",
                "tasks": [
                    {"name": "pick", "instruction": instruction, "seeds": [0], "max_turns": 6}
                ],
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "eval"
    assert main(["eval", str(suite), "--workers", "1", "--out", str(out)]) in (0, 1)
    assert main(["eval-report", str(out)]) == 0
    printed = capsys.readouterr()
    scan = Scan()
    scan.add_tree(out, "eval/")
    scan.add("eval output", (printed.out + printed.err).encode())
    assert (out / "episodes.jsonl").is_file() and scan.files >= 5
    assert scan.whole == 0 and scan.fragments == 0, "\n".join(scan.where[:20])


@settings(max_examples=examples(60), deadline=None)
@given(
    text=st.text(alphabet=string.ascii_letters + string.digits + " =-_", min_size=12, max_size=80),
    size=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    fmt=st.sampled_from(["JPEG", "PNG"]),
)
def test_stripping_keeps_no_metadata_text_and_the_same_pixels(
    text: str, size: tuple[int, int], fmt: str
) -> None:
    """Any metadata text, any size, either format: none of it survives, the pixels do."""
    from harness.images import decode_image

    data = jpeg_with_metadata(text, size=size) if fmt == "JPEG" else png_with_text(text, size=size)
    media = f"image/{fmt.lower()}"
    image = ImagePart(data=data, media_type=media, width=size[0], height=size[1])
    assert text.encode() not in image.data
    original = ImagePart.model_construct(data=data, media_type=media, width=1, height=1)
    assert (decode_image(image) == decode_image(original)).all()


@settings(max_examples=examples(300), deadline=None)
@given(data=st.binary(max_size=300), head=st.sampled_from([b"", b"\xff\xd8", PNG_HEAD]))
def test_stripping_never_fails_on_arbitrary_bytes(data: bytes, head: bytes) -> None:
    """A broken or foreign file comes back as it was, or shorter; never an exception."""
    out = strip_metadata(head + data)
    assert isinstance(out, bytes) and len(out) <= len(head + data)


@settings(max_examples=examples(400), deadline=None)
@given(
    key=st.text(alphabet=string.ascii_letters + string.digits, min_size=11, max_size=48),
    data=st.data(),
    before=st.text(max_size=20),
    after=st.text(max_size=20),
)
def test_any_ten_characters_of_a_known_secret_are_redacted(
    key: str, data: st.DataObject, before: str, after: str
) -> None:
    """What a bound leaves of a configured value (any run of 10+ of its characters, at its
    beginning, its end or its middle) is redacted wherever it appears. The run is drawn
    inside the key (a cut drawn blind and filtered to 10+ characters was rejected so often
    that hypothesis's health check failed the test on some seeds)."""
    start = data.draw(st.integers(0, len(key) - 10), label="start")
    end = data.draw(st.integers(start + 10, len(key)), label="end")
    fragment = key[start:end]
    out = Redactor(literals=[key]).text(before + fragment + after)
    windows = {key[i : i + 10] for i in range(len(key) - 9)}
    background = before + after
    assert not [w for w in windows if w in out and w not in background], out


NOISE = " -_.,;:!?/"
"""Characters no key below contains: a window of a key can only come from the key."""


@settings(max_examples=examples(300), deadline=None)
@given(
    key=st.text(alphabet=string.ascii_letters + string.digits, min_size=11, max_size=120),
    pieces=st.lists(
        st.tuples(st.integers(0, 120), st.integers(0, 120), st.text(alphabet=NOISE, max_size=4)),
        min_size=1,
        max_size=6,
    ),
)
def test_overlapping_and_adjacent_fragments_leave_no_window_and_keep_everything_else(
    key: str, pieces: list[tuple[int, int, str]]
) -> None:
    """Fragments of a key back to back, overlapping or between other text: no ten
    characters of the key in a row survive, and every character that is not the key's is
    kept, in order (the oracle reads windows and characters, not the redactor's runs)."""
    text = "".join(key[min(a, b) : max(a, b)] + noise for a, b, noise in pieces)
    out = Redactor(literals=[key]).text(text)
    windows = {key[i : i + 10] for i in range(len(key) - 9)}
    remaining = out.replace("[REDACTED]", "\0")
    assert not [w for w in windows if w in remaining], out
    assert [c for c in remaining if c in NOISE] == [c for c in text if c in NOISE]
