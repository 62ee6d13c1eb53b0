"""The Harness: one instance owns one session and runs one task at a time.

Construction is dependency injection: pass the parts you have (model, tools, driver,
scene, safety envelope, store, ...) and the rest are simply absent (a physical tool with
no safety envelope is blocked, never run). :meth:`Harness.from_config` builds every part
from YAML (:mod:`harness.assembly`) and then the Harness.

The Harness is a facade: the :class:`~harness.runtime.session.Session` holds what
outlives a task (each part shown as a :class:`~harness.runtime.session_view.SessionPart`
attribute), each task
is a :class:`~harness.runtime.task.TaskState` driven by a
:class:`~harness.runtime.loop.TaskLoop`. ``run_stream()`` returns a plain iterator of typed
events that runs in the caller's thread. Fully consumed, it ends with exactly one ``done``
event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.assembly import build as assembly
from harness.config import HarnessConfig, resolve_config
from harness.context.admission import ToolOffer
from harness.context.compaction.compactor import Compactor, build_compactor
from harness.context.introspection import context_report
from harness.context.window import new_context
from harness.errors import CloseError, RunStoreError
from harness.events import DoneEvent, EventBase
from harness.messages import ImagePart, new_id
from harness.protocols import (
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
from harness.providers import build_model
from harness.providers.base import Model
from harness.redact import Redactor
from harness.runtime.builtins import builtin_tools
from harness.runtime.delegation.delegate import (
    Contract,
    DelegateArgs,
    Handoff,
    SubagentRefused,
    build_child,
    contract_of,
    refused_handoff,
    run_child,
)
from harness.runtime.lane import Lane
from harness.runtime.loop import TaskLoop
from harness.runtime.owned import OwnedResources, close_all
from harness.runtime.resume.rebuild import ResumePoint, resume_session
from harness.runtime.resume.resumed_task import resume_prologue
from harness.runtime.session import Session, SessionParts
from harness.runtime.session_view import SessionPart
from harness.runtime.stream import RunResult, TaskStream
from harness.runtime.task import TaskState
from harness.store import MemoryRunStore
from harness.tools import Tool, ToolRegistry, tool
from harness.world.control_log import start_control_log
from harness.world.task_check import TaskCheck

if TYPE_CHECKING:
    from embodiment.types import Driver
    from harness.context import Context
    from memory.task_notes import TaskNotes

__all__ = ["Handoff", "Harness", "RunResult", "TaskStream"]


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
        task_check: The check of the whole task when the model ends it (the ``done``
            event's ``outcome``); :func:`Harness.from_config` builds it from
            ``evaluation.task_check``. None: the outcome is ``unverified`` unless the model
            reports failure.
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
        subagent_model: The sub-agents' model; built from ``subagents.model`` when
            omitted (the decision model when that is unset too).
        redactor: Replaces secrets in every event (stored and yielded), in what memory
            keeps and in what a summarizer sees; built from ``config`` when omitted
            (built-in key shapes, ``run.secret_patterns``, every ``api_key_env`` value).
            A store or memory given without a redactor of its own adopts this one.
    """

    # The session's parts, each read through to ``self.session`` (``model`` and
    # ``tool_sources`` may be assigned between tasks; ``task_notes``: the running or last
    # task's Task Notes; ``subagent_model``: None when the sub-agents use ``model``).
    session_id: SessionPart[str] = SessionPart()
    model: SessionPart[Model] = SessionPart(settable=True)
    compaction_model: SessionPart[Model] = SessionPart()
    subagent_model: SessionPart[Model | None] = SessionPart()
    context: SessionPart[Context] = SessionPart()
    compactor: SessionPart[Compactor] = SessionPart()
    store: SessionPart[RunStore] = SessionPart()
    tools: SessionPart[ToolRegistry] = SessionPart()
    tool_sources: SessionPart[list[ToolSource]] = SessionPart(settable=True, convert=list)
    driver: SessionPart[Driver | None] = SessionPart()
    observation_provider: SessionPart[ObservationProvider | None] = SessionPart()
    safety: SessionPart[SafetyGate | None] = SessionPart()
    scene: SessionPart[SceneProvider | None] = SessionPart()
    skills: SessionPart[SkillLibrary | None] = SessionPart()
    memory: SessionPart[MemoryProvider | None] = SessionPart()
    evaluator: SessionPart[Evaluator | None] = SessionPart()
    task_check: SessionPart[TaskCheck | None] = SessionPart()
    hooks: SessionPart[list[PreHook]] = SessionPart()
    user_channel: SessionPart[UserChannel | None] = SessionPart()
    profile_text: SessionPart[str] = SessionPart()
    task_notes: SessionPart[TaskNotes] = SessionPart(name="last_notes")

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
        task_check: TaskCheck | None = None,
        hooks: Sequence[PreHook] = (),
        store: RunStore | None = None,
        compactor: Compactor | None = None,
        user_channel: UserChannel | None = None,
        physical_tools: Iterable[Tool] = (),
        profile_text: str = "",
        owned_resources: Iterable[Any] = (),
        session_id: str | None = None,
        tool_sources: Iterable[ToolSource] = (),
        subagent_model: Model | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = config if config is not None else HarnessConfig()
        self._owned = OwnedResources()
        for resource in owned_resources:
            self._owned.add(resource)
        self._resume_point: ResumePoint | None = None

        model = model if model is not None else build_model(self.config.model)
        redactor = redactor if redactor is not None else assembly.build_redactor(self.config)
        store = store if store is not None else MemoryRunStore(redactor=redactor)
        # Parts built without a redactor of their own redact with the session's.
        if callable(getattr(store, "adopt_redactor", None)):
            store.adopt_redactor(redactor)  # type: ignore[attr-defined]
        if callable(getattr(memory, "adopt_redaction", None)):
            memory.adopt_redaction(redactor.text)  # type: ignore[union-attr]
        compaction_model = compaction_model or model
        context = new_context(self.config, model)
        compactor = compactor or build_compactor(
            self.config, summarizer=compaction_model, store=store, redactor=redactor
        )
        registry = ToolRegistry()
        subagent_config = assembly.subagent_model_config(self.config)
        if subagent_model is None and subagent_config is not None:
            subagent_model = build_model(subagent_config)
        parts = SessionParts(
            model=model,
            compaction_model=compaction_model,
            store=store,
            compactor=compactor,
            driver=driver,
            observation_provider=observation_provider
            or (driver if driver is not None and hasattr(driver, "observe") else None),
            safety=safety,
            scene=scene,
            skills=skills,
            memory=memory,
            evaluator=evaluator,
            task_check=task_check,
            hooks=hooks,
            user_channel=user_channel,
            profile_text=profile_text,
            subagent_model=subagent_model,
            subagent_model_config=subagent_config,
            redactor=redactor,
        )
        session = Session(
            self.config,
            session_id=session_id or new_id("sess"),
            context=context,
            parts=parts,
            tools=registry,
        )
        # Physical tools first, then the built-ins and the scene's queries, then the
        # caller's and the tool sources': a stable order the model sees every task.
        for item in physical_tools:
            registry.add(item)
        for item in builtin_tools(session):
            registry.add(item)
        if scene is not None:
            for item in scene.tools():
                registry.add(item)
        for item in tools:
            registry.add(item if isinstance(item, Tool) else tool(item))
        session.tooling.attach_tool_sources(tool_sources)
        session.open()
        self.session = session
        session.control_log = start_control_log(driver, store, self.config.recording)
        if session.control_log is not None:  # closed before the driver it records
            self._owned.add(("control log", session.control_log.close))

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
        cfg = resolve_config(config, overrides=overrides)
        built, closers = assembly.build_parts(cfg, given=parts)
        try:
            return cls(cfg, **built, owned_resources=closers)
        except BaseException:
            close_all(list(reversed(closers)))
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
        harness, point = resume_session(
            lambda cfg: cls.from_config(cfg, session_id=session_id, **parts),
            session_id,
            config,
            overrides=overrides,
            store=parts.get("store"),
        )
        harness._resume_point = point
        return harness

    @property
    def interrupted_task(self) -> str | None:
        """The id of the task :meth:`resume_stream` would continue (None if there is none)."""
        return self._resume_point.state.task_id if self._resume_point is not None else None

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
        point = self._resume_point
        if point is None:
            raise RunStoreError(f"session {self.session_id} has no interrupted task to resume")
        if max_turns is not None:
            point.state.max_turns = max_turns
        stream = self._start(
            point.state,
            poll_replan=poll_replan,
            should_cancel=should_cancel,
            prologue=resume_prologue(point),
        )
        self._resume_point = None
        return stream

    # ================================================================== tools

    def add_tool(self, item: Tool | Callable[..., Any]) -> Tool:
        """Register a tool (a plain typed function is wrapped with ``@tool``)."""
        if not isinstance(item, Tool):
            item = tool(item)
        self.session.tools.add(item)
        return item

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
        if not instruction or not instruction.strip():
            raise ValueError("instruction must be a non-empty string")
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        state = TaskState(
            instruction=instruction.strip(),
            max_turns=max_turns or self.config.run.max_turns,
            notes=self.session.new_task_notes(),
            images=list(images or []),
        )
        return self._start(state, poll_replan=poll_replan, should_cancel=should_cancel)

    def _start(
        self,
        state: TaskState,
        *,
        poll_replan: Callable[[], str | None] | None,
        should_cancel: Callable[[], bool] | None,
        prologue: Any = None,
    ) -> TaskStream:
        lane = Lane(self.session, state, poll_replan=poll_replan)
        if should_cancel is not None:
            lane.should_cancel = should_cancel
        self.session.begin_task(lane)
        return TaskStream(TaskLoop(lane, prologue=prologue))

    def delegate(
        self,
        goal: str,
        *,
        tools: Sequence[str] = (),
        max_turns: int | None = None,
        max_tokens: int | None = None,
        output_schema: Mapping[str, Any] | None = None,
        should_cancel: Callable[[], bool] | None = None,
        poll_replan: Callable[[], str | None] | None = None,
        on_event: Callable[[EventBase], None] | None = None,
    ) -> Handoff:
        """Run a sub-agent directly from a control script and return its handoff.

        The same child lane the ``delegate`` tool runs (narrowed ``tools`` by name or
        pattern, the ``subagents`` budgets as caps, the answer validated against
        ``output_schema`` or the default handoff schema, one repair round), but with no
        parent task: it takes the session's task slot and reads the session's Resident
        context as a task would. Its events are recorded under its lane id (and passed to
        ``on_event``). Any failure in the child is a handoff with a status; bad arguments
        (a pattern that matches no tool, an invalid schema) raise ``ValueError``.
        """
        args = DelegateArgs(
            goal=goal,
            tools=list(tools),
            max_turns=max_turns,
            max_tokens=max_tokens,
            output_schema=dict(output_schema) if output_schema is not None else None,
        )
        session = self.session
        try:
            contract: Contract = contract_of(session, args)
            child = build_child(
                session,
                contract,
                parent=None,
                link=None,
                should_cancel=should_cancel or (lambda: False),
                poll_replan=poll_replan,
            )
        except SubagentRefused as exc:
            if exc.bad_arguments:
                raise ValueError(str(exc)) from None
            return refused_handoff(str(exc))
        session.begin_task(child.lane)
        try:
            child.lane.state.add_usage(session.prepare_resident(child.lane.should_cancel))
            session.tooling.sync_tool_sources()
            return run_child(child, emit=on_event or (lambda event: None))
        finally:
            session.end_task(child.lane.state)

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
            outcome=done.outcome,
            evidence=done.evidence,
        )

    @property
    def busy(self) -> bool:
        return self.session.active_task is not None

    def reset_session(self) -> None:
        """Clear Accumulated context (tools, clients and Resident stay)."""
        self.session.reset()

    def context_report(self) -> list[dict[str, Any]]:
        """Every item of the session's context with lifetime, state, tokens and reason.

        Resident blocks and tool definitions, every Accumulated item (including those
        folded, pruned or shrunk away, with ``in_context: False``), the Refreshed text and
        each image of the next call. See :class:`harness.context.introspection.ContextRow`.
        """
        return [row.model_dump() for row in context_report(self.session.context)]

    def tools_refusal(self) -> str | None:
        """Why the tool definitions offered now do not fit the model's window (capability
        admission, the check every task starts with), or None when they fit (perhaps
        without optional features: :meth:`tool_offer` says which). A control script or
        the CLI can ask before starting a task: it is a configuration problem."""
        return self.tool_offer().refusal

    def tool_offer(self) -> ToolOffer:
        """The tools a task would be offered now, what the window leaves out and why,
        counted by the model's server where it can count (the selection every task
        starts with; :func:`harness.context.admission.select_tools`)."""
        return self.session.tooling.offer_tools(self.session.tools, model=self.session.model)

    # ================================================================== lifecycle

    def close(self) -> None:
        """Release owned resources (MCP subprocesses, driver, store...) in reverse order.

        Idempotent. Every resource is attempted; failures are raised together as a
        :class:`CloseError` afterwards. Refused while a task is running.
        """
        if self.session.closed:
            return
        self.session.check_idle("close")
        self.session.closed = True
        errors = self._owned.close()
        if errors:
            raise CloseError(errors)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
