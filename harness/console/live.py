"""The live view: the session's event stream turned into what the page shows right now.

:class:`LiveView` is a session listener (:meth:`harness.runtime.session.Session.
add_listener`): it is called with every event, stamped and redacted, from the thread that
emitted it, and forwards it to the hub for the timeline. From the same events it keeps the
present: the task and its lanes, the robot (stopped or moving, the command in flight, the
envelope's last decision and the readings it checks), and the context gauge (tokens per
lifetime against the window, the pressure levels, every compaction, condensation and
eviction).

The camera frames and the scene Brief are read when the main lane's ``prompt_snapshot`` is
emitted: that event comes from the loop's own thread right before the model call, so the
Refreshed block read then is exactly what the model is about to see. The Brief is redacted
like every event; the frames are kept in memory only (the newest set), served by index.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from harness.console.hub import ConsoleHub
from harness.events import (
    CompactionEvent,
    ContextPressureEvent,
    DoneEvent,
    EventBase,
    HandoffEvent,
    LaneStartedEvent,
    ObservationEvent,
    PromptSnapshotEvent,
    SafetyCheckEvent,
    SafetyEvent,
    TaskStartedEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.messages import ImagePart

if TYPE_CHECKING:
    from harness.runtime.session import Session

__all__ = ["LiveView", "gauge_of"]

logger = logging.getLogger(__name__)

COMPACTIONS_KEPT = 50
"""Context changes listed on the gauge (the timeline has them all)."""

_CONTEXT_CHANGES = {"completed", "fallback"}
MODE_NAMES = {
    "explicit": "condensation (condense_context)",
    "eviction": "eviction (pressure cleanup)",
    "checkpoint": "compaction (checkpoint)",
    "prune": "pruning",
    "supersede": "superseded Task Notes left",
    "task_end": "task end fold",
}
"""How the gauge names a compaction mode (the timeline shows the event itself)."""


def gauge_of(event: PromptSnapshotEvent) -> dict[str, int]:
    """Tokens of the next request per lifetime: Resident (system blocks and tool
    definitions), Accumulated, Refreshed (Brief, observation text and images)."""
    sections = event.sections
    return {
        "resident": sections.get("resident", 0) + sections.get("tools", 0),
        "accumulated": sections.get("accumulated", 0),
        "refreshed": sections.get("refreshed", 0) + sections.get("images", 0),
        "total": event.total_tokens,
        "window": event.budget_tokens,
        "threshold": event.threshold_tokens,
    }


class LiveView:
    """Forwards events to ``hub`` and keeps the live state of ``session``'s tasks."""

    def __init__(self, hub: ConsoleHub, session: Session) -> None:
        self.hub = hub
        self.session = session
        self._lock = threading.Lock()
        self._frames: list[ImagePart] = []
        self._frames_version = 0
        self._lanes: dict[str, dict[str, Any]] = {}
        self._compactions: list[dict[str, Any]] = []
        self._robot: dict[str, Any] = {"moving": False, "command": None, "safety": None}
        self._readings: dict[str, Any] = {}
        hub.update_state(
            robot=self._robot_state(),
            gauge=None,
            frames=[],
            frames_version=0,
            brief="",
            lanes={},
            compactions=[],
            task=None,
        )

    # ------------------------------------------------------------------ frames

    def frame(self, index: int) -> ImagePart | None:
        with self._lock:
            return self._frames[index] if 0 <= index < len(self._frames) else None

    # ------------------------------------------------------------------ the listener

    def __call__(self, event: EventBase) -> None:
        self.hub.publish("event", event.model_dump(mode="json"))
        changes = self._changes(event)
        if changes:
            self.hub.update_state(**changes)

    def _changes(self, event: EventBase) -> dict[str, Any]:
        main = event.task_id not in self._lanes
        if isinstance(event, LaneStartedEvent):
            self._lanes[event.task_id] = {
                "goal": event.goal,
                "parent_task_id": event.parent_task_id,
                "parent_call_id": event.parent_call_id,
                "status": "running",
            }
            return {"lanes": self._lanes_state()}
        if isinstance(event, HandoffEvent) and event.task_id in self._lanes:
            self._lanes[event.task_id]["status"] = event.status
            return {"lanes": self._lanes_state()}
        if isinstance(event, TaskStartedEvent) and main:
            self.hub.task_began(event.task_id)
            self._compactions = []
            self._robot.update(moving=False, command=None, safety=None)
            return {
                "task": {
                    "task_id": event.task_id,
                    "instruction": event.instruction,
                    "max_turns": event.max_turns,
                    "turn": 0,
                    "status": "running",
                },
                "lanes": {},
                "compactions": [],
                "robot": self._robot_state(),
            }
        if isinstance(event, DoneEvent):
            if not main:
                self._lanes[event.task_id]["status"] = event.status
                return {"lanes": self._lanes_state()}
            self.hub.task_ended(event.task_id)
            self._robot.update(moving=False, command=None, stopped=event.robot_stopped)
            return {
                "task": {
                    **(self.hub.state().get("task") or {}),
                    "status": event.status,
                    "outcome": event.outcome,
                    "turn": event.turns,
                },
                "robot": self._robot_state(),
            }
        if isinstance(event, PromptSnapshotEvent) and main:
            return self._snapshot(event)
        if isinstance(event, ObservationEvent) and main:
            self._readings = self._envelope_readings(event.state)
            return {"robot": self._robot_state()}
        if isinstance(event, ToolCallEvent) and event.physical:
            self._robot.update(
                moving=True,
                command={"call_id": event.call_id, "name": event.name, "args": event.arguments},
            )
            return {"robot": self._robot_state()}
        if isinstance(event, ToolResultEvent):
            command = self._robot.get("command")
            if command and command.get("call_id") == event.call_id:
                self._robot.update(moving=False, command=None, last=event.name)
                return {"robot": self._robot_state()}
            return {}
        if isinstance(event, SafetyCheckEvent):
            self._robot["safety"] = {
                "tool": event.tool,
                "outcome": event.outcome,
                "reason": event.reason,
                "violations": event.violations,
                "applied": event.applied,
            }
            return {"robot": self._robot_state()}
        if isinstance(event, SafetyEvent):
            self._robot["alarm"] = f"{event.problem}: {event.reason}"
            return {"robot": self._robot_state()}
        if isinstance(event, CompactionEvent) and event.status in _CONTEXT_CHANGES:
            mode = MODE_NAMES.get(event.mode, event.mode)
            return self._context_change(mode, event.tokens_before, event.tokens_after)
        if isinstance(event, ContextPressureEvent):
            return self._context_change("pressure nudge", event.tokens, event.tokens)
        return {}

    def _snapshot(self, event: PromptSnapshotEvent) -> dict[str, Any]:
        """The request the model is about to get: its gauge, frames and Brief."""
        context = self.session.context
        refreshed = context.refreshed
        pressure = context.budget.pressure
        gauge: dict[str, Any] = gauge_of(event)
        if pressure is not None:
            gauge.update(
                nudge=pressure.nudge_tokens,
                cleanup=pressure.cleanup_tokens,
                land=pressure.land_tokens,
            )
        with self._lock:
            self._frames = list(refreshed.images)
            self._frames_version += 1
            version = self._frames_version
        task = dict(self.hub.state().get("task") or {})
        task["turn"] = event.turn
        return {
            "gauge": gauge,
            "frames": [
                {"index": i, "label": image.label, "width": image.width, "height": image.height}
                for i, image in enumerate(refreshed.images)
            ],
            "frames_version": version,
            "brief": self.hub.redact(refreshed.brief),
            "task": task,
        }

    def _context_change(self, mode: str, before: int, after: int) -> dict[str, Any]:
        self._compactions = [
            *self._compactions[-(COMPACTIONS_KEPT - 1) :],
            {"mode": mode, "before": before, "after": after},
        ]
        return {"compactions": list(self._compactions)}

    def _envelope_readings(self, state: dict[str, Any]) -> dict[str, Any]:
        """The readings the safety envelope checks (its profile's required readings),
        as the latest observation reported them."""
        names = _required_readings(self.session.safety)
        readings: dict[str, Any] = {}
        for name in names:
            node: Any = state
            for part in [name] if name in state else name.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            readings[name] = node
        return readings

    def _lanes_state(self) -> dict[str, Any]:
        """A copy all the way down: the hub compares states to skip unchanged ones."""
        return {lane: dict(info) for lane, info in self._lanes.items()}

    def _robot_state(self) -> dict[str, Any]:
        return {**self._robot, "readings": dict(self._readings)}


def _required_readings(safety: Any) -> list[str]:
    profile = getattr(safety, "profile", None)
    if profile is None:
        return []
    names = list(getattr(profile.safety, "required_readings", []) or [])
    if getattr(profile, "mobile", False):
        names.append("base_pose")
        names.extend(profile.base.clearance_readings.values())
    return list(dict.fromkeys(names))
