"""One timeline for a run's events (wall clock) and its control steps (the driver's clock).

A run alternates between deciding (the model thinks; a simulator stands still) and
commanding (the robot moves; a simulator's clock runs, faster or slower than the wall's).
Events carry the wall time they happened at; control steps carry the driver's time. A
replay (``ros2 bag play``) needs both on one clock, and the motion at the robot's own pace:

- between commands, replay time advances with the wall clock (the pauses while the model
  thought last as long as they did);
- during a command (from its first control step's arrival to the command's end, on the wall
  clock) replay time advances by the driver's clock instead: the command lasts as long as
  its control steps span (``n`` steps at ``rate_hz``), and an event that happened in the
  middle of it lands in the same proportion of that span.

So the map is piecewise linear and never decreasing, every control step keeps its spacing,
and the replay starts at the run's first wall time (``ros2 bag info`` shows real dates).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

__all__ = ["CommandSpan", "ReplayClock"]


@dataclass(frozen=True)
class CommandSpan:
    """One command: when its steps arrived and its end (wall clock), how long it moved
    (the driver's clock)."""

    wall_start: float
    wall_end: float
    duration: float


class ReplayClock:
    """Wall time -> replay time (seconds), see the module docstring.

    Spans come in the order the commands ran; one that starts before the span before it
    ended (a harness never runs two commands on one robot at once) is clipped to start
    where that one ended.
    """

    def __init__(self, spans: list[CommandSpan]) -> None:
        self._starts: list[float] = []
        self._spans: list[CommandSpan] = []
        self._offsets: list[float] = []
        """Replay minus wall time at each span's start."""
        offset = 0.0
        last_end = float("-inf")
        for span in spans:
            start = max(span.wall_start, last_end)
            end = max(span.wall_end, start)
            clipped = CommandSpan(start, end, max(span.duration, 0.0))
            self._starts.append(start)
            self._spans.append(clipped)
            self._offsets.append(offset)
            offset += clipped.duration - (end - start)
            last_end = end
        self._final_offset = offset

    def at(self, wall: float) -> float:
        """Replay time of an event that happened at ``wall``."""
        index = bisect.bisect_right(self._starts, wall) - 1
        if index < 0:
            return wall
        span, offset = self._spans[index], self._offsets[index]
        if wall <= span.wall_end:
            length = span.wall_end - span.wall_start
            fraction = (wall - span.wall_start) / length if length > 0 else 1.0
            return span.wall_start + offset + fraction * span.duration
        next_offset = (
            self._offsets[index + 1] if index + 1 < len(self._offsets) else self._final_offset
        )
        return wall + next_offset

    def command_start(self, index: int) -> float:
        """Replay time at which command ``index`` (in the order given) begins: its first
        step is shown there and its last ``duration`` later, where :meth:`at` puts the
        command's end (also for a command whose steps all arrived at one wall instant)."""
        return self._spans[index].wall_start + self._offsets[index]
