"""The project's own context management, measured through the real Harness.

Nothing here re-implements the policy: a :class:`~harness.runtime.harness.Harness` built from an
ordinary config (the window and reserve of the comparison, everything else the project's
defaults plus any ``--set`` overrides) replays the trace with a
:class:`~harness.providers.scripted.ScriptedModel`, real tools, a camera frame every turn
and the Brief from a scene provider. Its compactor is whatever ``build_compactor`` builds
on this branch, with the shared deterministic summarizer as ``compaction_model``. The
metrics then read what the model actually received (``ScriptedModel.requests``), what
the harness says it did (``compaction`` events, cross-checked against
``prompt_snapshot``), and the run store's archive for facts recoverable by address.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks.lib.metering import RequestMeter
from benchmarks.lib.metrics import FAILED_SUMMARY, PRUNE, SUPERSEDE, PolicyRun
from benchmarks.lib.replay import DecisionStats, TraceCursor, decision_replay, replay_harness
from benchmarks.lib.session_trace import Trace
from benchmarks.lib.summarizer import DeterministicSummarizer
from harness.config import HarnessConfig, PressureConfig, apply_overrides
from harness.context.compaction.compactor import NoCompaction
from harness.context.eviction.pressure import derive_pressure
from harness.events import CompactionEvent, DoneEvent, PromptSnapshotEvent
from harness.store import MemoryRunStore

__all__ = ["OURS", "OursRun", "ours_config", "run_ours"]

OURS = "ours"
SOURCE = "this project: the real Harness (Context, compactor, pruning, archive) on this branch"


DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "default.yaml"
"""The deployment a user starts from: its ``context`` section is what ``ours`` runs."""


def default_context(window: int, reserve: int) -> dict[str, Any]:
    """``configs/default.yaml``'s ``context`` section with the comparison's window and
    reserve. The default leaves the reserve unset, so its pressure levels (its own, and
    the window table's for any it leaves null) hold; setting the reserve would turn unset
    ones off (a configured threshold is the only level), so the levels the default has
    for this window are written out."""
    context = dict(yaml.safe_load(DEFAULT_CONFIG.read_text(encoding="utf-8"))["context"])
    context["compaction"] = {
        **context.get("compaction", {}),
        "context_window": window,
        "reserve_tokens": reserve,
    }
    pressure = derive_pressure(
        window, window - reserve, PressureConfig.model_validate(context.get("pressure") or {})
    )
    if pressure is not None:
        levels = {
            "nudge_at": pressure.nudge_tokens / window,
            "cleanup_at": pressure.cleanup_tokens / window,
            "land_at": pressure.land_tokens / window,
        }
        context["pressure"] = {**context.get("pressure", {}), **levels}
    return context


def ours_config(
    trace: Trace, *, window: int, reserve: int, overrides: Iterable[str] = ()
) -> HarnessConfig:
    """The Harness config of the replay: the comparison's window and reserve, the default
    deployment's context settings (:func:`default_context`), the library's defaults for
    everything else, then ``overrides`` (``key.path=value``)."""
    data: dict[str, Any] = {
        "model": {"provider": "scripted", "name": "trace-replay", "context_window": window},
        "context": default_context(window, reserve),
        "run": {
            "max_turns": len(trace.turns),
            "failure_budget": len(trace.turns) + 1,
            "store": None,
        },
        "embodiment": None,
        "driver": None,
        "memory": {"enabled": False},
    }
    return HarnessConfig.model_validate(apply_overrides(data, list(overrides)))


@dataclass
class OursRun:
    """The policy run plus what the harness itself reported."""

    run: PolicyRun
    compactor: str
    snapshots: list[PromptSnapshotEvent] = field(default_factory=list)
    compaction_events: list[CompactionEvent] = field(default_factory=list)
    done: DoneEvent | None = None
    store: MemoryRunStore | None = None
    """The run's store (its archive is what ``recall`` and ``search_archive`` read)."""

    @property
    def real_compactor(self) -> bool:
        return self.compactor != NoCompaction.__name__


def run_ours(
    trace: Trace,
    *,
    config: HarnessConfig,
    meter: RequestMeter,
    summarizer: DeterministicSummarizer,
) -> OursRun:
    """Replay ``trace`` through a real Harness and collect what the model received."""
    cursor = TraceCursor(trace)
    stats = DecisionStats()
    model = decision_replay(cursor, usage=meter.total, stats=stats)
    store = MemoryRunStore()
    harness = replay_harness(
        trace,
        config,
        cursor,
        model=model,
        compaction_model=summarizer.as_model(count=meter.total),
        store=store,
    )
    run = PolicyRun(
        name=OURS,
        source=SOURCE,
        planned_requests=len(trace.turns),
        summarizer=summarizer,
        archive=store.archive_get,
    )
    result = OursRun(run=run, compactor=type(harness.compactor).__name__, store=store)
    actions: dict[int, list[str]] = {}
    with harness:
        for task in trace.tasks:
            offset = task.first_turn - 1  # event turns count per task, the trace's per session
            for event in harness.run_stream(task.instruction, max_turns=task.turns):
                if isinstance(event, PromptSnapshotEvent):
                    result.snapshots.append(event)
                elif isinstance(event, CompactionEvent):
                    result.compaction_events.append(event)
                    action = _action(event)
                    if action:
                        # a task-start fold happens before the task's first request; the
                        # model's condense_context runs in its turn's tool call, so the
                        # next request is the first to show it
                        turn = offset + max(1, event.turn) + int(event.mode == "explicit")
                        actions.setdefault(turn, []).append(action)
                elif isinstance(event, DoneEvent):
                    result.done = event
            if result.done is None or result.done.status != "completed":
                break
    run.requests = list(model.requests)
    run.actions = [actions.get(turn, []) for turn in range(1, len(run.requests) + 1)]
    if result.done is not None:
        run.status = result.done.status
        run.reason = result.done.termination_reason
    return result


def _action(event: CompactionEvent) -> str | None:
    """A compaction event as a policy action (None for progress-only events)."""
    if event.status == "failed":
        return FAILED_SUMMARY if event.mode == "checkpoint" else None
    if event.status not in ("completed", "fallback"):
        return None
    if event.mode in (PRUNE, SUPERSEDE):
        return event.mode
    if event.mode == "task_end":
        return "task_end"
    if event.status == "fallback" or event.mode == "deterministic":
        return "fallback"
    if event.mode == "shrink":
        return "shrink"
    if event.mode == "eviction":
        return "eviction"
    if event.mode == "explicit":
        return "condense"
    return "checkpoint"
