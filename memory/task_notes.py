"""Task Notes: the task's goal, phase and a bounded timeline of tool outcomes.

They are reset at task start, updated by the harness after each tool and by the model
through ``update_task_notes``, and enter Accumulated context as a snapshot only when they
changed (``version`` moves on every real change).

Every text they keep is bounded; ``clean`` (the harness passes its secret redactor) runs
before each bound, so a bound never keeps half a secret that a redactor matching the whole
one would then miss.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskNotes"]

MAX_NOTE_CHARS = 300
"""A note is a fact or a plan step, not a transcript; longer ones are cut with a marker."""
MAX_GOAL_CHARS = 2000


def _bounded(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


@dataclass
class TaskNotes:
    goal: str = ""
    phase: str = ""
    notes: list[str] = field(default_factory=list)
    timeline_max: int = 12
    timeline: deque[str] = field(default_factory=deque)
    version: int = 0
    max_notes: int = 20
    clean: Callable[[str], str] | None = field(default=None, repr=False, compare=False)
    """Runs on every text before it is bounded (secret redaction); not part of the state."""

    def __post_init__(self) -> None:
        self.timeline = deque(self.timeline, maxlen=self.timeline_max)

    def _bound(self, text: str, limit: int) -> str:
        return _bounded(self.clean(text) if self.clean else text, limit)

    def reset(self, goal: str) -> None:
        self.goal = self._bound(goal, MAX_GOAL_CHARS)
        self.phase = "started"
        self.notes = []
        self.timeline = deque(maxlen=self.timeline_max)
        self.version += 1

    def update(
        self,
        *,
        phase: str | None = None,
        add_notes: list[str] | None = None,
        goal: str | None = None,
        remove_notes: list[str] | None = None,
    ) -> bool:
        """Apply a model or harness update; returns True if anything changed."""
        before = self.render()
        if goal is not None and goal.strip():
            self.goal = self._bound(goal, MAX_GOAL_CHARS)
        if phase is not None and phase.strip():
            self.phase = self._bound(phase, MAX_NOTE_CHARS)
        for note in remove_notes or []:
            note = self._bound(note, MAX_NOTE_CHARS)
            if note in self.notes:
                self.notes.remove(note)
        for note in add_notes or []:
            note = self._bound(note, MAX_NOTE_CHARS)
            if note and note not in self.notes:
                self.notes.append(note)
        del self.notes[: max(0, len(self.notes) - self.max_notes)]
        changed = self.render() != before
        if changed:
            self.version += 1
        return changed

    def record_outcome(self, turn: int, tool: str, outcome: str) -> None:
        self.timeline.append(f"t{turn} {tool}: {self._bound(outcome, MAX_NOTE_CHARS)}")
        self.version += 1

    def state(self) -> dict[str, Any]:
        """The notes as JSON-able data (what the run store keeps at every snapshot)."""
        return {
            f.name: list(value) if isinstance(value, deque) else value
            for f in dataclasses.fields(self)
            if f.name != "clean"
            for value in [getattr(self, f.name)]
        }

    @classmethod
    def from_state(
        cls,
        data: Mapping[str, Any],
        *,
        timeline_max: int,
        clean: Callable[[str], str] | None = None,
    ) -> TaskNotes:
        """Inverse of :meth:`state`; unknown keys (a newer format) are ignored."""
        known = {f.name for f in dataclasses.fields(cls)} - {"clean"}
        values = {key: value for key, value in data.items() if key in known}
        values["timeline_max"] = timeline_max
        values["clean"] = clean
        timeline = values.pop("timeline", [])
        notes = cls(**values)
        notes.timeline = deque(timeline, maxlen=timeline_max)
        return notes

    def render(self) -> str:
        lines = ["Task Notes", f"goal: {self.goal}", f"phase: {self.phase}"]
        if self.notes:
            lines.append("notes:")
            lines.extend(f"- {note}" for note in self.notes)
        if self.timeline:
            lines.append("recent outcomes:")
            lines.extend(f"- {entry}" for entry in self.timeline)
        return "\n".join(lines)
