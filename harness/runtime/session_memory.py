"""The session's side of durable memory: Task Notes snapshots, tool-experience ledgers,
the consolidation of what a task taught (a :class:`~memory.task_record.TaskRecord`), and the
model cost and operator's cancel of memory's model-backed helpers.

A :class:`~harness.runtime.session.Session` owns one :class:`SessionMemory`
(``session.memory_link``); it lives apart so the session module reads as the task slot and
the bookkeeping. Everything handed to memory passes the session's redactor first.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.cancel import Cancelled
from harness.events import MemoryConsolidationEvent
from harness.messages import Usage
from harness.protocols import ToolResultLog
from harness.runtime.rules import RecordedResult, enters_task_notes
from memory.task_record import TaskRecord, ToolOutcome

if TYPE_CHECKING:
    from harness.config import HarnessConfig
    from harness.protocols import MemoryProvider, RunStore
    from harness.redact import Redactor
    from harness.runtime.task import TaskState
    from harness.tools import ToolRegistry

__all__ = ["SessionMemory"]

logger = logging.getLogger("harness.runtime.session")
"""The session's logger: these records read as the session's, as before the split."""


class SessionMemory:
    """What the session hands to durable memory, and memory's helpers' cost and cancel (see
    the module docstring)."""

    def __init__(
        self,
        config: HarnessConfig,
        *,
        session_id: str,
        store: RunStore,
        memory: MemoryProvider | None,
        redactor: Redactor,
        tools: ToolRegistry,
    ) -> None:
        self.config = config
        self.session_id = session_id
        self.store = store
        self.memory = memory
        self.redactor = redactor
        self.tools = tools
        """The session's registry: which tools' outcomes are worth a ledger."""

    def store_task_notes(self, state: TaskState) -> None:
        """A Task Notes snapshot: structured into the run store, rendered into memory (a
        sub-agent's notes are its own: memory mirrors the main lane's only)."""
        self.store.put_task_notes(self.session_id, state.task_id, state.notes.state())
        if self.active() and not state.lane:
            assert self.memory is not None
            try:
                self.memory.mirror_task_notes(self.redactor.text(state.notes.render()))
            except Exception:
                logger.exception("memory could not mirror the Task Notes")

    def record_tool_outcome(self, outcome: ToolOutcome) -> None:
        """Tool-experience ledgers are for tools that act on the world or the scene: not
        the harness's own bookkeeping tools, and never a name the model made up (it would
        become a file)."""
        registered = self.tools.get(outcome.tool)
        if not self.active() or registered is None or registered.source == "builtin":
            return
        assert self.memory is not None
        outcome = replace(outcome, detail=self.redactor.text(outcome.detail))
        try:
            self.memory.record_tool_outcome(outcome)
        except Exception:
            logger.exception("memory could not record the outcome of %s", outcome.tool)

    def consolidate_memory(
        self,
        state: TaskState,
        *,
        status: str,
        report: str,
        cancelled: Callable[[], bool] | None = None,
    ) -> MemoryConsolidationEvent | None:
        """Consolidate what the task taught into durable memory; its model cost is the
        task's. The operator's cancel wins over a helper's model call in flight: the
        consolidation is abandoned and nothing is written. A sub-agent lane consolidates
        nothing: its work is its parent's task's."""
        if not self.active() or state.lane:
            return None
        assert self.memory is not None
        redact = self.redactor.text
        record = TaskRecord(
            task_id=state.task_id,
            instruction=redact(state.instruction),
            status=status,
            report=redact(report),
            notes=redact(state.notes.render()),
            outcomes=[replace(o, detail=redact(o.detail)) for o in self.task_outcomes(state)],
            min_confidence=self.config.memory.consolidation_min_confidence,
        )
        try:
            with self.watching(cancelled):
                result = self.memory.consolidate(record)
        except Cancelled as exc:
            return MemoryConsolidationEvent(
                status="cancelled", reason=f"{exc}; nothing was written to memory"
            )
        except Exception as exc:
            return MemoryConsolidationEvent(status="failed", reason=f"{type(exc).__name__}: {exc}")
        finally:
            state.add_usage(self.drain_memory_usage())
        return MemoryConsolidationEvent(
            status=result.status, kept=result.kept, rejected=result.rejected, reason=result.reason
        )

    def task_outcomes(self, state: TaskState) -> list[ToolOutcome]:
        """Every tool outcome of the task, read back from the run store by the same rules
        the loop applied (the task's bounded in-memory list for a store that cannot)."""
        if not isinstance(self.store, ToolResultLog):
            return list(state.outcomes)
        outcomes = []
        for event in self.store.tool_results(state.task_id):
            result = RecordedResult.of_event(event)
            if enters_task_notes(error_kind=result.error_kind, executed=result.executed):
                outcomes.append(result.outcome())
        return outcomes

    def drain_memory_usage(self) -> Usage:
        """Tokens memory's model helpers (lesson proposer, ledger summarizer) used since
        the last drain; they count toward the task like every other model call."""
        total = Usage()
        for helper in self._memory_helpers():
            spent = getattr(helper, "usage", None)
            if isinstance(spent, Usage):
                total = total + spent
                helper.usage = Usage()  # type: ignore[union-attr]
        return total

    def _memory_helpers(self) -> list[object]:
        """Memory's model-backed helpers (lesson proposer, ledger summarizer)."""
        found = (getattr(self.memory, "proposer", None), getattr(self.memory, "summarizer", None))
        return [helper for helper in found if helper is not None]

    @contextlib.contextmanager
    def watching(self, cancelled: Callable[[], bool] | None) -> Iterator[None]:
        """Hand the operator's cancel to the helpers that watch one, for one use."""
        helpers = [h for h in self._memory_helpers() if hasattr(h, "cancelled")]
        for helper in helpers:
            helper.cancelled = cancelled  # type: ignore[attr-defined]
        try:
            yield
        finally:
            for helper in helpers:
                helper.cancelled = None  # type: ignore[attr-defined]

    def active(self) -> bool:
        """Whether there is durable memory and it is enabled."""
        return self.memory is not None and self.config.memory.enabled
