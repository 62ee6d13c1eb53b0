"""Programmatic post-conditions of the SO-101's actions, judged from MuJoCo's state (the
simulator's ``evaluate_run``): ``success`` or ``failure`` with evidence a model can act on."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from embodiment.geometry import point_text
from embodiment.types import PostCondition
from worlds.so101.model import CUBE_HALF

if TYPE_CHECKING:
    from worlds.so101.driver import So101Sim

__all__ = ["So101PostConditions"]

LIFTED_M = 0.015
AT_REST_M_S = 0.05
REACHED_M = 0.012
JOINTS_REACHED_RAD = 0.06


class So101PostConditions:
    """Checks ``pick``, ``place``, ``move_to``, the jaw, ``home`` and ``move_joints``."""

    def __init__(self, sim: So101Sim) -> None:
        self.sim = sim

    def check(
        self, action: str, arguments: Mapping[str, Any], result: Mapping[str, Any] | None
    ) -> PostCondition | None:
        method = getattr(self, f"_{action}", None)
        if method is None:
            return None
        with self.sim.lock:
            return method(arguments)

    def _pick(self, arguments: Mapping[str, Any]) -> PostCondition:
        truth, ref = self.sim.truth, str(arguments["ref"])
        if ref not in truth.refs():
            return PostCondition(status="failure", evidence=f"{ref} does not exist")
        held = truth.held_ref()
        if held != ref:
            holding = f"; the jaw holds {held}" if held else ""
            return PostCondition(
                status="failure",
                evidence=f"{ref} is not between the jaws: it {self._where(ref)}{holding}",
            )
        (_, _, z), _ = truth.pose(ref)
        lifted = z - CUBE_HALF
        if lifted < LIFTED_M:
            return PostCondition(
                status="failure",
                evidence=f"{ref} is between the jaws but not lifted ({lifted:.3f} m up)",
            )
        return PostCondition(
            status="success", evidence=f"{ref} is held between both jaws, {lifted:.3f} m up"
        )

    def _place(self, arguments: Mapping[str, Any]) -> PostCondition:
        truth = self.sim.truth
        ref, target = str(arguments["ref"]), str(arguments["target"])
        if ref not in truth.refs():
            return PostCondition(status="failure", evidence=f"{ref} does not exist")
        if truth.held_ref() == ref:
            return PostCondition(status="failure", evidence=f"{ref} is still between the jaws")
        support = truth.support_of(ref)
        if support is None or support[1] != target:
            return PostCondition(
                status="failure",
                evidence=f"{ref} was released but it {self._where(ref)}, not on/in {target}",
            )
        speed = truth.speed_of(ref)
        if speed > AT_REST_M_S:
            return PostCondition(
                status="failure",
                evidence=f"{ref} is {support[0]} {target} but still moving at {speed:.2f} m/s",
            )
        (x, y, z), _ = truth.pose(ref)
        relation = "in" if support[0] == "inside" else "on"
        return PostCondition(
            status="success",
            evidence=f"{ref} rests {relation} {target} at ({x:.3f}, {y:.3f}, {z:.3f})",
        )

    def _move_to(self, arguments: Mapping[str, Any]) -> PostCondition:
        target = (float(arguments["x"]), float(arguments["y"]), float(arguments["z"]))
        ee = self.sim.physics.ee_position()
        error = math.dist(ee, target)
        if error > REACHED_M:
            return PostCondition(
                status="failure",
                evidence=f"the gripper stopped {error:.3f} m from the target, at {point_text(ee)}",
            )
        return PostCondition(status="success", evidence=f"the gripper is at {point_text(ee)}")

    def _open_gripper(self, arguments: Mapping[str, Any]) -> PostCondition:
        opening = self.sim.truth.gripper_opening()
        if opening < 0.9:
            return PostCondition(
                status="failure", evidence=f"the jaw opened only to {opening:.2f} rad"
            )
        return PostCondition(status="success", evidence=f"the jaw is open ({opening:.2f} rad)")

    def _close_gripper(self, arguments: Mapping[str, Any]) -> PostCondition:
        held = self.sim.truth.held_ref()
        if held:
            return PostCondition(status="success", evidence=f"the jaw closed on {held}")
        opening = self.sim.truth.gripper_opening()
        if opening > 0.1:
            return PostCondition(
                status="failure", evidence=f"the jaw stopped at {opening:.2f} rad on nothing"
            )
        return PostCondition(status="success", evidence="the jaw is closed")

    def _home(self, arguments: Mapping[str, Any]) -> PostCondition:
        return self._joints_at(self.sim.home, "the arm is in its home pose")

    def _move_joints(self, arguments: Mapping[str, Any]) -> PostCondition:
        return self._joints_at(list(arguments["joints"]), "the arm's joints are at the target")

    def _joints_at(self, wanted: list[float], success: str) -> PostCondition:
        joints = self.sim.physics.joints()[:5]
        error = max(abs(a - b) for a, b in zip(joints, wanted, strict=True))
        if error > JOINTS_REACHED_RAD:
            return PostCondition(
                status="failure",
                evidence=f"a joint stopped {error:.3f} rad from its target "
                f"(joints {[round(j, 3) for j in joints]})",
            )
        return PostCondition(status="success", evidence=success)

    def _where(self, ref: str) -> str:
        truth = self.sim.truth
        (x, y, z), _ = truth.pose(ref)
        support = truth.support_of(ref)
        at = f"at ({x:.3f}, {y:.3f}, {z:.3f})"
        if support is None:
            return f"is loose {at}"
        relation = "in" if support[0] == "inside" else "on"
        return f"lies {relation} {support[1]} {at}"
