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

import itertools
import math

import numpy as np

from worlds.libero.compartment import carry_in
from worlds.libero.control import HOME_YAW, Vec3
from worlds.libero.door_skills import sweep_door
from worlds.libero.doors import door_of
from worlds.libero.dragging import (
    drag_segments,
    out_of_the_way,
)
from worlds.libero.drawer_pull import open_segments, pull_posture, push_shut_segments
from worlds.libero.geometry import Box, LiberoGeometry
from worlds.libero.knobs import twist_knob
from worlds.libero.letting_go import clear_above, clear_of_walls
from worlds.libero.picking import MAX_GRASP_M, pick_plan
from worlds.libero.placing import lay_down, lean_out, place_reach, slot_yaw
from worlds.libero.reach import unfold_height
from worlds.libero.scene import resolve_target
from worlds.libero.segments import ABOVE_M, CARRY_Z, FAST, SLOW, Plan, Refusal, Segment
from worlds.libero.sliding import carry_over, push_spot
from worlds.libero.slot_lean import lean_into
from worlds.libero.spots import container_place, turned_spot
from worlds.libero.toppling import topple_into

__all__ = ["SkillPlanner"]

CLEARANCE_M = 0.05
HAND_HALF_M = 0.09
"""Half the Panda hand's length along the fingers' closing direction (above the fingers)."""
HAND_THICK_M = 0.03
"""Half its thickness across that direction."""


class SkillPlanner:
    """Turns a skill's arguments into a :class:`Plan` for the scene as it is now."""

    def __init__(
        self,
        geometry: LiberoGeometry,
        *,
        floor_z: float,
        ceiling_z: float,
        reach: tuple[Vec3, Vec3] | None = None,
    ) -> None:
        self.geo = geometry
        self.floor_z = floor_z
        self.ceiling_z = ceiling_z
        self.reach = reach
        """(low, high) corners of where the gripper may be sent (the arm's guarded
        workspace), for skills that search for a way: None, anywhere."""

    def within_reach(self, x: float, y: float) -> bool:
        """Whether the gripper may be sent to (x, y) (base frame)."""
        return self.outside_by(x, y) == 0.0

    def outside_by(self, x: float, y: float) -> float:
        """How far (x, y) (base frame) lies outside the box the gripper may be sent to (0
        inside it): a refusal says how far past the workspace's edge a way would go."""
        if self.reach is None:
            return 0.0
        (x0, y0, _), (x1, y1, _) = self.reach
        # hypot, not the norm of squares: a point a hair outside is never 0 away
        return math.hypot(max(0.0, x0 - x, x - x1), max(0.0, y0 - y, y - y1))

    def travel_height(self, *heights: float) -> float:
        """The height to travel at: above every height given and the usual carry height,
        below the ceiling."""
        return min(self.ceiling_z - 0.02, max(CARRY_Z, *heights))

    def rise(self, ee: Vec3, z: float) -> list[Segment]:
        """Straight up first when the gripper is lower than the height it will travel at;
        from far out (the arm nearly straight), up to UNFOLD_Z at least (``unfold_height``)."""
        z = max(z, unfold_height(ee, self.ceiling_z))
        if ee[2] < z - 0.01:
            return [Segment("move", "rise", (ee[0], ee[1], z))]
        return []

    def grasp_from_above(
        self, ee: Vec3, at: Vec3, *, above: float, travel: float, yaw: float
    ) -> list[Segment]:
        """Open, rise to ``travel``, go over the grasp point ``at``, come down to ``above``
        and slowly onto it, close: every pick from above starts this way (the wrist turns
        up at the travel height; a diagonal descent turning it low stalled short of a bowl
        at the side of the table, libero_spatial task 1)."""
        x, y, z = at
        return [
            Segment("grip", "open", close=False, yaw=yaw),
            *self.rise(ee, travel),
            Segment("move", "over", (x, y, travel), yaw=yaw),
            Segment("move", "approach", (x, y, above), yaw=yaw),
            Segment("move", "grasp", (x, y, z), speed=SLOW, tolerance=0.004, yaw=yaw),
            Segment("grip", "close", close=True, yaw=yaw),
        ]

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
        return pick_plan(self, ref, ee)

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
        # "in the bowl": a hollow object (a bowl, a mug) holds things without a region of
        # its own; anything else without a contain region does not
        hollow = item.kind == "object" and self.geo.hollow(target)
        if relation == "in" and "contain" not in item.tags and not hollow:
            return Refusal(f"{target} ({item.label}) is not something to put things in; use 'on'")
        if item.drawer and not self.geo.predicate("open", target):
            return Refusal(f"{target} ({item.label}) is closed; open it first")
        carried = carry_in(self, ref, target, relation, ee)  # through a door, under a cover
        if carried is not None:
            return carried
        obj, goal = self.geo.box(ref), self.geo.box(target)
        assert obj is not None and goal is not None
        hang = ee[2] - obj.bottom
        inside = goal.bottom + min(0.04, goal.size[2] / 2)
        release_bottom = inside if relation == "in" else goal.top + 0.015
        release_z = max(release_bottom + hang, self.floor_z + 0.01)
        carry = self.travel_height(goal.top + hang + CLEARANCE_M, ee[2], release_z + 0.02)
        # LIBERO judges "on" by the bodies' positions (within 3 cm) and "in" by the object's
        # body position inside the region: bring the object's body over the target's centre
        # (body for an object, site for a region), wherever the fingers hold it
        held_at = self.geo.body_position(ref)
        offset = np.array([ee[0] - held_at[0], ee[1] - held_at[1]])
        spot = self.geo.body_position(target) if item.kind == "object" else goal.centre
        yaw = slot_yaw(self.geo, target, MAX_GRASP_M) if relation == "in" else None
        leaned = lean_into(self, ref, target, yaw, ee) if yaw is not None else None
        if leaned is not None:  # upright it would stand too low in the slot (slot_lean.py)
            how = f"transport, lower {ref} leaned into {target}, release, retreat"
            return Plan(tuple(leaned), how)
        quarter = 0.0
        if item.kind == "region" and relation == "on":  # where it leaves room (spots.py)
            found = turned_spot(
                self.geo,
                ref,
                target,
                offset,
                lambda turn: place_reach(self.geo, goal.centre, release_z, turn),
                self.geo.closing_yaw(),
                self.reach,
            )
            spot, quarter = (goal.centre, 0.0) if found is None else found
            yaw = self.geo.closing_yaw() + quarter if quarter else None
        into = item.kind == "region" and not item.drawer and relation != "on"  # (spots.py)
        inside, speed = container_place(self.geo, ref, target, yaw) if into else (None, FAST)
        spot = spot if inside is None else inside
        if yaw is not None:  # the held thing turns with the wrist about the fingers
            turn = yaw - self.geo.closing_yaw()
            c, s_ = np.cos(turn), np.sin(turn)
            offset = np.array([c * offset[0] - s_ * offset[1], s_ * offset[0] + c * offset[1]])
        x = spot[0] + float(offset[0])
        y = spot[1] + float(offset[1])
        if inside is not None:  # the fingers open clear of the container's walls
            x, y = clear_of_walls(self.geo, ref, target, (x, y, release_z), yaw, offset)
        elif hollow and relation == "in":  # let go where the open fingers clear its rim
            release_z = clear_above(self.geo, ref, (x, y, release_z), yaw, carry - 0.02)
        laid = lay_down(self.geo, ref, target, ee, carry) if relation == "on" else None
        if laid is not None:  # onto a sloped cradle (a wine rack): laid along it
            return Plan((*self.rise(ee, carry), *laid), f"lay {ref} along {target}, release")
        if (fell := topple_into(self, ref, target, ee)) is not None:  # a drawer too low
            return Plan(tuple(fell), f"stand {ref} in {target}, push it over, retreat")
        # a quarter turn (spots.py) where the arm stands, before it reaches out: turned on
        # the way, 0.8 m out, the arm strayed 6 cm off its line
        turned = [Segment("twist", "turn", yaw=yaw)] if quarter else []
        below = (-float(offset[0]), -float(offset[1]), held_at[2] - ee[2])  # body from fingers
        (x, y), yaw, lean, posture = lean_out(self.geo, (x, y), (carry, release_z), yaw, below)
        segments = [
            *self.rise(ee, carry),
            *turned,
            Segment("move", "transport", (x, y, carry), speed=speed, yaw=yaw, lean=lean),
            Segment("move", "lower", (x, y, release_z), speed=SLOW, yaw=yaw, lean=lean),
            Segment("grip", "release", close=False),
            Segment("move", "retreat", (x, y, carry), speed=SLOW),
        ]
        tilt = f" leaned out {math.degrees(math.hypot(*lean)):.0f} degrees" if lean else ""
        how = f"transport, lower {relation} {target}{tilt}, release, retreat"
        return Plan(tuple(segments), how, posture=posture)

    def push(self, ref: str, target: str, ee: Vec3) -> Plan | Refusal:
        """Slide ``ref`` into ``target`` with the closed fingers: straight there when the
        place to start from (behind the object, opposite the target) is free, else in two
        legs along the base's axes, each started from a free side; refused when no way
        starts from free space (the fingers would come down on something)."""
        refusal = self._kind(ref, "object") or self._kind(target, "region")
        if refusal is not None:
            return refusal
        if self.geo.held_ref() is not None:
            return Refusal(f"the gripper holds {self.geo.held_ref()}; place it first")
        obj = self.geo.box(ref)
        goal = self.geo.box(target)
        assert obj is not None and goal is not None
        start = np.array(obj.centre[:2])
        end = push_spot(self, ref, obj, goal)  # not onto what stands in the region
        if float(np.linalg.norm(end - start)) < 0.005:
            return Refusal(f"{ref} is already at {target}")
        carried = carry_over(self, ref, obj, end, target, ee)
        if carried is not None:  # a plate whose slide would run into something
            return carried
        z = max(obj.bottom + min(0.015, obj.size[2] / 3), self.floor_z + 0.005)
        above = max(obj.top + ABOVE_M, z + 0.05)
        travel = self.travel_height(above, ee[2])
        corner = np.array([end[0], start[1]]), np.array([start[0], end[1]])
        routes = [[start, end], [start, corner[0], end], [start, corner[1], end]]
        blocked = ""
        for route in routes:
            legs = list(itertools.pairwise(route))
            if any(float(np.linalg.norm(b - a)) < 0.005 for a, b in legs):
                continue
            plans = [self._push_leg(ref, obj, a, b, z, above, travel) for a, b in legs]
            if all(isinstance(p, list) for p in plans):
                segments = [Segment("grip", "close", close=True), *self.rise(ee, travel)]
                for leg in plans:
                    segments.extend(leg)  # type: ignore[arg-type]
                how = "in one push" if len(legs) == 1 else "in two pushes"
                return Plan(
                    tuple(segments), f"push {ref} to {target} {how} from behind it, retreat"
                )
            blocked = next(p for p in plans if isinstance(p, str))
        return Refusal(f"cannot push {ref}: no free place to start from ({blocked})")

    def _push_leg(
        self,
        ref: str,
        obj: Box,
        start: np.ndarray,
        end: np.ndarray,
        z: float,
        above: float,
        travel: float,
    ) -> list[Segment] | str:
        """One straight push of ``ref`` from ``start`` to ``end`` (its centre, xy), or why
        the fingers cannot come down behind it."""
        distance = float(np.linalg.norm(end - start))
        direction = (end - start) / distance
        radius = float(abs(direction[0]) * obj.size[0] + abs(direction[1]) * obj.size[1]) / 2
        flat = obj.size[2] < 0.03 and min(obj.size[:2]) > 0.08
        if flat:
            # a plate: the fingers come down inside it, against the far wall of its rim, and
            # drag it (outside, they ride up over a sloped rim): down in its middle, then
            # across to the far rim's inner wall and on until the middle is where it should be
            behind = start
            finish = end + direction * max(radius - 0.02, 0.0)
            z = obj.bottom + 0.004
        else:
            behind = start - direction * (radius + 0.02)
            finish = end - direction * (radius + 0.005)
        # the fingers close across the push (their flat side meets the object), so the hand,
        # 0.2 m long along the closing direction, lies sideways above the place it comes down
        yaw = float(np.arctan2(direction[1], direction[0])) + np.pi / 2
        side = np.array([-direction[1], direction[0]])
        bx, by = float(behind[0]), float(behind[1])
        tips = ((bx - 0.012, by - 0.012, z), (bx + 0.012, by + 0.012, z + 0.05))
        reach = np.abs(side) * HAND_HALF_M + np.abs(direction) * HAND_THICK_M
        hand = (
            (bx - float(reach[0]), by - float(reach[1]), z + 0.05),
            (bx + float(reach[0]), by + float(reach[1]), above),
        )
        for low, high in (tips, hand) if not flat else (hand,):
            hit = self.geo.blocked(low, high, ignore=(ref,))
            if hit is not None:
                return f"{hit} is behind {ref}"
        f = (float(finish[0]), float(finish[1]))
        return [
            Segment("move", "approach", (bx, by, travel), yaw=yaw),
            Segment("move", "lower", (bx, by, z), speed=SLOW, yaw=yaw),
            Segment("move", "push", (*f, z), speed=SLOW, yaw=yaw),
            Segment("move", "retreat", (*f, travel), speed=SLOW, yaw=yaw),
        ]

    def twist_knob(self, ref: str, on: bool, ee: Vec3) -> Plan | Refusal:
        return twist_knob(self, ref, on, ee)

    def drawer(self, ref: str, open_it: bool, ee: Vec3) -> Plan | Refusal:
        item = self.geo.catalog.get(ref)
        if item is None:
            return Refusal(self.unknown(ref))
        if not item.drawer:
            return Refusal(f"{ref} ({item.label}) is not a drawer or door this world can move")
        if item.kind == "fixture":
            return self._door(ref, open_it, ee)
        handle = self.geo.articulation.drawer_handle(ref)
        if handle is None:
            return Refusal(f"{ref} has no handle to pull")
        if self.geo.held_ref() is not None:
            return Refusal(f"the gripper holds {self.geo.held_ref()}; place it first")
        towards = np.array(handle.opens_towards)
        hx, hy, hz = handle.grasp
        moved = self.geo.articulation.drawer_opening(ref)
        remaining = max(0.0, handle.travel_m + 0.01 - moved) if open_it else moved + 0.005
        handle_xy = np.array([hx, hy])
        out = handle_xy + towards[:2] * 0.12  # in front of the handle, clear of the face
        end = handle_xy + towards[:2] * (remaining if open_it else -remaining)
        carry = self.travel_height(hz, ee[2])

        def at(xy: np.ndarray, z: float = hz) -> Vec3:
            return (float(xy[0]), float(xy[1]), z)

        # a bowl the drawer, once open, would leave no way to is dragged out of its way
        # first (``dragging.out_of_the_way``): one more skill's motion, and step budget
        # (where the drawer will stand: its nominal open position, the middle of LIBERO's
        # open range; the pull aims 1 cm past it and stops short of that, 14.7 of 15.25 cm)
        opened = towards * max(0.0, handle.travel_m - moved)
        aside = out_of_the_way(self.geo, ref, opened) if open_it else None
        first: list[Segment] = []
        if aside is not None:
            thing, drag = aside
            thing_box = self.geo.box(thing)
            assert thing_box is not None
            above = thing_box.top + ABOVE_M
            first = drag_segments(self, drag, ee, above, self.travel_height(above, ee[2]))
            ee = (drag.end[0], drag.end[1], above)
            carry = self.travel_height(hz, ee[2])
        press = False
        posture = None
        if open_it:
            press, pull = open_segments(self.geo, item.parent, handle, at(out), at(end), carry)
            posture = None if press else pull_posture(self.geo, pull)
            segments = [
                *first,
                Segment("grip", "close" if press else "open", close=press),
                *self.rise(ee, carry),
                Segment("move", "approach", at(out, carry)),
                *pull,
            ]
        else:
            segments = push_shut_segments(self, handle_xy, towards, hz, end, ee, carry)
        verb = "grasp the handle, pull it open" if open_it else "push it shut"
        if press:
            # the handle too low to close the hand across, or no room for the arm to pull it
            verb = "press on the handle's top, drag it open"
        description = f"approach {ref}, {verb}, retreat"
        if aside is not None:
            moved = float(np.linalg.norm(aside[1].shift))
            description = (
                f"drag {aside[0]} {moved * 100:.0f} cm by its inside out from where the opened "
                f"drawer would leave no way to it, {description}"
            )
        # the press and the hook inside are two strokes: two skills' step budget
        strokes = 2 if any(segment.label == "hook" for segment in segments) else 1
        skills = strokes + (1 if aside is not None else 0)
        return Plan(tuple(segments), description, skills=skills, posture=posture)

    def _door(self, ref: str, open_it: bool, ee: Vec3) -> Plan | Refusal:
        """A fixture's hinged door (the microwave's), swept along its hinge."""
        door = door_of(self.geo, ref)
        if door is None:
            return Refusal(f"{ref} has no hinged door to move")
        if self.geo.held_ref() is not None:
            return Refusal(f"the gripper holds {self.geo.held_ref()}; place it first")
        segments = sweep_door(self, door, not open_it, ee)
        if isinstance(segments, str):
            return Refusal(segments)
        verb = "sweep its door open" if open_it else "sweep its door shut"
        return Plan(tuple(segments), f"approach {ref}, {verb} along the hinge, retreat")

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
            carry = self.travel_height(ee[2], home[2])
            segments = [
                *self.rise(ee, carry),
                Segment("move", "over", (home[0], home[1], carry)),
                Segment("move", "home", home, speed=SLOW, yaw=HOME_YAW),
            ]
            return Plan(tuple(segments), "up, over and down to the home pose")
        if action in {"open_gripper", "close_gripper"}:
            return Plan((Segment("grip", action, close=action == "close_gripper"),), action)
        return Refusal(f"unknown action {action!r}")
