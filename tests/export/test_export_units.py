"""The live sink and the translator under attack: a viewer that hangs or raises never
blocks or breaks the loop, every event is either sent or counted as dropped, order is
kept, secrets never reach a viewer, and the timeline never runs backwards.

The fakes here are viewer outputs (our own protocol), so this is a unit test; the real
viewers are in tests/export/test_export_live.py.
"""

from __future__ import annotations

import math
import random
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.events import ObservationEvent, SceneUpdateEvent, ToolResultEvent
from harness.export.live import LiveSink, parse_rerun_target
from harness.export.records import Boxes, LogLine, Payload, Pose, Record
from harness.export.translate import Translator
from harness.redact import Redactor
from tests.tiers import examples

HANG_GUARD_S = 30.0
SECRET = "HXS-q8W2nB5vK1mZ7tR4"


class Output:
    """A viewer output that records what it gets; it may block or raise."""

    def __init__(self, *, gate: threading.Event | None = None, fail_every: int = 0) -> None:
        self.records: list[Record] = []
        self.gate = gate
        self.fail_every = fail_every
        self.calls = 0
        self.closed = False

    def write(self, record: Record) -> None:
        self.calls += 1
        if self.gate is not None:
            self.gate.wait()
        if self.fail_every and self.calls % self.fail_every == 0:
            raise RuntimeError("viewer went away")
        self.records.append(record)

    def close(self) -> None:
        self.closed = True


def _result(seq: int, text: str = "ok") -> ToolResultEvent:
    return ToolResultEvent(call_id=f"c{seq}", name="look", text=text, seq=seq, turn=seq, time=seq)


def _guarded(target: Any) -> None:
    """Run ``target`` on a thread; fail (never hang) when it does not return."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), "the caller was blocked"


def test_a_hung_viewer_never_blocks_the_caller() -> None:
    gate = threading.Event()
    output = Output(gate=gate)
    sink = LiveSink([output], maxsize=64)
    calls = 20_000

    def feed() -> None:
        for seq in range(1, calls + 1):
            sink(_result(seq))

    _guarded(feed)
    assert sink.received == calls
    # 64 queued, at most one taken by the (hung) sender thread: the rest were dropped.
    assert calls - 64 - 1 <= sink.dropped <= calls - 64
    gate.set()
    _guarded(sink.close)
    assert sink.sent + sink.dropped == sink.received
    assert output.closed


def test_close_returns_while_a_viewer_hangs() -> None:
    gate = threading.Event()
    sink = LiveSink([Output(gate=gate)], maxsize=4)
    for seq in range(1, 50):
        sink(_result(seq))
    _guarded(lambda: sink.close(timeout=0.5))
    gate.set()
    sink(_result(99))  # after close: ignored, never raises
    assert sink.received == 49


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.integers(min_value=0, max_value=300),
    maxsize=st.integers(min_value=1, max_value=64),
    fail_every=st.integers(min_value=0, max_value=7),
    slow=st.booleans(),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_every_event_is_sent_or_counted_and_order_is_kept(
    events: int, maxsize: int, fail_every: int, slow: bool, seed: int
) -> None:
    rng = random.Random(seed)
    gate = threading.Event()
    faulty, healthy = Output(fail_every=fail_every), Output(gate=gate if slow else None)
    sink = LiveSink([faulty, healthy], maxsize=maxsize)
    for seq in range(1, events + 1):
        sink(_result(seq))
        if slow and rng.random() < 0.05:
            gate.set()
    gate.set()
    sink.close(timeout=HANG_GUARD_S)
    assert sink.received == events
    assert sink.sent + sink.dropped == events
    assert sink.failures == faulty.calls - len(faulty.records)
    seen = [r.event.seq for r in healthy.records if isinstance(r, Payload)]
    assert seen == sorted(seen) and len(seen) == sink.sent  # a failing viewer costs no other
    lines = [r for r in healthy.records if isinstance(r, LogLine)]
    assert len(lines) == sink.sent


@settings(max_examples=examples(100), deadline=None)
@given(
    prefix=st.text(max_size=40),
    suffix=st.text(max_size=40),
    where=st.sampled_from(["text", "name"]),
)
def test_no_secret_reaches_a_viewer(prefix: str, suffix: str, where: str) -> None:
    output = Output()
    sink = LiveSink([output], redactor=Redactor([r"HXS-[A-Za-z0-9]{16}"]))
    planted = f"{prefix}{SECRET}{suffix}"
    event = (
        _result(1, planted)
        if where == "text"
        else ToolResultEvent(call_id="c1", name="look", text="ok", error_kind=planted)
    )
    sink(event)
    sink.close(timeout=HANG_GUARD_S)
    assert sink.sent == 1
    assert all(SECRET not in repr(r) for r in output.records)
    payload = next(r for r in output.records if isinstance(r, Payload))
    assert SECRET not in payload.event.model_dump_json()


# ====================================================================== the translator


@settings(max_examples=examples(200), deadline=None)
@given(times=st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), max_size=40))
def test_the_timeline_never_runs_backwards(times: list[float]) -> None:
    translator = Translator(images=lambda sha: None)
    out: list[float] = []
    for seq, t in enumerate(times):
        event = ObservationEvent(seq=seq, time=t, state={"ee_position": [0.1, 0.2, 0.3]})
        out.extend(r.time for r in translator.translate(event))
    assert out == sorted(out)
    if times:
        assert out[-1] == max(times)


node_refs = st.sampled_from(["red_cube_1", "blue_cube_1", "tray_1", "gripper"])
positions = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).map(list)


@settings(max_examples=examples(200), deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "remove", "move", "snapshot"]), node_refs, positions),
        max_size=30,
    )
)
def test_objects_follow_the_scene_graph(steps: list[tuple[str, str, list[float]]]) -> None:
    """The boxes after each update equal an independent replay of the same changes."""
    translator = Translator(images=lambda sha: None)
    truth: dict[str, list[float]] = {}

    def node(ref: str, position: list[float]) -> dict[str, Any]:
        return {"ref": ref, "label": "cube", "position": position, "size": [0.04] * 3}

    for seq, (op, ref, position) in enumerate(steps):
        diff: dict[str, Any] = {"added": [], "removed": [], "changed": []}
        snapshot = None
        if op == "add" and ref not in truth:
            truth[ref] = position
            diff["added"].append(node(ref, position))
        elif op == "remove" and ref in truth:
            del truth[ref]
            diff["removed"].append(ref)
        elif op == "move" and ref in truth:
            diff["changed"].append({"ref": ref, "fields": {"position": [truth[ref], position]}})
            truth[ref] = position
        elif op == "snapshot":
            snapshot = {"nodes": [node(r, p) for r, p in truth.items()]}
        event = SceneUpdateEvent(seq=seq, time=seq, diff=diff, snapshot=snapshot)
        boxes = [r for r in translator.translate(event) if isinstance(r, Boxes)]
        assert len(boxes) == 1
        got = {b.id: list(b.center) for b in boxes[0].boxes}
        assert got == truth


def test_the_gripper_pose_and_a_mobile_base() -> None:
    translator = Translator(images=lambda sha: None)
    event = ObservationEvent(
        state={"ee_position": [0.4, 0.0, 0.9], "ee_yaw": math.pi / 2, "base_pose": [1, 2, 0.5]}
    )
    poses = {r.child: r for r in translator.translate(event) if isinstance(r, Pose)}
    assert poses["gripper"].position == (0.4, 0.0, 0.9)
    assert poses["gripper"].rotation == pytest.approx((0, 0, math.sqrt(0.5), math.sqrt(0.5)))
    assert poses["base"].position == (1.0, 2.0, 0.0)
    bad = ObservationEvent(state={"ee_position": [float("nan"), 0, 0], "base_pose": "x"})
    assert not [r for r in translator.translate(bad) if isinstance(r, Pose)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("web", ("web", 9090, 9876)),
        ("web:8000", ("web", 8000, 9876)),
        ("web:8000:8001", ("web", 8000, 8001)),
        ("rerun+http://127.0.0.1:9876/proxy", "rerun+http://127.0.0.1:9876/proxy"),
    ],
)
def test_rerun_targets(text: str, expected: Any) -> None:
    assert parse_rerun_target(text) == expected


@pytest.mark.parametrize("text", ["web:0", "web:x", "web:1:2:3", "http://x", "", "web:70000"])
def test_bad_rerun_targets_name_the_bad_part(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected|port"):
        parse_rerun_target(text)
