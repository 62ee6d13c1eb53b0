"""The Harness: one instance owns one session and runs one task at a time.

Construction is dependency injection: pass the parts you have (model, tools, driver,
scene, safety envelope, store, ...) and the rest are simply absent (a physical tool with
no safety envelope is blocked, never run). :meth:`Harness.from_config` is the factory
that builds every part from YAML.

``run_stream()`` returns a plain iterator of typed events that runs in the caller's
thread. Fully consumed, it ends with exactly one ``done`` event.
"""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.builtins import builtin_tools
from harness.capability import admit_tool_definitions
from harness.compaction import build_compactor
from harness.components import (
    Compactor,
    Evaluator,
    MemoryProvider,
    ObservationProvider,
    PreHook,
    RunStore,
    SafetyGate,
    SceneProvider,
    SkillLibrary,
    ToolSource,
    UserChannel,
)
from harness.config import HarnessConfig, load_config
from harness.context import Budget, Context
from harness.errors import (
    CloseError,
    ConfigError,
    HarnessBusyError,
    HarnessClosedError,
    UnknownContextWindowError,
)
from harness.events import DoneEvent, EventBase, MemoryConsolidationEvent, TaskStatus
from harness.introspection import context_report
from harness.messages import ImagePart, Item, Usage, Verdict, new_id
from harness.prompts import DEFAULT_SYSTEM_PROMPT
from harness.providers import build_model
from harness.providers.base import Model
from harness.providers.catalog import known_context_window
from harness.store import MemoryRunStore
from harness.tokens import TokenEstimator
from harness.tools import Tool, ToolOutput, ToolRegistry, resident_text_of, tool
from memory.report import TaskRecord, ToolOutcome
from memory.task_notes import TaskNotes

if TYPE_CHECKING:
    from embodiment.types import Driver
    from harness.loop import TaskRun
    from harness.resume import ResumePoint

__all__ = ["Harness", "RunResult", "TaskStream", "resolve_context_window"]


@dataclass(frozen=True)
class RunResult:
    """What ``Harness.run()`` returns: the ``done`` event's content, flattened."""

    status: TaskStatus
    report: str
    turns: int
    usage: Usage
    task_id: str
    termination_reason: str

    @property
    def ok(self) -> bool:
        return self.status == "completed"


class TaskStream(Iterator[EventBase]):
    """The iterator ``run_stream()`` returns.

    It holds the session's task slot from the moment it is created, so a second task is
    refused at once, and gives the slot back when the stream ends, is closed, or is garbage
    collected without ever being iterated.
    """

    def __init__(self, run: TaskRun, release: Callable[[TaskRun], None]) -> None:
        self.run = run
        self.task_id = run.task_id
        self._events = run.events()
        self._release = release
        self._started = False

    def __iter__(self) -> TaskStream:
        return self

    def __next__(self) -> EventBase:
        self._started = True
        return next(self._events)

    def close(self) -> None:
        """Stop the task early: the robot is stopped and the harness stays usable."""
        if self._started:
            self._events.close()
        else:
            self._release(self.run)

    def __enter__(self) -> TaskStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


class Harness:
    """One session of a model driving tools (and usually a robot).

    Args:
        config: The configuration (defaults when omitted).
        model: The decision model; built from ``config.model`` when omitted.
        compaction_model: The summarizer; defaults to ``model``.
        tools: Extra tools (:class:`Tool` objects or plain typed functions).
        driver: The robot or simulator; its ``stop()`` is the interrupt path and it is the
            observation provider unless one is given.
        observation_provider: Where observations come from (default: the driver).
        safety: The safety envelope every physical tool call passes.
        scene: The working scene graph (renders the Brief).
        skills: The skill library (catalog in Resident, ``load_skill``).
        memory: Durable memory read at task start and consolidated at task end.
        evaluator: The hidden ``evaluate_run`` hook after configured physical tools.
        hooks: Pre-execution hooks that may rewrite or block a call.
        store: The run store (in memory when omitted).
        compactor: Keeps Accumulated within budget (built from config when omitted).
        user_channel: Where ``query_user`` and ``notify_user`` go.
        physical_tools: Tools generated for the driver (passed here so they are
            registered before config tools and stay in a stable order).
        profile_text: The embodiment profile as rendered into Resident context.
        owned_resources: Objects (with ``close()``) or callables released by ``close()``,
            in reverse order.
        tool_sources: Providers of tools that may change during the session (MCP
            servers); their changes are applied between turns. Pass them in
            ``owned_resources`` too if this Harness should close them.
    """

    def __init__(
        self,
        config: HarnessConfig | None = None,
        *,
        model: Model | None = None,
        compaction_model: Model | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        driver: Driver | None = None,
        observation_provider: ObservationProvider | None = None,
        safety: SafetyGate | None = None,
        scene: SceneProvider | None = None,
        skills: SkillLibrary | None = None,
        memory: MemoryProvider | None = None,
        evaluator: Evaluator | None = None,
        hooks: Sequence[PreHook] = (),
        store: RunStore | None = None,
        compactor: Compactor | None = None,
        user_channel: UserChannel | None = None,
        physical_tools: Iterable[Tool] = (),
        profile_text: str = "",
        owned_resources: Iterable[Any] = (),
        session_id: str | None = None,
        tool_sources: Iterable[ToolSource] = (),
    ) -> None:
        self.config = config if config is not None else HarnessConfig()
        self.session_id = session_id or new_id("sess")
        self._owned: list[tuple[str, Callable[[], None]]] = []
        for resource in owned_resources:
            self._own(resource)
        self._closed = False
        self._lock = threading.Lock()
        self._active: TaskRun | None = None

        self.model: Model = model if model is not None else build_model(self.config.model)
        self.compaction_model: Model = compaction_model or self.model
        self.driver = driver
        self.observation_provider = observation_provider or (
            driver if driver is not None and hasattr(driver, "observe") else None
        )
        self.safety = safety
        self.scene = scene
        self.skills = skills
        self.memory = memory
        self.evaluator = evaluator
        self.hooks = list(hooks)
        self.user_channel = user_channel
        self.profile_text = profile_text
        self.store: RunStore = store if store is not None else MemoryRunStore()
        self.task_notes = TaskNotes(timeline_max=self.config.memory.notes_timeline_max)
        self._outcomes: list[ToolOutcome] = []

        window = resolve_context_window(self.config, self.model)
        reserve = self.config.context.compaction.reserve_tokens
        if reserve >= window:
            raise ConfigError(
                f"context.compaction.reserve_tokens: got {reserve}; expected less than the "
                f"context window ({window})",
                key="context.compaction.reserve_tokens",
                value=reserve,
            )
        self.context = Context(
            TokenEstimator(image_cost=getattr(self.model, "image_cost", "generic")),
            Budget(context_window=window, reserve_tokens=reserve),
        )
        self.compactor: Compactor = compactor or build_compactor(
            self.config, summarizer=self.compaction_model, store=self.store
        )

        self.tools = ToolRegistry()
        for item in physical_tools:
            self.tools.add(item)
        for item in builtin_tools(self):
            self.tools.add(item)
        if scene is not None:
            for item in scene.tools():
                self.tools.add(item)
        for item in tools:
            self.add_tool(item)
        self.tool_sources = list(tool_sources)
        self._source_tools: list[str] = []
        self._sync_tool_sources(force=True)

        self.store.open_session(
            self.session_id, config=self.config.model_dump(mode="json", exclude={"base_dir"})
        )
        self._seq = 0
        self._frames = 0
        self._resume_point: ResumePoint | None = None

    # ================================================================== factory

    @classmethod
    def from_config(
        cls,
        config: str | Path | HarnessConfig | None = None,
        *,
        overrides: Iterable[str] | Mapping[str, Any] = (),
        **parts: Any,
    ) -> Harness:
        """Build every part the config describes (driver, profile, safety, scene, skills,
        memory, store, MCP servers, evaluator), then the Harness.

        Parts given as keyword arguments are used instead of being built. If anything
        fails half-way, everything already built is closed again before the error
        propagates (no orphaned simulator or MCP subprocess).
        """
        from harness.factory import build_parts

        if isinstance(config, HarnessConfig):
            cfg = config
            if overrides:
                from harness.config import apply_overrides

                data = apply_overrides(config.model_dump(exclude={"base_dir"}), overrides)
                cfg = HarnessConfig.model_validate(data)
                cfg.base_dir = config.base_dir
        else:
            cfg = load_config(config, overrides=overrides)
        built, closers = build_parts(cfg, given=parts)
        try:
            return cls(cfg, **built, owned_resources=closers)
        except BaseException:
            _close_all(list(reversed(closers)))
            raise

    @classmethod
    def resume(
        cls,
        session_id: str,
        config: str | Path | HarnessConfig | None = None,
        *,
        overrides: Iterable[str] | Mapping[str, Any] = (),
        **parts: Any,
    ) -> Harness:
        """Rebuild a session from its run store after a crash (same session id).

        Accumulated context (with item states), Task Notes, the loaded skills and the event
        sequence are restored; :attr:`interrupted_task` says which task was cut short, and
        :meth:`resume_stream` continues it from its last recorded turn. A tool call that
        had started without a recorded result is reported to the model as "interrupted,
        outcome unknown" and never run again.

        ``config`` defaults to the configuration recorded with the session (secrets in it
        were redacted: pass the config file when the deployment needs them). Parts given as
        keyword arguments are used as in :meth:`from_config`. Raises
        :class:`~harness.errors.RunStoreError` if the session is unknown or its process is
        still alive.
        """
        from harness.resume import resume_harness

        return resume_harness(cls, session_id, config, overrides=overrides, **parts)

    @property
    def interrupted_task(self) -> str | None:
        """The id of the task :meth:`resume_stream` would continue (None if there is none)."""
        return self._resume_point.task.id if self._resume_point is not None else None

    def resume_stream(
        self,
        *,
        max_turns: int | None = None,
        poll_replan: Callable[[], str | None] | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> TaskStream:
        """Continue the interrupted task of a resumed session; its stream ends with one
        ``done`` event like any task's. Raises ``RunStoreError`` when nothing was
        interrupted."""
        from harness.errors import RunStoreError
        from harness.resume import ResumedTaskRun

        point = self._resume_point
        if point is None:
            raise RunStoreError(f"session {self.session_id} has no interrupted task to resume")
        run = ResumedTaskRun(
            self, point, max_turns=max_turns, poll_replan=poll_replan, should_cancel=should_cancel
        )
        self._acquire(run)
        self._resume_point = None
        return TaskStream(run, self._task_finished)

    # ================================================================== tools

    def add_tool(self, item: Tool | Callable[..., Any]) -> Tool:
        """Register a tool (a plain typed function is wrapped with ``@tool``)."""
        if not isinstance(item, Tool):
            item = tool(item)
        self.tools.add(item)
        return item

    def _sync_tool_sources(self, *, force: bool = False) -> bool:
        """Re-register the tools of the tool sources if one of them changed.

        Called by the loop between turns only (and once at construction), never while a
        tool call runs. Returns True if the registry changed.
        """
        if not self.tool_sources or not (
            force or any(source.tools_changed() for source in self.tool_sources)
        ):
            return False
        for name in self._source_tools:
            self.tools.remove(name)
        self._source_tools = []
        for source in self.tool_sources:
            for item in source.tools(reserved=self.tools.names()):
                self.tools.add(item)
                self._source_tools.append(item.name)
        return True

    # ================================================================== tasks

    def run_stream(
        self,
        instruction: str,
        *,
        images: Sequence[ImagePart] | None = None,
        max_turns: int | None = None,
        poll_replan: Callable[[], str | None] | None = None,
        should_cancel: Callable[[], bool] | None = None,
    ) -> TaskStream:
        """Start a task and return its event stream.

        Raises :class:`HarnessBusyError` if a task is already active in this session (from
        this thread or another); the active task is not affected.
        """
        from harness.loop import TaskRun

        if not instruction or not instruction.strip():
            raise ValueError("instruction must be a non-empty string")
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        run = TaskRun(
            self,
            instruction.strip(),
            images=list(images or []),
            max_turns=max_turns or self.config.run.max_turns,
            poll_replan=poll_replan,
            should_cancel=should_cancel,
        )
        self._acquire(run)
        return TaskStream(run, self._task_finished)

    def run(self, instruction: str, **options: Any) -> RunResult:
        """Run a task to its end and return the result (events are recorded, not returned)."""
        stream = self.run_stream(instruction, **options)
        done: DoneEvent | None = None
        for event in stream:
            if isinstance(event, DoneEvent):
                done = event
        assert done is not None, "a fully consumed stream always ends with done"
        return RunResult(
            status=done.status,
            report=done.report,
            turns=done.turns,
            usage=done.usage,
            task_id=stream.task_id,
            termination_reason=done.termination_reason,
        )

    @property
    def busy(self) -> bool:
        return self._active is not None

    def reset_session(self) -> None:
        """Clear Accumulated context (tools, clients and Resident stay)."""
        self._check_idle("reset_session")
        self.context.clear_accumulated()
        self.store.set_accumulated(self.session_id, [])
        self.task_notes = TaskNotes(timeline_max=self.config.memory.notes_timeline_max)

    def context_report(self) -> list[dict[str, Any]]:
        """Every item of the session's context with lifetime, state, tokens and reason.

        Resident blocks and tool definitions, every Accumulated item (including those
        folded, pruned or shrunk away, with ``in_context: False``), the Refreshed text and
        each image of the next call. See :class:`harness.introspection.ContextRow`.
        """
        return [row.model_dump() for row in context_report(self.context)]

    # ================================================================== lifecycle

    def close(self) -> None:
        """Release owned resources (MCP subprocesses, driver, store...) in reverse order.

        Idempotent. Every resource is attempted; failures are raised together as a
        :class:`CloseError` afterwards. Refused while a task is running.
        """
        if self._closed:
            return
        self._check_idle("close")
        self._closed = True
        errors = _close_all(list(reversed(self._owned)))
        self._owned = []
        if errors:
            raise CloseError(errors)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _own(self, resource: Any) -> None:
        if isinstance(resource, tuple) and len(resource) == 2 and callable(resource[1]):
            self._owned.append(resource)
        elif callable(getattr(resource, "close", None)):
            self._owned.append((type(resource).__name__, resource.close))
        elif callable(resource):
            self._owned.append((getattr(resource, "__name__", "resource"), resource))
        else:
            raise TypeError(f"owned resource {resource!r} has no close() and is not callable")

    # ================================================================== task slot

    def _acquire(self, run: TaskRun) -> None:
        if self._closed:
            raise HarnessClosedError("this Harness is closed")
        with self._lock:
            if self._active is not None:
                raise HarnessBusyError(
                    f"task {self._active.task_id} is still running in session "
                    f"{self.session_id}; wait for its done event or close its stream"
                )
            self._active = run

    def _task_finished(self, run: TaskRun) -> None:
        with self._lock:
            if self._active is run:
                self._active = None

    def _check_idle(self, action: str) -> None:
        if self._active is not None:
            raise HarnessBusyError(
                f"{action}() refused: task {self._active.task_id} is running; "
                "finish or close its stream first"
            )

    # ================================================================== loop services

    def _emit(self, event: EventBase, *, task_id: str, turn: int) -> EventBase:
        self._seq += 1
        stamped = event.model_copy(
            update={
                "session_id": self.session_id,
                "task_id": task_id,
                "turn": turn,
                "seq": self._seq,
            }
        )
        self.store.append_event(stamped)
        return stamped

    def _append_item(self, item: Item) -> None:
        self.context.append(item)
        self.store.put_item(
            self.session_id, item, lifetime="accumulated", tokens=self.context.item_tokens(item)
        )

    def _set_item_state(self, item_id: str, state: str, reason: str) -> None:
        self.context.set_state(item_id, state, reason)  # type: ignore[arg-type]
        self._sync_item_states()

    def _sync_item_states(self) -> None:
        new_items, changed = self.context.drain_changes()
        for item in new_items:
            self.store.put_item(
                self.session_id, item, lifetime="accumulated", tokens=self.context.item_tokens(item)
            )
        for item_id, state in changed.items():
            self.store.set_item_state(item_id, state=state.status, reason=state.reason)
        if new_items or changed:
            self.store.set_accumulated(self.session_id, [i.id for i in self.context.accumulated])

    def _prepare_task_resident(self) -> None:
        """Resident for a new task: system prompt, profile, catalog, memory (read now)."""
        ctx = self.context
        ctx.set_resident("system", self.config.context.system_prompt or DEFAULT_SYSTEM_PROMPT)
        ctx.set_resident("embodiment", self.profile_text)
        ctx.set_resident("skills", self.skills.catalog_text() if self.skills else "")
        memory_text = ""
        if self.memory is not None and self.config.memory.enabled:
            memory_text = self.memory.resident_text(
                budget_tokens=self.config.memory.budget_tokens, estimate=ctx.estimator.text
            )
        ctx.set_resident("memory", memory_text)
        # Tool sources may carry words for the model about their tools (MCP servers'
        # `instructions`, bounded by the source): Resident, after the rest.
        ctx.set_resident("tool_sources", resident_text_of(self.tool_sources))
        self._outcomes = []
        if self._active is not None:  # ledger summaries written now are this task's cost
            self._active.usage = self._active.usage + self._drain_memory_usage()

    def _admit_tool_definitions(self) -> str | None:
        """Capability admission of the task's tool definitions: the refusal, or None."""
        admission = admit_tool_definitions(self.context)
        return None if admission.admitted else admission.refusal()

    def _end_task_resident(self) -> None:
        """Task-scoped capability context (loaded skill bodies) leaves with the task."""
        self.context.remove_resident_prefix("skill:")

    def _store_observation_images(self, images: list[ImagePart]) -> None:
        self._frames += 1
        if (self._frames - 1) % self.config.run.image_retention_every == 0:
            for image in images:
                self.store.put_image(image)

    def _mirror_task_notes(self, notes: TaskNotes) -> None:
        if self._active is not None:
            from harness.resume import task_notes_state

            self.store.put_task_notes(
                self.session_id, self._active.task_id, task_notes_state(notes)
            )
        if self.memory is not None and self.config.memory.enabled:
            try:
                self.memory.mirror_task_notes(notes.render())
            except Exception:
                traceback.print_exc()

    def _record_tool_experience(
        self, name: str, output: ToolOutput, verdict: Verdict | None, *, executed: bool
    ) -> None:
        active = self._active
        outcome = ToolOutcome(
            turn=active.turn if active else 0,
            tool=name,
            ok=not output.is_error and (verdict is None or verdict.status != "failure"),
            verdict=verdict.status if verdict else None,
            detail=(verdict.evidence if verdict else output.render())[:300],
            executed=executed,
        )
        self._outcomes.append(outcome)
        registered = self.tools.get(name)
        # Ledgers are for tools that act on the world or the scene: not the harness's own
        # bookkeeping tools, and never a name the model made up (it would become a file).
        if (
            self.memory is not None
            and self.config.memory.enabled
            and registered is not None
            and registered.source != "builtin"
        ):
            try:
                self.memory.record_tool_outcome(outcome)
            except Exception:
                traceback.print_exc()

    def _consolidate_memory(
        self, run: TaskRun, status: TaskStatus, report: str
    ) -> MemoryConsolidationEvent | None:
        if self.memory is None or not self.config.memory.enabled:
            return None
        record = TaskRecord(
            task_id=run.task_id,
            instruction=run.instruction,
            status=status,
            report=report,
            notes=self.task_notes.render(),
            outcomes=list(self._outcomes),
            min_confidence=self.config.memory.consolidation_min_confidence,
        )
        try:
            result = self.memory.consolidate(record)
        except Exception as exc:
            return MemoryConsolidationEvent(status="failed", reason=f"{type(exc).__name__}: {exc}")
        finally:
            run.usage = run.usage + self._drain_memory_usage()
        return MemoryConsolidationEvent(
            status=result.status, kept=result.kept, rejected=result.rejected, reason=result.reason
        )

    def _drain_memory_usage(self) -> Usage:
        """Tokens memory's model helpers (lesson proposer, ledger summarizer) used since
        the last drain; they count toward the task like every other model call."""
        total = Usage()
        for helper in (
            getattr(self.memory, "proposer", None),
            getattr(self.memory, "summarizer", None),
        ):
            spent = getattr(helper, "usage", None)
            if isinstance(spent, Usage):
                total = total + spent
                helper.usage = Usage()  # type: ignore[union-attr]
        return total

    def _interrupt_robot(self) -> None:
        """Interrupt a physical action in flight (called while the tool is blocking)."""
        if self.driver is not None:
            self.driver.stop()

    def _stop_robot(self) -> None:
        """Leave the robot stopped at the end of every task, whatever ended it."""
        if self.driver is not None:
            try:
                self.driver.stop()
            except Exception:
                traceback.print_exc()


def resolve_context_window(config: HarnessConfig, model: Model) -> int:
    """The one place the window comes from: compaction config, model config, the model
    object, then the built-in table. Unknown is an error, never a guess."""
    candidates = (
        config.context.compaction.context_window,
        config.model.context_window,
        getattr(model, "context_window", None),
        known_context_window(getattr(model, "name", "") or config.model.name),
    )
    for value in candidates:
        if value:
            return int(value)
    raise UnknownContextWindowError(
        f"the context window of model {model.name!r} is unknown; set model.context_window "
        "(or context.compaction.context_window) in the config, or pass --context-window N "
        "on the command line",
        key="model.context_window",
        value=None,
    )


def _close_all(closers: list[tuple[str, Callable[[], None]]]) -> list[tuple[str, BaseException]]:
    errors: list[tuple[str, BaseException]] = []
    for name, closer in closers:
        try:
            closer()
        except Exception as exc:
            errors.append((name, exc))
    return errors
