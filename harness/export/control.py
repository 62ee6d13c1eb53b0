"""A stored task's control steps, as one track: what a dataset or a bag is made of.

The run store keeps one ``control_steps`` event per physical command
(:class:`~harness.events.ControlStepsEvent`, written when ``recording.control`` is on). A
task's track is those events in store order, its sub-agent lanes' commands included (they
moved the same robot), joined end to end and checked on the way: one layout throughout,
a clock that never runs backwards, every step with a state, an action and each camera's
frame. Nothing here knows which world recorded them: names, units and the rate come from
the driver's own :class:`~embodiment.recording.ControlLayout`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from embodiment.recording import ControlLayout
from harness.errors import UsageError
from harness.events import ControlStepsEvent
from harness.store.reader import RunLog, StoredTask

__all__ = ["GAP_PERIODS", "CommandSteps", "ControlTrack", "ExportError", "stored_control"]

GAP_PERIODS = 1.5
"""Consecutive steps further apart than this many control periods are a gap (the robot
was held while nothing was commanded: a real robot between two commands)."""


class ExportError(UsageError):
    """A run that cannot be exported as asked (no control steps, mixed layouts...)."""


@dataclass(frozen=True)
class CommandSteps:
    """Which steps of a track one command made, and when it ran on the wall clock."""

    first: int
    """Index of its first step in the track."""
    count: int
    wall_start: float
    """When its first step arrived (the event's ``started``)."""
    wall_end: float
    """When the command ended (the event's time)."""
    call_id: str
    tool: str


@dataclass(frozen=True)
class ControlTrack:
    """Every control step of one task, in order (step ``k``: ``times[k]``, ``states[k]``,
    ``actions[k]``, ``frames[camera][k]``)."""

    layout: ControlLayout
    times: np.ndarray
    """(n,) seconds on the driver's clock."""
    states: np.ndarray
    """(n, len(layout.state_names)) float64."""
    actions: np.ndarray
    """(n, len(layout.action_names)) float64."""
    frames: dict[str, list[str]] = field(default_factory=dict)
    """Camera -> sha256 of each step's frame in the run store."""
    commands: tuple[CommandSteps, ...] = ()
    """The physical commands the steps came from, in order."""
    dropped: int = 0
    """Steps the recording could not keep (the track has holes there)."""

    def __len__(self) -> int:
        return len(self.times)

    @property
    def gaps(self) -> int:
        """Places where the clock jumps more than :data:`GAP_PERIODS` periods."""
        if len(self.times) < 2:
            return 0
        limit = GAP_PERIODS / self.layout.rate_hz
        return int(np.count_nonzero(np.diff(self.times) > limit))


def stored_control(log: RunLog, task: StoredTask, *, lanes: bool = True) -> ControlTrack | None:
    """The control track of ``task`` (with its lanes' commands), or None when it recorded
    no control step. Raises :class:`ExportError` for steps that do not join up."""
    ids = [task.id, *(lane.id for lane in log.lanes(task.id))] if lanes else [task.id]
    recorded = [
        event
        for _, event in log.events_with_pos(task_ids=ids, types=("control_steps",))
        if isinstance(event, ControlStepsEvent)
    ]
    dropped = sum(event.dropped for event in recorded)
    events = [event for event in recorded if event.times]
    if not events:
        return None
    layout = ControlLayout.model_validate(events[0].layout)
    cameras = list(events[0].frames)
    times: list[float] = []
    states: list[list[float]] = []
    actions: list[list[float]] = []
    frames: dict[str, list[str]] = {name: [] for name in cameras}
    commands: list[CommandSteps] = []
    for event in events:
        where = f"task {task.id}, command {event.call_id} ({event.tool})"
        if ControlLayout.model_validate(event.layout) != layout:
            raise ExportError(f"{where}: the control layout changed within the task")
        if list(event.frames) != cameras:
            raise ExportError(
                f"{where}: frames of {sorted(event.frames)}, the task's first command had "
                f"{sorted(cameras)}"
            )
        count = len(event.times)
        lengths = {len(event.states), len(event.actions), *map(len, event.frames.values())}
        if lengths != {count}:
            raise ExportError(f"{where}: {count} times but states/actions/frames of {lengths}")
        if times and event.times[0] < times[-1]:
            raise ExportError(f"{where}: its steps start before the previous command's ended")
        commands.append(
            CommandSteps(
                first=len(times),
                count=count,
                wall_start=event.started or event.time,
                wall_end=event.time,
                call_id=event.call_id,
                tool=event.tool,
            )
        )
        times.extend(event.times)
        states.extend(event.states)
        actions.extend(event.actions)
        for name in cameras:
            frames[name].extend(event.frames[name])
    track = ControlTrack(
        layout=layout,
        times=np.asarray(times, dtype=np.float64),
        states=np.asarray(states, dtype=np.float64).reshape(len(times), len(layout.state_names)),
        actions=np.asarray(actions, dtype=np.float64).reshape(len(times), len(layout.action_names)),
        frames=frames,
        commands=tuple(commands),
        dropped=dropped,
    )
    if np.any(np.diff(track.times) < 0):
        raise ExportError(f"task {task.id}: control step times run backwards")
    return track
