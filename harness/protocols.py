"""The small interfaces the loop calls. Each part of the runtime plugs in through one.

They are Protocols: the simulator, a real robot, a test fake or a deployment's own
service all fit without inheriting from anything here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from embodiment.types import Observation, SafetyDecision
from harness.events import EventBase, SceneUpdateEvent, ToolResultEvent
from harness.messages import ImagePart, Item, ToolCall, Verdict
from harness.tools import Tool, ToolOutput
from memory.task_record import ConsolidationReport, TaskRecord, ToolOutcome

__all__ = [
    "ArchiveHit",
    "Evaluator",
    "HookDecision",
    "LaneLink",
    "MemoryProvider",
    "ObservationProvider",
    "PreHook",
    "RunStore",
    "SafetyGate",
    "SceneProvider",
    "SceneRefresh",
    "SearchableArchive",
    "SkillLibrary",
    "ToolSource",
    "UserChannel",
]


@runtime_checkable
class ObservationProvider(Protocol):
    """Anything that returns the robot's current :class:`Observation` (usually the driver)."""

    def observe(self) -> Observation: ...


@dataclass
class SceneRefresh:
    """A rendered Brief plus what changed (for the ``scene_update`` event)."""

    brief: str
    event: SceneUpdateEvent | None = None


@runtime_checkable
class SceneProvider(Protocol):
    """The working scene graph, as the loop sees it."""

    def refresh(self, observation: Observation | None, *, focus: str) -> SceneRefresh:
        """Update from the observation and render a bounded Brief relevant to ``focus``
        (instruction, revisions and Task Notes text)."""
        ...

    def tools(self) -> list[Tool]:
        """Query tools offered to the model (find_objects, ...)."""
        ...

    def on_verdict(self, tool: str, arguments: Mapping[str, Any], verdict: Verdict) -> None:
        """An evaluator-confirmed outcome updates the graph at once."""
        ...


@runtime_checkable
class ToolSource(Protocol):
    """Tools that live outside the process and may change during a session (MCP servers).

    The Harness registers ``tools()`` when it is built and applies changes only between
    turns (before the next model call), so a model call and the tool call it decides
    always see the same tool set.
    """

    def tools(self, *, reserved: Iterable[str] = ()) -> list[Tool]:
        """The tools to offer now; ``reserved`` names are taken by the Harness's other
        tools (a source renames its own tools to avoid them)."""
        ...

    def tools_changed(self) -> bool:
        """Cheap, thread-safe: has the tool set changed since ``tools()`` was last called?"""
        ...

    # Optional: ``resident_text() -> str``, words for the model about these tools (an MCP
    # server's ``instructions``), set in Resident at task start; bounded by the source.


@runtime_checkable
class SafetyGate(Protocol):
    """The embodiment's safety envelope: every physical call passes it first."""

    def check(
        self, tool: Tool, arguments: Mapping[str, Any], observation: Observation | None
    ) -> SafetyDecision: ...


@dataclass(frozen=True)
class HookDecision:
    """What a pre-execution hook wants: rewrite the arguments, or block the call."""

    action: Literal["rewrite", "block"]
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


class PreHook(Protocol):
    """Runs before a tool executes; returns None to let the call through unchanged."""

    def __call__(
        self, call: ToolCall, tool: Tool, arguments: Mapping[str, Any]
    ) -> HookDecision | None: ...


@runtime_checkable
class Evaluator(Protocol):
    """The hidden ``evaluate_run`` hook: checks a physical tool's post-conditions."""

    def evaluate(
        self,
        *,
        tool: Tool,
        arguments: Mapping[str, Any],
        output: ToolOutput,
        observation: Observation | None,
        segment: int,
    ) -> Verdict: ...


@runtime_checkable
class UserChannel(Protocol):
    """How ``query_user`` and ``notify_user`` reach a person."""

    def ask(self, question: str, *, timeout_s: float, cancelled: Callable[[], bool]) -> str | None:
        """Block until an answer, a timeout (None) or cancellation (None)."""
        ...

    def notify(self, message: str, level: str) -> None: ...


@runtime_checkable
class SkillLibrary(Protocol):
    """Skills the model can load into Resident context."""

    def catalog_text(self) -> str: ...

    def names(self) -> list[str]: ...

    def body(self, name: str) -> str:
        """The skill body; raises KeyError with close matches for an unknown name."""
        ...

    def resource(self, name: str, resource: str, *, max_chars: int) -> str: ...


@runtime_checkable
class MemoryProvider(Protocol):
    """Durable memory: read into Resident at task start, consolidated when a task ends."""

    def resident_text(self, *, budget_tokens: int, estimate: Callable[[str], int]) -> str:
        """Memory and tool-experience summaries, bounded by ``budget_tokens``."""
        ...

    def mirror_task_notes(self, text: str) -> None: ...

    def record_tool_outcome(self, outcome: ToolOutcome) -> None: ...

    def consolidate(self, record: TaskRecord) -> ConsolidationReport: ...


@dataclass(frozen=True)
class ArchiveHit:
    """One archived output that contains a searched text."""

    address: str
    task_id: str
    tool: str
    matches: int
    snippet: str


@runtime_checkable
class SearchableArchive(Protocol):
    """A run store that can search its exact-output archive (``search_archive`` tool)."""

    def archive_search(self, session_id: str, query: str, *, limit: int) -> list[ArchiveHit]: ...


@dataclass(frozen=True)
class LaneLink:
    """The parent turn a sub-agent lane works for: the parent task, the ``delegate`` call
    that started the lane, and the parent's turn."""

    task_id: str
    call_id: str
    turn: int


@runtime_checkable
class ToolResultLog(Protocol):
    """A run store that reads back a task's recorded tool results, so what a long task
    did is kept in the store instead of in the process (memory consolidation reads it)."""

    def tool_results(self, task_id: str) -> list[ToolResultEvent]: ...


@runtime_checkable
class RunStore(Protocol):
    """Where every event, item, exact tool output and image is written as it happens.

    A sub-agent lane is a task of the same session recorded with ``lane`` set to its own
    task id (and ``parent`` to the turn it works for, unless a control script started it
    directly); its items and Accumulated layouts carry the same ``lane``, so the main
    lane's history (``lane=""``) never mixes with a child's.
    """

    def open_session(self, session_id: str, *, config: Mapping[str, Any]) -> None: ...

    def start_task(
        self,
        session_id: str,
        task_id: str,
        instruction: str,
        *,
        lane: str = "",
        parent: LaneLink | None = None,
    ) -> None: ...

    def end_task(
        self,
        task_id: str,
        *,
        status: str,
        reason: str,
        report: str,
        turns: int,
        usage: Mapping[str, Any],
        outcome: str = "unverified",
        evidence: Mapping[str, Any] | None = None,
    ) -> None: ...

    def append_event(self, event: EventBase) -> None: ...

    def put_item(
        self, session_id: str, item: Item, *, lifetime: str, tokens: int, lane: str = ""
    ) -> None: ...

    def set_item_state(self, item_id: str, *, state: str, reason: str) -> None: ...

    def set_accumulated(self, session_id: str, item_ids: Sequence[str], *, lane: str = "") -> None:
        """The Accumulated layout of one lane after a change other than an append
        (compaction, pruning, reset): with the items appended since, it rebuilds that
        lane's context at any point."""
        ...

    def put_world_state(
        self, session_id: str, task_id: str, *, turn: int, state: Mapping[str, Any]
    ) -> None:
        """The simulated world's state after a turn, for resume to restore."""
        ...

    def put_task_notes(self, session_id: str, task_id: str, notes: Mapping[str, Any]) -> None:
        """A structured Task Notes snapshot (what ``Harness.resume`` restores)."""
        ...

    def archive_put(
        self,
        address: str,
        text: str,
        *,
        task_id: str,
        call_id: str,
        tool: str,
        arguments: str = "",
    ) -> None:
        """Keep ``text`` exactly at ``address``; ``arguments`` (the call's, as JSON) let
        ``search_archive`` find the output by what was asked for."""
        ...

    def archive_get(self, address: str, *, session_id: str | None = None) -> str | None:
        """The exact archived text at ``address``, or None. With ``session_id``, None
        also when the output was archived by a task of another session (``recall`` reads
        only its own session's archive: a foreign address must read as unknown)."""
        ...

    def put_image(self, image: ImagePart) -> None: ...

    def close(self) -> None: ...
