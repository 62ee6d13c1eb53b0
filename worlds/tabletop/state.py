"""What the tabletop simulator's parts share: one PyBullet world and its bookkeeping.

The simulator (:class:`~worlds.tabletop.simulator.TabletopSim`) owns one
:class:`SimState` and hands it to each part it is built from: the physics, the ground
truth, the cameras and the tasks. A part reads and writes the state, never another
part's attributes; it calls another part only through that part's methods.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from embodiment.profile import EmbodimentProfile
from scene.perception import Detection
from worlds.tabletop.parts import MAX_OPENING, REST_POSE, Body
from worlds.tabletop.scene import Faults, TabletopConfig

__all__ = ["SimState"]


@dataclass
class SimState:
    """One simulated world: the client, its bodies, the robot, the clock and counters."""

    config: TabletopConfig
    profile: EmbodimentProfile
    pb: Any
    """The PyBullet module (imported quietly)."""
    dt: float
    """Seconds of one physics step."""
    real_time_factor: float
    """Motions paced to this multiple of real time (0: as fast as possible)."""
    faults: Faults
    lock: threading.RLock = field(default_factory=threading.RLock)
    stop: threading.Event = field(default_factory=threading.Event)
    """Set by ``stop()`` from any thread; the next physics step raises ``Interrupted``."""
    cid: int | None = None
    """The PyBullet client; None while disconnected."""
    robot: int = -1
    bodies: dict[str, Body] = field(default_factory=dict)
    sim_time: float = 0.0
    yaw: float = 0.0
    """The gripper's commanded yaw."""
    motion: str = "idle"
    finger_command: tuple[float, float] = (MAX_OPENING / 2, 20.0)
    picks: Counter[str] = field(default_factory=Counter)
    """Picks of each object so far (an injected slip fires on the first N)."""
    truth: tuple[float, list[Detection]] | None = None
    """The ground truth captured with the last observation (its timestamp, detections)."""
    seen: set[int] = field(default_factory=set)
    """Body ids some rendered frame has shown (``perception: seen``)."""
    pace_origin: tuple[float, float] = (0.0, 0.0)
    """(wall clock, simulated time) when the current motion started (real-time pacing)."""
    tray_floor: float = 0.006
    """Thickness of the tray's floor."""
    step_observers: list[Callable[[tuple[float, float, float]], None]] = field(default_factory=list)
    """Called with the grasp point (world frame) after every physics step of a motion."""
    steps: int = 0
    """Physics steps so far; a control step starts every ``config.physics_per_control``."""
    arm_command: list[float] = field(default_factory=lambda: list(REST_POSE))
    """The arm's joint targets as last commanded (sent to the motors at a control step)."""
    targets_sent: bool = False
    """Whether the motors have the commanded arm and finger targets."""
    on_control_step: Callable[[], None] | None = None
    """Called at the start of every control step, after the targets were sent (a
    recording's hook; None while nothing records)."""
