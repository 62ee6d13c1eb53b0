"""What a LIBERO skill plan is made of: the segments the executor runs (moves, grips, wrist
turns, holds), the plan they form, a refusal, and the speeds they share.

Apart from :mod:`worlds.libero.skills` so that the skill helpers it calls (doors, placing)
build segments without importing the planner that imports them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from worlds.libero.control import Vec3

__all__ = ["ABOVE_M", "CARRY_Z", "FAST", "PUSH_DIP", "SLOW", "Plan", "Refusal", "Segment"]

ABOVE_M = 0.08
"""How far above an object's top a grasp or push is approached from."""
CARRY_Z = 0.25
"""Lowest height (base frame) the gripper carries things at; the arm starts at ~0.26-0.29."""
FAST = 0.3
PUSH_DIP = math.pi / 4
"""How far below the horizontal a drawer is pushed shut (see ``SkillPlanner._push_shut``)."""
SLOW = 0.12


@dataclass(frozen=True)
class Segment:
    kind: Literal["move", "grip", "twist", "hold"]
    label: str
    target: Vec3 | None = None
    speed: float = FAST
    close: bool = False
    yaw: float | None = None
    """The fingers' yaw to turn to, pointing down (None: keep the current orientation)."""
    facing: Vec3 | None = None
    """Point the gripper horizontally against this direction instead (a drawer's face)."""
    closing: Vec3 = (0.0, 0.0, 1.0)
    """With ``facing``: the direction the fingers close in."""
    dip: float = 0.0
    """With ``facing``: how far (radians) the approach points below the horizontal."""
    tolerance: float = 0.006
    lean: Vec3 | None = None  # with ``yaw``: tilt the gripper by this rotation vector
    steps: int = 0
    """With ``hold``: how many controller steps the arm stays where it is."""
    press: float = 0.0
    """With a move: a downward command (m/s, as the move's speed) added to every step, so
    the fingertips press on what they slide along (a low drawer's handle, dragged open by
    friction: ``drawer_pull.press_segments``)."""


@dataclass(frozen=True)
class Plan:
    segments: tuple[Segment, ...]
    description: str
    yaw: float = 0.0
    skills: int = 1
    posture: tuple[float, ...] | None = None
    """Arm joints the controller resolves the arm's redundancy towards while the plan runs
    (its null-space posture; otherwise the initial state's): the knob skill's, solved at
    the grasp (``reach.solve``)."""
    """How many skills' motions it holds: its controller-step budget is that many times
    one skill's (an opening that first drags a bowl out of the drawer's way)."""

    @property
    def waypoints(self) -> list[Vec3]:
        return [s.target for s in self.segments if s.kind == "move" and s.target is not None]


@dataclass(frozen=True)
class Refusal:
    message: str
