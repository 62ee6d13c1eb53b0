"""Programmatic post-conditions of the tabletop's actions, judged from ground truth.

This is the simulator's ``evaluate_run``: after a physical action the harness asks whether
the action's post-condition holds, and gets ``success`` or ``failure`` with evidence in
words a model (and an operator) can act on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from embodiment.geometry import point_text
from embodiment.types import PostCondition

if TYPE_CHECKING:
    from worlds.tabletop.simulator import TabletopSim

__all__ = ["TabletopPostConditions"]

LIFTED_M = 0.01
"""An object counts as lifted when its bottom is this far above what it rested on."""
AT_REST_M_S = 0.05
REACHED_M = 0.01


class TabletopPostConditions:
    """Checks ``pick``, ``place``, ``move_to``, ``open_gripper``, ``close_gripper`` and
    ``home`` against the simulator's state."""

    def __init__(self, sim: TabletopSim) -> None:
        self.sim = sim

    def check(
        self, action: str, arguments: Mapping[str, Any], result: Mapping[str, Any] | None
    ) -> PostCondition | None:
        method = getattr(self, f"_{action}", None)
        if method is None:
            return None
        return method(arguments, result or {})

    # ------------------------------------------------------------------ actions

    def _pick(self, arguments: Mapping[str, Any], result: Mapping[str, Any]) -> PostCondition:
        ref = str(arguments["ref"])
        if ref not in self.sim.refs():
            return PostCondition(status="failure", evidence=f"{ref} does not exist")
        held = self.sim.held_ref()
        width = self.sim.gripper_width()
        if held != ref:
            where = self._where(ref)
            holding = f"; the gripper holds {held}" if held else ""
            return PostCondition(
                status="failure",
                evidence=f"{ref} is not in the gripper: it {where}; fingers at {width:.3f} m"
                + holding,
            )
        (_, _, z), _ = self.sim.pose(ref)
        bottom = z - self.sim.body(ref).size[2] / 2
        lifted = bottom - 0.625
        if lifted < LIFTED_M:
            return PostCondition(
                status="failure",
                evidence=f"{ref} is between the fingers but not lifted ({lifted:.3f} m up)",
            )
        return PostCondition(
            status="success",
            evidence=f"{ref} is held between both fingers, {lifted:.3f} m above the table",
        )

    def _place(self, arguments: Mapping[str, Any], result: Mapping[str, Any]) -> PostCondition:
        ref, target = str(arguments["ref"]), str(arguments["target"])
        if ref not in self.sim.refs():
            return PostCondition(status="failure", evidence=f"{ref} does not exist")
        if self.sim.held_ref() == ref:
            return PostCondition(status="failure", evidence=f"{ref} is still in the gripper")
        support = self.sim.support_of(ref)
        speed = self.sim.speed_of(ref)
        if support is None or support[1] != target:
            return PostCondition(
                status="failure",
                evidence=f"{ref} was released but it {self._where(ref)}, not on/in {target}",
            )
        if speed > AT_REST_M_S:
            return PostCondition(
                status="failure",
                evidence=f"{ref} is {support[0]} {target} but still moving at {speed:.2f} m/s",
            )
        relation = "in" if support[0] == "inside" else "on"
        (x, y, z), _ = self.sim.pose(ref)
        return PostCondition(
            status="success",
            evidence=f"{ref} rests {relation} {target} at ({x:.3f}, {y:.3f}, {z:.3f})",
        )

    def _move_to(self, arguments: Mapping[str, Any], result: Mapping[str, Any]) -> PostCondition:
        target = (float(arguments["x"]), float(arguments["y"]), float(arguments["z"]))
        ee = self.sim.ee_position()
        error = math.dist(ee, target)
        if error > REACHED_M:
            return PostCondition(
                status="failure",
                evidence=f"the gripper stopped {error:.3f} m from the target, at {point_text(ee)}",
            )
        return PostCondition(status="success", evidence=f"the gripper is at {point_text(ee)}")

    def _open_gripper(
        self, arguments: Mapping[str, Any], result: Mapping[str, Any]
    ) -> PostCondition:
        wanted = float(arguments.get("width") or 0.08)
        width = self.sim.gripper_width()
        if width + 0.004 < wanted:
            return PostCondition(
                status="failure", evidence=f"the fingers opened only to {width:.3f} m"
            )
        return PostCondition(status="success", evidence=f"the gripper is open ({width:.3f} m)")

    def _close_gripper(
        self, arguments: Mapping[str, Any], result: Mapping[str, Any]
    ) -> PostCondition:
        width = self.sim.gripper_width()
        held = self.sim.held_ref()
        if held:
            return PostCondition(
                status="success", evidence=f"the gripper closed on {held} ({width:.3f} m)"
            )
        if width > 0.004:
            return PostCondition(
                status="failure", evidence=f"the fingers stopped at {width:.3f} m on nothing"
            )
        return PostCondition(status="success", evidence="the gripper is closed")

    def _home(self, arguments: Mapping[str, Any], result: Mapping[str, Any]) -> PostCondition:
        ee, home = self.sim.ee_position(), self.sim.home_position()
        error = math.dist(ee, home)
        if error > REACHED_M * 2:
            return PostCondition(
                status="failure", evidence=f"the gripper is {error:.3f} m from the home pose"
            )
        return PostCondition(status="success", evidence="the arm is in its home pose")

    # ------------------------------------------------------------------ helpers

    def _where(self, ref: str) -> str:
        (x, y, z), _ = self.sim.pose(ref)
        support = self.sim.support_of(ref)
        at = f"at ({x:.3f}, {y:.3f}, {z:.3f})"
        if support is None:
            return f"is loose {at}"
        relation = "in" if support[0] == "inside" else "on"
        return f"lies {relation} {support[1]} {at}"
