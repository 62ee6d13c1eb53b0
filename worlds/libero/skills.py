"""The skills of the LIBERO world as plans: gripper waypoints worked out once from
privileged simulator state, which ``describe_motion`` reports to the safety envelope and
``execute`` follows segment by segment.

A plan is a sequence of segments: a straight-line ``move`` of the gripper to a point (base
frame) at a speed, a ``grip`` (open or close the fingers where the gripper is), or a
``twist`` (turn the gripper about its vertical axis where it is, for a knob). Every point a
plan moves to is in its waypoint list, in order, so the envelope checks exactly the path
the arm is sent along. A skill that cannot run here returns a :class:`Refusal` instead, and
nothing moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from worlds.libero.control import HOME_YAW, Vec3
from worlds.libero.geometry import LiberoGeometry
from worlds.libero.scene import resolve_target

__all__ = ["Plan", "Refusal", "Segment", "SkillPlanner"]

CARRY_Z = 0.25
"""Lowest height (base frame) the gripper carries things at; the arm starts at ~0.26-0.29."""
ABOVE_M = 0.08
"""How far above an object's top a grasp or push is approached from."""
CLEARANCE_M = 0.05
MAX_GRASP_M = 0.078
"""Widest thing the fingers close around (they open to 0.08 m)."""
FAST = 0.3
SLOW = 0.12


@dataclass(frozen=True)
class Segment:
    kind: Literal["move", "grip", "twist"]
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
    tolerance: float = 0.006


@dataclass(frozen=True)
class Plan:
    segments: tuple[Segment, ...]
    description: str
    yaw: float = 0.0

    @property
    def waypoints(self) -> list[Vec3]:
        return [s.target for s in self.segments if s.kind == "move" and s.target is not None]


@dataclass(frozen=True)
class Refusal:
    message: str


class SkillPlanner:
    """Turns a skill's arguments into a :class:`Plan` for the scene as it is now."""

    def __init__(self, geometry: LiberoGeometry, *, floor_z: float, ceiling_z: float) -> None:
        self.geo = geometry
        self.floor_z = floor_z
        self.ceiling_z = ceiling_z

    # ------------------------------------------------------------------ helpers

    def _carry(self, *heights: float) -> float:
        return min(self.ceiling_z - 0.02, max(CARRY_Z, *heights))

    def _rise(self, ee: Vec3, z: float) -> list[Segment]:
        """Straight up first when the gripper is lower than the height it will travel at."""
        if ee[2] < z - 0.01:
            return [Segment("move", "rise", (ee[0], ee[1], z))]
        return []

    def _kind(self, ref: str, *kinds: str) -> Refusal | None:
        item = self.geo.catalog.get(ref)
        if item is None:
            return Refusal(self.unknown(ref))
        if item.kind not in kinds:
            return Refusal(
                f"{ref} is a {item.label} ({item.kind}); expected a {' or '.join(kinds)}"
            )
        return None

    def unknown(self, ref: str) -> str:
        import difflib

        close = difflib.get_close_matches(ref, list(self.geo.catalog.items), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"unknown ref {ref!r}{hint}"

    # ------------------------------------------------------------------ skills

    def pick(self, ref: str, ee: Vec3) -> Plan | Refusal:
        refusal = self._kind(ref, "object")
        if refusal is not None:
            return refusal
        held = self.geo.held_ref()
        if held is not None:
            verb = "already holds it" if held == ref else f"holds {held}"
            return Refusal(f"the gripper {verb}; place it first")
        box = self.geo.box(ref)
        assert box is not None
        (x, y, grasp_z), yaw, width = self.geo.grasp(ref)
        if width > MAX_GRASP_M:
            return Refusal(
                f"{ref} is {width:.3f} m across where it would be grasped; the "
                f"fingers open to {MAX_GRASP_M:.2f} m"
            )
        grasp_z = max(grasp_z, self.floor_z + 0.01)
        above = min(self.ceiling_z - 0.02, max(box.top + ABOVE_M, grasp_z + 0.04))
        lift = self._carry(grasp_z + 0.15)
        segments = [
            Segment("grip", "open", close=False, yaw=yaw),
            *self._rise(ee, above),
            Segment("move", "approach", (x, y, above), yaw=yaw),
            Segment("move", "grasp", (x, y, grasp_z), speed=SLOW, tolerance=0.004, yaw=yaw),
            Segment("grip", "close", close=True, yaw=yaw),
            Segment("move", "lift", (x, y, lift), speed=SLOW, yaw=yaw),
        ]
        return Plan(tuple(segments), "approach, grasp, lift", yaw)

    def place(self, ref: str, target: str, relation: str | None, ee: Vec3) -> Plan | Refusal:
        refusal = self._kind(ref, "object") or self._kind(target, "object", "fixture", "region")
        if refusal is not None:
            return refusal
        if target == ref:
            return Refusal(f"cannot put {ref} on itself")
        target, relation = resolve_target(self.geo.catalog, target, relation)
        if self.geo.catalog.items[target].kind == "fixture":
            return Refusal(f"{target} has no region to put things {relation}; name one")
        held = self.geo.held_ref()
        if held != ref:
            what = f"it holds {held}" if held else "it holds nothing"
            return Refusal(f"{ref} is not in the gripper ({what}); pick it first")
        item = self.geo.catalog.items[target]
        if relation == "in" and "contain" not in item.tags:
            return Refusal(f"{target} ({item.label}) is not something to put things in; use 'on'")
        if item.drawer and not self.geo.predicate("open", target):
            return Refusal(f"{target} ({item.label}) is closed; open it first")
        obj = self.geo.box(ref)
        goal = self.geo.box(target)
        assert obj is not None and goal is not None
        hang = ee[2] - obj.bottom
        if relation == "in":
            release_bottom = goal.bottom + min(0.04, goal.size[2] / 2)
        else:
            release_bottom = goal.top + 0.015
        release_z = max(release_bottom + hang, self.floor_z + 0.01)
        carry = self._carry(goal.top + hang + CLEARANCE_M, ee[2], release_z + 0.02)
        # LIBERO judges "on" by the bodies' positions (within 3 cm) and "in" by the object's
        # body position inside the region: bring the object's body over the target's centre
        # (body for an object, site for a region), wherever the fingers hold it
        held_at = self.geo.body_position(ref)
        spot = self.geo.body_position(target) if item.kind == "object" else goal.centre
        x = spot[0] + (ee[0] - held_at[0])
        y = spot[1] + (ee[1] - held_at[1])
        segments = [
            *self._rise(ee, carry),
            Segment("move", "transport", (x, y, carry)),
            Segment("move", "lower", (x, y, release_z), speed=SLOW),
            Segment("grip", "release", close=False),
            Segment("move", "retreat", (x, y, carry), speed=SLOW),
        ]
        return Plan(tuple(segments), f"transport, lower {relation} {target}, release, retreat")

    def push(self, ref: str, target: str, ee: Vec3) -> Plan | Refusal:
        refusal = self._kind(ref, "object") or self._kind(target, "region")
        if refusal is not None:
            return refusal
        if self.geo.held_ref() is not None:
            return Refusal(f"the gripper holds {self.geo.held_ref()}; place it first")
        obj = self.geo.box(ref)
        goal = self.geo.box(target)
        assert obj is not None and goal is not None
        start = np.array(obj.centre[:2])
        end = np.array(goal.centre[:2])
        distance = float(np.linalg.norm(end - start))
        if distance < 0.005:
            return Refusal(f"{ref} is already at {target}")
        direction = (end - start) / distance
        radius = obj.size[0] / 2
        behind = start - direction * (radius + 0.04)
        finish = end - direction * (radius + 0.005)
        z = max(obj.bottom + 0.015, self.floor_z + 0.01)
        above = max(obj.top + ABOVE_M, z + 0.05)
        segments = [
            Segment("grip", "close", close=True),
            *self._rise(ee, above),
            Segment("move", "approach", (float(behind[0]), float(behind[1]), above)),
            Segment("move", "lower", (float(behind[0]), float(behind[1]), z), speed=SLOW),
            Segment("move", "push", (float(finish[0]), float(finish[1]), z), speed=SLOW),
            Segment("move", "retreat", (float(finish[0]), float(finish[1]), above), speed=SLOW),
        ]
        return Plan(tuple(segments), f"approach behind {ref}, push it to {target}, retreat")

    def twist_knob(self, ref: str, on: bool, ee: Vec3) -> Plan | Refusal:
        refusal = self._kind(ref, "fixture")
        if refusal is not None:
            return refusal
        knob = self.geo.knob(ref)
        if knob is None:
            return Refusal(f"{ref} has no knob or switch to turn")
        if self.geo.held_ref() is not None:
            return Refusal(f"the gripper holds {self.geo.held_ref()}; place it first")
        (x, y, z), yaw, turn = knob
        above = max(z + ABOVE_M, CARRY_Z - 0.05)
        angle = turn if on else -turn
        segments = [
            Segment("grip", "open", close=False, yaw=yaw),
            *self._rise(ee, above),
            Segment("move", "approach", (x, y, above), yaw=yaw),
            Segment("move", "grasp", (x, y, z), speed=SLOW, yaw=yaw, tolerance=0.004),
            Segment("grip", "close", close=True, yaw=yaw),
            Segment("twist", "turn", yaw=yaw + angle),
            Segment("grip", "release", close=False, yaw=yaw + angle),
            Segment("move", "retreat", (x, y, above), speed=SLOW, yaw=yaw + angle),
        ]
        return Plan(tuple(segments), "approach, grasp the knob, turn it, release, retreat", yaw)

    def drawer(self, ref: str, open_it: bool, ee: Vec3) -> Plan | Refusal:
        item = self.geo.catalog.get(ref)
        if item is None:
            return Refusal(self.unknown(ref))
        if not item.drawer:
            return Refusal(f"{ref} ({item.label}) is not a drawer or door this world can move")
        handle = self.geo.drawer_handle(ref)
        if handle is None:
            return Refusal(f"{ref} has no handle to pull")
        if self.geo.held_ref() is not None:
            return Refusal(f"the gripper holds {self.geo.held_ref()}; place it first")
        towards = np.array(handle.opens_towards)
        facing = (float(towards[0]), float(towards[1]), 0.0)
        closing = handle.closing
        hx, hy, hz = handle.grasp
        moved = self.geo.drawer_opening(ref)
        remaining = max(0.0, handle.travel_m + 0.01 - moved) if open_it else moved + 0.005
        handle_xy = np.array([hx, hy])
        out = handle_xy + towards[:2] * 0.12  # in front of the handle, clear of the face
        end = handle_xy + towards[:2] * (remaining if open_it else -remaining)
        carry = self._carry(hz, ee[2])

        def at(xy: np.ndarray, z: float = hz) -> Vec3:
            return (float(xy[0]), float(xy[1]), z)

        if open_it:
            segments = [
                Segment("grip", "open", close=False),
                *self._rise(ee, carry),
                Segment("move", "approach", at(out, carry)),
                Segment("move", "face", at(out), facing=facing, closing=closing),
                Segment(
                    "move",
                    "reach",
                    at(handle_xy + towards[:2] * 0.005),
                    speed=SLOW,
                    facing=facing,
                    closing=closing,
                    tolerance=0.004,
                ),
                Segment("grip", "grasp", close=True, facing=facing, closing=closing),
                Segment("move", "pull", at(end), speed=SLOW, facing=facing, closing=closing),
                Segment("grip", "release", close=False, facing=facing, closing=closing),
                Segment(
                    "move", "back off", at(end + towards[:2] * 0.08), speed=SLOW, facing=facing
                ),
                Segment("move", "clear", at(end + towards[:2] * 0.08, carry), yaw=HOME_YAW),
            ]
        else:
            front = handle_xy + towards[:2] * 0.03
            segments = [
                Segment("grip", "close", close=True),
                *self._rise(ee, carry),
                Segment("move", "approach", at(out, carry)),
                Segment("move", "face", at(out), facing=facing, closing=closing),
                Segment("move", "touch", at(front), speed=SLOW, facing=facing, closing=closing),
                Segment(
                    "move",
                    "push",
                    at(end + towards[:2] * 0.03),
                    speed=SLOW,
                    facing=facing,
                    closing=closing,
                ),
                Segment("move", "back off", at(out), facing=facing, closing=closing),
                Segment("move", "clear", at(out, carry), yaw=HOME_YAW),
            ]
        verb = "grasp the handle, pull it open" if open_it else "push it shut"
        return Plan(tuple(segments), f"approach {ref}, {verb}, retreat")

    def simple(
        self,
        action: str,
        args: dict[str, object],
        ee: Vec3,
        home: Vec3,
        default_speed: float,
    ) -> Plan | Refusal:
        """move_to, home, open_gripper, close_gripper."""
        if action == "move_to":
            speed = float(args.get("speed") or default_speed)  # type: ignore[arg-type]
            target = (float(args["x"]), float(args["y"]), float(args["z"]))  # type: ignore[arg-type]
            return Plan((Segment("move", "line", target, speed=speed),), "straight line")
        if action == "home":
            carry = self._carry(ee[2], home[2])
            segments = [
                *self._rise(ee, carry),
                Segment("move", "over", (home[0], home[1], carry)),
                Segment("move", "home", home, speed=SLOW, yaw=HOME_YAW),
            ]
            return Plan(tuple(segments), "up, over and down to the home pose")
        if action in {"open_gripper", "close_gripper"}:
            return Plan((Segment("grip", action, close=action == "close_gripper"),), action)
        return Refusal(f"unknown action {action!r}")
