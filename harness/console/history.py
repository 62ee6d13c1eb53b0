"""What the console shows besides the live task: past runs of its own store, and the
progress of a running ``harness eval`` read from its output folder.

Past runs are read from the console's own run store only (the folder of the Harness it is
attached to), read-only and redacted on the way out (:class:`~harness.store.reader.RunLog`
with ``redact=True``); a task id from a request is looked up in that store and nothing else
is opened. A damaged row is skipped and named (each read returns what was intact and the
damage lines); a store that cannot be read at all raises
:class:`~harness.errors.RunStoreDamagedError`, which the web app answers with its line.

The eval progress is read from ``episodes.jsonl`` and ``manifest.json`` as the
eval writes them; its text passes the console's redaction too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import RunNotFoundError, RunStoreDamagedError, RunStoreError
from harness.fleet.journal import EvalFolder
from harness.fleet.stats import OVERALL, summarize
from harness.store.reader import RunLog
from harness.store.task_page import render_report

__all__ = ["EvalProgress", "RunHistory"]

RUNS_LISTED = 100
FAILURES_LISTED = 20


class RunHistory:
    """Past tasks of one run store folder (None: the store is in memory only)."""

    def __init__(self, folder: str | os.PathLike[str] | None) -> None:
        self.folder = Path(folder) if folder is not None else None

    def _log(self) -> RunLog:
        if self.folder is None:
            raise RunStoreError("this session keeps its runs in memory only (run.store is null)")
        return RunLog(self.folder, redact=True)

    def tasks(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The latest tasks, and the damage met reading them."""
        try:
            log = self._log()
        except RunStoreError as exc:
            if isinstance(exc, RunStoreDamagedError):
                return [], exc.lines
            return [], []
        with log:
            tasks = [
                {
                    "task_id": task.id,
                    "session_id": task.session_id,
                    "instruction": task.instruction,
                    "status": task.status,
                    "outcome": task.outcome,
                    "turns": task.turns,
                    "started_at": task.started_at,
                    "duration_s": task.duration_s,
                }
                for task in log.tasks(limit=RUNS_LISTED)
            ]
            return tasks, _lines(log)

    def events(self, task_id: str) -> tuple[list[dict[str, Any]], list[str]]:
        """A past task's events (its lanes' too, so the page can nest them), and the damage
        met; raises :class:`RunNotFoundError` for a task that is not in this store."""
        with self._log() as log:
            task = log.task(task_id)
            events = [e.model_dump(mode="json") for e in log.events(task_id=task.id)]
            for lane in log.lanes(task.id):
                events.extend(e.model_dump(mode="json") for e in log.events(task_id=lane.id))
            damaged = _lines(log)
        return sorted(events, key=lambda e: e["seq"]), damaged

    def report(self, task_id: str) -> str:
        """The task's self-contained HTML report (rendered from this store; a damaged one
        lists its damage at the top)."""
        with self._log() as log:
            task = log.task(task_id)
            return render_report(log, task.id)

    def context(
        self, session_id: str, *, task_id: str | None = None, turn: int | None = None
    ) -> tuple[dict[str, Any], list[str]]:
        """Every stored item of a session's task (its latest, or ``task_id`` of that
        session) at ``turn`` (its last model call when None): its state, what the model
        was shown of it, its token cost and why it was evicted or folded, the rows
        ``harness context --all --json`` prints; and the damage met."""
        with self._log() as log:
            session = log.session(session_id)
            task = log.task(task_id) if task_id else log.resolve(session.id)
            if task.session_id != session.id:
                raise RunNotFoundError(f"task {task.id} is not in session {session.id}")
            view = log.context_at(task.id, turn)
            snapshot = view.snapshot
            data = {
                "session_id": session.id,
                "task_id": task.id,
                "turn": view.turn,
                "tokens": snapshot.total_tokens if snapshot else None,
                "window": snapshot.budget_tokens if snapshot else None,
                "threshold": snapshot.threshold_tokens if snapshot else None,
                "sections": snapshot.sections if snapshot else {},
                "skills": view.skills,
                "episodes": [episode.model_dump(mode="json") for episode in view.episodes],
                "items": [row.model_dump(mode="json") for row in view.rows],
            }
            return data, _lines(log)


def _lines(log: RunLog) -> list[str]:
    return [damage.line() for damage in log.damage]


class EvalProgress:
    """A running (or finished) eval, read from its output folder."""

    def __init__(
        self, folder: str | os.PathLike[str], *, redact: Callable[[str], str] = lambda t: t
    ) -> None:
        self.folder = EvalFolder(folder)
        self.redact = redact

    def snapshot(self) -> dict[str, Any]:
        folder = self.folder
        if not folder.exists():
            return {"folder": str(folder.folder), "started": False}
        manifest = folder.manifest()
        records = folder.records()
        rows = summarize(records)
        failures = [r for r in records if not r.success]
        return {
            "folder": str(folder.folder),
            "started": True,
            "suite": manifest.suite,
            "total": len(manifest.episodes),
            "done": len(records),
            "finished": folder.summary_path.is_file(),
            "families": [
                {
                    "family": row.family,
                    "episodes": row.episodes,
                    "successes": row.successes,
                    "failures": row.episodes - row.successes,
                    "rate": row.rate,
                    "low": row.low,
                    "high": row.high,
                    "overall": row.family == OVERALL,
                }
                for row in rows
            ],
            "recent_failures": [
                {
                    "key": r.key,
                    "family": r.family,
                    "status": r.status,
                    "outcome": r.outcome,
                    "reason": self.redact(r.outcome_summary or r.termination_reason),
                }
                for r in failures[-FAILURES_LISTED:]
            ],
        }
