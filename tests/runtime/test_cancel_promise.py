"""The cancel latency docs/loop.md promises is the one the code is built to keep.

Not a timed test (the measured figures are in ``benchmarks/cancel_latency.py``): every
watcher that waits on something in flight checks the cancel every ``poll`` seconds and
then gives the thing a ``grace`` to hand back; their sum is the longest a cancel can take
there, and it must stay within the promised number.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness import cancel
from harness.runtime.phases import decide, tool_thread

PROMISE = Path(__file__).resolve().parents[2] / "docs" / "loop.md"


def test_the_docs_state_the_promise_the_code_names() -> None:
    text = " ".join(PROMISE.read_text(encoding="utf-8").split())
    found = re.search(r"a tool is in flight \(within about ([0-9.]+) s", text)
    assert found, "docs/loop.md no longer states the cancel latency"
    assert float(found.group(1)) == cancel.CANCEL_LATENCY_S


def test_every_watcher_ends_a_task_within_the_promise() -> None:
    watchers = {
        "a model call (the answer's late grace)": cancel.POLL_S + decide.LATE_ANSWER_GRACE_S,
        "a tool that ignores its cancel flag": tool_thread.POLL_S + tool_thread.CANCEL_GRACE_S,
        "a summarizer, consolidation or task-check call": cancel.POLL_S,
    }
    late = {name: s for name, s in watchers.items() if s > cancel.CANCEL_LATENCY_S + 1e-9}
    assert not late, f"over {cancel.CANCEL_LATENCY_S} s: {late}"
