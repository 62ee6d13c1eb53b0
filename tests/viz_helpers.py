"""A real simulator run for the viewer tests, with a configured secret planted in it, and
an oracle that reads the run store directly (SQL and JSON, not the export code).

The run: the PyBullet tabletop (``sim.tabletop``) driven by the offline planner, like
``harness demo``, with ``run.secret_patterns`` configured and the secret appended to the
text of every ``end_episode`` and ``place`` tool result. The store redacts it as it
writes; :func:`leaky_copy` then writes the secret back into a copy of the store (as an
older or foreign writer might have left it, also into the instruction), so an export of
that copy is clean only if the export redacts on the way out.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import Harness, HarnessConfig
from harness.cli.common import default_deployment
from harness.events import EventBase
from harness.redact import REDACTED
from harness.tools import ToolOutput

_rng = random.Random(29)
SECRET = "HXS-" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(16))
SECRET_PATTERN = r"HXS-[A-Za-z0-9]{16}"
INSTRUCTION = "put the red cube in the tray"
PLANTED_IN = ("end_episode", "place")
FRAGMENT = 10


def secret_fragments(data: bytes) -> int:
    """Occurrences of any 10-character window of the secret in ``data``."""
    windows = {SECRET[i : i + FRAGMENT] for i in range(len(SECRET) - FRAGMENT + 1)}
    return sum(data.count(w.encode()) for w in windows)


def demo_config(store: Path, **run: Any) -> HarnessConfig:
    data = json.loads(json.dumps(default_deployment()))
    data["run"] = {**data["run"], "store": str(store), "secret_patterns": [SECRET_PATTERN], **run}
    data["memory"] = {"enabled": False}
    return HarnessConfig.model_validate(data)


def plant_secret(harness: Harness) -> None:
    """Append the secret to what ``end_episode`` and ``place`` return."""
    for name in PLANTED_IN:
        tool = harness.tools.get(name)
        assert tool is not None, name
        original = tool.invoke

        def invoke(arguments: Any, ctx: Any, _original: Callable[..., Any] = original) -> Any:
            output: ToolOutput = _original(arguments, ctx)
            output.text = f"{output.render()} (operator badge {SECRET})"
            return output

        tool.invoke = invoke  # type: ignore[method-assign]


@dataclass
class SimRun:
    store: Path
    task_id: str
    session_id: str
    events: list[EventBase]
    """As ``run_stream()`` yielded them."""


def run_sim_task(
    store: Path,
    *,
    sink: Callable[[EventBase], None] | None = None,
    before: Callable[[Harness], None] | None = None,
    instruction: str = INSTRUCTION,
) -> SimRun:
    """One real tabletop task into ``store`` (``sink`` sees every event as it is yielded)."""
    events: list[EventBase] = []
    with Harness.from_config(demo_config(store)) as harness:
        plant_secret(harness)
        if before is not None:
            before(harness)
        for event in harness.run_stream(instruction):
            events.append(event)
            if sink is not None:
                sink(event)
        session_id = harness.session_id
    done = events[-1]
    assert getattr(done, "type", "") == "done" and done.outcome == "achieved", done  # type: ignore[attr-defined]
    return SimRun(store=store, task_id=done.task_id, session_id=session_id, events=events)


def stored_events(store: Path, task_id: str) -> list[dict[str, Any]]:
    """The task's events as the store keeps them (JSON, store order)."""
    conn = sqlite3.connect(store / "runs.db")
    try:
        rows = conn.execute(
            "SELECT data FROM events WHERE task_id = ? ORDER BY pos", (task_id,)
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(row[0]) for row in rows]


def leaky_copy(store: Path, target: Path) -> Path:
    """A copy of ``store`` with the secret written back where the store redacted it, and
    into the task's instruction."""
    shutil.copytree(store, target)
    conn = sqlite3.connect(target / "runs.db")
    try:
        marker = json.dumps(REDACTED)[1:-1]
        conn.execute("UPDATE events SET data = replace(data, ?, ?)", (marker, SECRET))
        conn.execute("UPDATE tasks SET instruction = instruction || ?", (f" badge {SECRET}",))
        rows = conn.execute("SELECT rowid, data FROM events WHERE type = 'task_started'")
        for rowid, data in rows.fetchall():
            event = json.loads(data)
            event["instruction"] += f" badge {SECRET}"
            conn.execute("UPDATE events SET data = ? WHERE rowid = ?", (json.dumps(event), rowid))
        conn.commit()
        planted = conn.execute(
            "SELECT COUNT(*) FROM events WHERE data LIKE ?", (f"%{SECRET}%",)
        ).fetchone()[0]
    finally:
        conn.close()
    assert planted >= 3, "the secret was not written back: the leak test would prove nothing"
    return target
