"""Typed stream events: what the harness did, kept apart from what the model saw.

Every event is a frozen pydantic model with a literal ``type``, the ``task_id`` and
``turn`` it belongs to and a per-session ``seq``. Parts of the harness build events with
the envelope left empty; :meth:`harness.Harness` stamps the envelope when it emits them, so
components never need to know the sequence counter. Every event serialises to one JSON line
(``event.model_dump_json()``), which is what ``harness run --json`` prints and what the
run store keeps.

Names are chosen once: renaming an event type is a breaking change for every consumer.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from harness.messages import Usage, Verdict

__all__ = [
    "CompactionEvent",
    "ContextPressureEvent",
    "DoneEvent",
    "EpisodeEvent",
    "EvaluationEvent",
    "Event",
    "EventBase",
    "GoalCondition",
    "HandoffEvent",
    "HandoffStatus",
    "HookDecisionEvent",
    "LaneStartedEvent",
    "MemoryConsolidationEvent",
    "ModelDeltaEvent",
    "ModelDiscardedEvent",
    "ModelErrorEvent",
    "ModelResponseEvent",
    "ModelRetryEvent",
    "NotificationEvent",
    "ObservationEvent",
    "OutcomeEvidence",
    "ProgressEvent",
    "PromptSnapshotEvent",
    "RecoveryEvent",
    "ReplanEvent",
    "SafetyCheckEvent",
    "SceneUpdateEvent",
    "SkillLoadedEvent",
    "TaskOutcome",
    "TaskResumedEvent",
    "TaskStartedEvent",
    "TaskStatus",
    "ToolCallEvent",
    "ToolResultEvent",
    "ToolsListedEvent",
    "UserQueryEvent",
    "event_adapter",
    "parse_event",
    "task_succeeded",
]

TaskStatus = Literal[
    "completed", "cancelled", "failed", "max_turns", "failure_budget", "max_tokens"
]
"""How the loop ended (the specification's statuses, and ``max_tokens``: a task given a
token budget, such as a sub-agent, that spent it)."""

TaskOutcome = Literal["achieved", "not_achieved", "unverified"]
"""Whether the task's goal was met, as far as the harness can tell: ``achieved`` only when a
task-level check confirmed it, ``not_achieved`` when a check or the model itself says it was
not, ``unverified`` otherwise (no check configured, the check could not decide, or the task
did not complete)."""

HandoffStatus = Literal["completed", "failed", "interrupted", "provider_error", "budget_exhausted"]
"""How a sub-agent's work ended, as its parent reads it (see ``harness.runtime.delegation``)."""


class EventBase(BaseModel):
    """Envelope shared by every event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str = ""
    task_id: str = ""
    turn: int = 0
    seq: int = 0
    time: float = Field(default_factory=time.time)


class TaskStartedEvent(EventBase):
    type: Literal["task_started"] = "task_started"
    instruction: str
    max_turns: int
    images: int = 0


class TaskResumedEvent(EventBase):
    """A task interrupted by a crash continues in a new process (``Harness.resume``).

    ``interrupted_calls`` lists the tool calls the model had requested without a recorded
    result: ``started`` ones are reported to the model as outcome unknown (never run
    again), the others as not executed.
    """

    type: Literal["task_resumed"] = "task_resumed"
    instruction: str
    from_turn: int
    max_turns: int
    interrupted_calls: list[dict[str, Any]] = Field(default_factory=list)
    previous_pid: int | None = None
    world: Literal["restored", "re_observed", "none"] = "none"
    """What became of the world: ``restored`` (a simulator put back into the state recorded
    after turn ``world_turn``), ``re_observed`` (a real robot: its state is whatever it is
    now, observed before the next model call), ``none`` (no driver)."""
    world_turn: int | None = None

    def describe_world(self) -> str:
        """What became of the world, for people."""
        if self.world == "restored":
            return f"world restored to its state after turn {self.world_turn}"
        if self.world == "re_observed":
            return "world re-observed (its state is not restored)"
        return ""

    def describe_interrupted(self) -> str:
        """The interrupted calls for people: ``move_to (outcome unknown)``."""
        return ", ".join(
            f"{c['name']} ({'outcome unknown' if c['started'] else 'not executed'})"
            for c in self.interrupted_calls
        )


class ToolsListedEvent(EventBase):
    """The tool definitions visible to the model for this task."""

    type: Literal["tools_listed"] = "tools_listed"
    tools: list[str]
    physical: list[str] = Field(default_factory=list)
    tokens: int = 0


class SkillLoadedEvent(EventBase):
    type: Literal["skill_loaded"] = "skill_loaded"
    name: str
    tokens: int


class ObservationEvent(EventBase):
    """A new observation replaced the previous one."""

    type: Literal["observation"] = "observation"
    cameras: dict[str, list[int]] = Field(default_factory=dict)
    """Camera name -> [width, height]."""
    images: list[str] = Field(default_factory=list)
    """sha256 of each encoded image (stored once in the run store)."""
    state: dict[str, Any] = Field(default_factory=dict)
    timestamp: float = 0.0


class SceneUpdateEvent(EventBase):
    """What changed in the scene graph this turn, and the size of the rendered Brief."""

    type: Literal["scene_update"] = "scene_update"
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    stale: list[str] = Field(default_factory=list)
    objects: int = 0
    brief_tokens: int = 0
    diff: dict[str, Any] | None = None
    """The detailed change (``scene.SceneDiff`` as JSON: new nodes, changed fields with old
    and new values, relations added and removed)."""
    snapshot: dict[str, Any] | None = None
    """A full ``scene.SceneSnapshot`` (the first update, then every
    ``scene.snapshot_interval``-th), so a reader can rebuild the scene at any turn."""
    warnings: list[str] = Field(default_factory=list)
    """Perception failures and detections the graph could not use."""


class SafetyCheckEvent(EventBase):
    """The safety envelope's decision on one physical tool call."""

    type: Literal["safety_check"] = "safety_check"
    call_id: str
    tool: str
    outcome: Literal["allow", "clamp", "block"]
    requested: dict[str, Any] = Field(default_factory=dict)
    applied: dict[str, Any] = Field(default_factory=dict)
    violations: list[str] = Field(default_factory=list)
    reason: str = ""
    segment: int = 1
    """Which command of the call it checked: a segmented tool is checked again before each
    re-run, on readings taken after the segment before."""


class HookDecisionEvent(EventBase):
    """A pre-execution hook rewrote or blocked a tool call."""

    type: Literal["hook_decision"] = "hook_decision"
    hook: str
    call_id: str
    tool: str
    action: Literal["rewrite", "block"]
    requested: dict[str, Any] = Field(default_factory=dict)
    applied: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""


class CompactionEvent(EventBase):
    """A compaction or pruning pass over Accumulated context."""

    type: Literal["compaction"] = "compaction"
    status: Literal["started", "completed", "failed", "fallback", "skipped", "cancelled"]
    mode: Literal[
        "checkpoint",
        "prune",
        "deterministic",
        "shrink",
        "overflow",
        "task_end",
        "reference",
        "minimal_reference",
        "eviction",
        "explicit",
    ] = "checkpoint"
    """``task_end``: an ended task's tool traffic folded into the checkpoint when the next
    task starts; ``reference`` and ``minimal_reference``: the later steps of the recovery
    from a provider overflow (:mod:`harness.context.overflow`); ``eviction``: the pressure
    cleanup by the structure of the work (:mod:`harness.context.eviction`); ``explicit``:
    the model's own ``condense_context``."""
    reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    items_folded: int = 0
    items_retained: int = 0
    rounds: int = 0
    duration_s: float = 0.0
    checkpoint_id: str | None = None
    usage: Usage | None = None
    """Tokens the summarizer model used for this pass (None when no model was called)."""


class EpisodeEvent(EventBase):
    """An episode began or ended (``begin_episode`` / ``end_episode``), or was abandoned
    because its task ended first."""

    type: Literal["episode"] = "episode"
    status: Literal["begun", "ended", "abandoned"]
    name: str
    kind: Literal["exploration", "action"]
    depends_on: list[str] = Field(default_factory=list)
    conclusion: str = ""


class ContextPressureEvent(EventBase):
    """The request crossed the nudge level: the model was told once (``message``)."""

    type: Literal["context_pressure"] = "context_pressure"
    level: Literal["nudge"] = "nudge"
    tokens: int
    context_window: int
    nudge_tokens: int
    cleanup_tokens: int
    message: str = ""


class PromptSnapshotEvent(EventBase):
    """What the model is about to see: token counts per section, never image bytes."""

    type: Literal["prompt_snapshot"] = "prompt_snapshot"
    sections: dict[str, int]
    total_tokens: int
    budget_tokens: int
    threshold_tokens: int
    items: int
    images: int
    resident_hash: str = ""


class ModelDeltaEvent(EventBase):
    """A fragment of a streaming model response."""

    type: Literal["model_delta"] = "model_delta"
    kind: Literal["text", "reasoning", "tool_arguments"]
    delta: str
    tool_call_id: str | None = None


class ModelRetryEvent(EventBase):
    """A model call failed in a way that may pass, and will be tried again after a wait."""

    type: Literal["model_retry"] = "model_retry"
    attempt: int
    error_kind: str
    message: str
    wait_s: float


class ModelResponseEvent(EventBase):
    type: Literal["model_response"] = "model_response"
    model: str = ""
    text: str = ""
    reasoning_chars: int = 0
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    stop_reason: str = ""
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0


class ModelDiscardedEvent(EventBase):
    """A model answer the harness did not act on: the operator cancelled while the call was
    in flight. ``complete`` says whether the whole answer had arrived; ``text`` and
    ``tool_calls`` are what had (nothing of it enters the context, and no call of it runs).
    Anything the abandoned call delivers later is dropped."""

    type: Literal["model_discarded"] = "model_discarded"
    reason: str
    complete: bool = False
    text: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    duration_s: float = 0.0


class ModelErrorEvent(EventBase):
    type: Literal["model_error"] = "model_error"
    kind: str
    message: str
    status_code: int | None = None
    retryable: bool = False


class ProgressEvent(EventBase):
    """Text surfaced to the operator without another model turn (beside a tool call, or
    reported by a running tool)."""

    type: Literal["progress"] = "progress"
    text: str
    source: Literal["model", "tool", "harness"] = "model"


class ToolCallEvent(EventBase):
    """Emitted after validation and checks, immediately before the tool runs."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    physical: bool = False


class ToolResultEvent(EventBase):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    is_error: bool = False
    error_kind: str | None = None
    text: str = ""
    archive: str | None = None
    images: list[str] = Field(default_factory=list)
    duration_s: float = 0.0
    evaluation: Verdict | None = None
    executed: bool = True


class EvaluationEvent(EventBase):
    """The hidden ``evaluate_run`` hook's verdict after a configured physical tool."""

    type: Literal["evaluation"] = "evaluation"
    call_id: str
    tool: str
    verdict: Verdict
    segment: int = 1


class ReplanEvent(EventBase):
    type: Literal["replan"] = "replan"
    revision: str


class UserQueryEvent(EventBase):
    type: Literal["user_query"] = "user_query"
    question: str
    answer: str | None = None
    status: Literal["asked", "answered", "timeout", "cancelled", "unavailable"] = "asked"


class NotificationEvent(EventBase):
    type: Literal["notification"] = "notification"
    message: str
    level: Literal["info", "warning", "error"] = "info"


class MemoryConsolidationEvent(EventBase):
    type: Literal["memory_consolidation"] = "memory_consolidation"
    status: Literal["completed", "skipped", "failed", "cancelled"]
    kept: list[str] = Field(default_factory=list)
    rejected: list[dict[str, str]] = Field(default_factory=list)
    reason: str = ""


class SafetyEvent(EventBase):
    """The robot may not be stopped: the operator must look at it.

    ``stop_failed``: ``driver.stop()`` raised when the task ended; ``command_not_returned``:
    a physical command was abandoned after its timeout and ``stop()`` but its ``execute``
    never returned, so the driver may still be carrying it out.
    """

    type: Literal["safety"] = "safety"
    problem: Literal["stop_failed", "command_not_returned"]
    reason: str
    tool: str = ""


class GoalCondition(BaseModel):
    """One post-condition of the whole task, and whether it held when the task ended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    condition: str
    """What had to hold, e.g. ``red_cube_1 in tray_1``."""
    held: bool
    evidence: str = ""


class OutcomeEvidence(BaseModel):
    """Why a task's ``outcome`` is what it is: which check ran, who judged, what held."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: Literal["programmatic", "model", "none"] = "none"
    """The task-level check configured (``evaluation.task_check``); ``none``: nothing but
    the model's own word."""
    checked_by: str = ""
    """Who decided: ``simulator`` (ground truth), ``model:NAME`` (a vision model), ``the
    model's report`` (the acting model said it did not do the task), or empty."""
    summary: str = ""
    conditions: list[GoalCondition] = Field(default_factory=list)
    claim: Literal["achieved", "not_achieved"] | None = None
    """What the acting model's report claimed (its ``Outcome:`` line), if anything."""

    @property
    def held(self) -> list[GoalCondition]:
        return [c for c in self.conditions if c.held]

    @property
    def failed(self) -> list[GoalCondition]:
        return [c for c in self.conditions if not c.held]


class LaneStartedEvent(EventBase):
    """A sub-agent lane starts (its first event; ``task_id`` is the lane's own id).

    ``parent_task_id``, ``parent_call_id`` and ``parent_turn`` name the parent turn it works
    for (empty for a lane a control script started with ``Harness.delegate``). ``tools`` are
    the tools it may call; ``withheld`` are tools it asked for but may not have, with why.
    """

    type: Literal["lane_started"] = "lane_started"
    goal: str
    parent_task_id: str = ""
    parent_call_id: str = ""
    parent_turn: int = 0
    tools: list[str] = Field(default_factory=list)
    withheld: dict[str, str] = Field(default_factory=dict)
    max_turns: int
    max_tokens: int | None = None
    model: str = ""
    output_schema: dict[str, Any] | None = None
    """The schema its answer must match (None: the default handoff schema)."""


class HandoffEvent(EventBase):
    """What a sub-agent lane handed back to its parent (the lane's last event, after its
    ``done``): the handoff's status and its content, exactly as the parent received it."""

    type: Literal["handoff"] = "handoff"
    parent_task_id: str = ""
    parent_call_id: str = ""
    status: HandoffStatus
    handoff: dict[str, Any] = Field(default_factory=dict)


class RecoveryEvent(EventBase):
    """What ``Harness.resume`` did with the sub-agent lanes it found at start.

    ``resumed``: lanes woken to finish their work; ``repaired``: parent turns answered from
    what a lane had already recorded (or with "not executed" for a lane that never
    started); ``abandoned``: lanes closed as failed because nothing can use their work any
    more (their parent had ended, or no parent turn asked for them).
    """

    type: Literal["recovery"] = "recovery"
    resumed: int = 0
    repaired: int = 0
    abandoned: int = 0
    details: list[str] = Field(default_factory=list)


class DoneEvent(EventBase):
    """The single terminal event of a task.

    ``status`` is how the loop ended; ``outcome`` whether the goal was met (see
    :data:`TaskOutcome`), with its ``evidence``.
    """

    type: Literal["done"] = "done"
    status: TaskStatus
    termination_reason: str
    report: str = ""
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    outcome: TaskOutcome = "unverified"
    evidence: OutcomeEvidence = Field(default_factory=OutcomeEvidence)
    robot_stopped: bool | None = None
    """False when the robot may still be moving (a failed ``stop()``, or a physical command
    that never returned; the ``safety`` events say which); None without a robot."""

    @property
    def succeeded(self) -> bool:
        """See :func:`task_succeeded` (exit code 0 of ``harness run``); never while the
        robot may still be moving."""
        if self.robot_stopped is False:
            return False
        return task_succeeded(self.status, self.outcome, self.evidence)


def task_succeeded(status: str, outcome: str, evidence: OutcomeEvidence) -> bool:
    """What a script may treat as success: the task completed and its goal was confirmed,
    or it completed and no task check is configured (then nothing could confirm it; the
    evidence says so). A check that could not decide, or a goal not achieved, is not."""
    if status != "completed":
        return False
    return outcome == "achieved" or (outcome == "unverified" and evidence.check == "none")


Event = Annotated[
    TaskStartedEvent
    | TaskResumedEvent
    | ToolsListedEvent
    | SkillLoadedEvent
    | ObservationEvent
    | SceneUpdateEvent
    | SafetyCheckEvent
    | HookDecisionEvent
    | CompactionEvent
    | EpisodeEvent
    | ContextPressureEvent
    | PromptSnapshotEvent
    | ModelDeltaEvent
    | ModelRetryEvent
    | ModelResponseEvent
    | ModelDiscardedEvent
    | ModelErrorEvent
    | ProgressEvent
    | ToolCallEvent
    | ToolResultEvent
    | EvaluationEvent
    | ReplanEvent
    | UserQueryEvent
    | NotificationEvent
    | MemoryConsolidationEvent
    | LaneStartedEvent
    | HandoffEvent
    | RecoveryEvent
    | SafetyEvent
    | DoneEvent,
    Field(discriminator="type"),
]
"""Any stream event."""

event_adapter: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    """Read an event back from its JSON line (or decoded dict)."""
    if isinstance(data, dict):
        return event_adapter.validate_python(data)
    return event_adapter.validate_json(data)
