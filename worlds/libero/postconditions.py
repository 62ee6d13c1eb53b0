"""Programmatic post-conditions of the LIBERO world's actions, judged from simulator state.

After each physical action the harness asks whether its post-condition holds. ``pick`` is
judged by robosuite's grasp check and the object's height; ``place``, ``push``, ``open``,
``close``, ``turn_on`` and ``turn_off`` by LIBERO's own predicates (``In``/``On``,
``Open``/``Close``, ``TurnOn``/``TurnOff``) on the state after the motion. These judge one
action each; whether the task is achieved is only ever LIBERO's goal check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from embodiment.geometry import point_text
from embodiment.types import PostCondition
from worlds.libero.compartment import rests
from worlds.libero.scene import resolve_target

if TYPE_CHECKING:
    from worlds.libero.driver import LiberoSim

__all__ = ["LiberoPostConditions"]

LIFTED_M = 0.02
REACHED_M = 0.015


class LiberoPostConditions:
    """Checks every LIBERO action against the simulator's state."""

    def __init__(self, sim: LiberoSim) -> None:
        self.sim = sim

    def check(
        self, action: str, arguments: Mapping[str, Any], result: Mapping[str, Any] | None
    ) -> PostCondition | None:
        method = getattr(self, f"_{action}", None)
        if method is None:
            return None
        return method(dict(arguments), dict(result or {}))

    def _ok(self, evidence: str) -> PostCondition:
        return PostCondition(status="success", evidence=evidence)

    def _fail(self, evidence: str) -> PostCondition:
        return PostCondition(status="failure", evidence=evidence)

    def _where(self, ref: str) -> str:
        geo = self.sim.geometry
        box = geo.box(ref)
        support = geo.support_of(ref)
        at = f"at {point_text(box.centre)}" if box is not None else ""
        if support is None:
            return f"is loose {at}"
        relation = "in" if support[0] == "inside" else "on"
        return f"lies {relation} {support[1]} {at}"

    # ------------------------------------------------------------------ actions

    def _pick(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        ref = str(args["ref"])
        geo = self.sim.geometry
        if geo.catalog.get(ref) is None:
            return self._fail(f"{ref} does not exist")
        held = geo.held_ref()
        width = self.sim.gripper_width()
        if held != ref:
            holding = f"; the gripper holds {held}" if held else ""
            return self._fail(
                f"{ref} is not in the gripper: it {self._where(ref)}; fingers at {width:.3f} m"
                + holding
            )
        box = geo.box(ref)
        start = result.get("start_bottom")
        lifted = box.bottom - float(start) if box is not None and start is not None else 0.0
        if lifted < LIFTED_M:
            return self._fail(f"{ref} is between the fingers but not lifted ({lifted:.3f} m up)")
        return self._ok(f"{ref} is held between both fingers, lifted {lifted:.3f} m")

    def _place(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        ref, target = str(args["ref"]), str(args["target"])
        geo = self.sim.geometry
        if geo.catalog.get(ref) is None or geo.catalog.get(target) is None:
            return self._fail(f"{ref if geo.catalog.get(ref) is None else target} does not exist")
        held = geo.held_ref()
        if held == ref:
            return self._fail(f"{ref} is still in the gripper")
        if held is not None:  # the fingers opened on a container's walls and took it up
            return self._fail(f"{held} came away with the fingers: the release did not clear it")
        target, relation = resolve_target(geo.catalog, target, args.get("relation"))
        # LIBERO's In is about regions; a thing put in a hollow object (a bowl) rests on it,
        # which is LIBERO's On (in contact, above it): what its goals ask for such a place
        region = geo.catalog.items[target].kind == "region"
        predicate = "in" if relation == "in" and region else "on"
        if predicate == "on" and region:  # on a shelf's covered layer is inside it
            predicate = rests(geo, target, ref)
        if geo.predicate(predicate, ref, target):
            return self._ok(f"LIBERO {predicate.capitalize()}({ref}, {target}) holds")
        return self._fail(
            f"LIBERO {predicate.capitalize()}({ref}, {target}) does not hold: {ref} "
            f"{self._where(ref)}"
        )

    def _push(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        ref, target = str(args["ref"]), str(args["target"])
        geo = self.sim.geometry
        if geo.catalog.get(ref) is None or geo.catalog.get(target) is None:
            return self._fail(f"{ref} or {target} does not exist")
        if geo.predicate("on", ref, target):
            return self._ok(f"LIBERO On({ref}, {target}) holds")
        return self._fail(f"LIBERO On({ref}, {target}) does not hold: {ref} {self._where(ref)}")

    def _state(self, ref: str, predicate: str, words: str) -> PostCondition:
        geo = self.sim.geometry
        if geo.catalog.get(ref) is None:
            return self._fail(f"{ref} does not exist")
        try:
            held = geo.predicate(predicate, ref)
        except (AttributeError, KeyError, TypeError, ValueError, AssertionError) as exc:
            return self._fail(f"{ref} has no {words} state ({type(exc).__name__})")
        name = {"turnon": "TurnOn", "turnoff": "TurnOff"}.get(predicate, predicate.capitalize())
        verdict = "holds" if held else "does not hold"
        return (self._ok if held else self._fail)(f"LIBERO {name}({ref}) {verdict}")

    def _open(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        return self._state(str(args["ref"]), "open", "open/closed")

    def _close(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        return self._state(str(args["ref"]), "close", "open/closed")

    def _turn_on(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        return self._state(str(args["ref"]), "turnon", "on/off")

    def _turn_off(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        return self._state(str(args["ref"]), "turnoff", "on/off")

    def _move_to(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        target = (float(args["x"]), float(args["y"]), float(args["z"]))
        ee = self.sim.ee_position()
        error = sum((a - b) ** 2 for a, b in zip(ee, target, strict=True)) ** 0.5
        if error > REACHED_M:
            return self._fail(
                f"the gripper stopped {error:.3f} m from the target, at {point_text(ee)}"
            )
        return self._ok(f"the gripper is at {point_text(ee)}")

    def _open_gripper(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        width = self.sim.gripper_width()
        if width < 0.07:
            return self._fail(f"the fingers opened only to {width:.3f} m")
        return self._ok(f"the gripper is open ({width:.3f} m)")

    def _close_gripper(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        held = self.sim.held_ref()
        width = self.sim.gripper_width()
        if held:
            return self._ok(f"the gripper closed on {held} ({width:.3f} m)")
        if width > 0.004:
            return self._fail(f"the fingers stopped at {width:.3f} m on nothing")
        return self._ok("the gripper is closed")

    def _home(self, args: dict[str, Any], result: dict[str, Any]) -> PostCondition:
        ee, home = self.sim.ee_position(), self.sim.home_position()
        error = sum((a - b) ** 2 for a, b in zip(ee, home, strict=True)) ** 0.5
        if error > 0.03:
            return self._fail(f"the gripper is {error:.3f} m from the home pose")
        return self._ok("the arm is in its home pose")
