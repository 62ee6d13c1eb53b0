"""Complete arguments: the envelope checks the whole argument set the driver will act on.

A declared argument the call leaves out takes its schema ``default`` (the value the tool
will use), and that value is checked like any other and returned in the decision's
arguments. An argument that a check needs, left out (or sent as ``null``) with no default
to take, is blocked with the value the model should send instead: a tool must never fall
back to a default of its own that nobody checked (a speed of 1.5 m/s, all-zero joints).

The one exception is ``position.x``/``.y``/``.z``: left out or null with no default, the
gripper keeps that coordinate (the vocabulary says so), and the motion checks use the
gripper's reading for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from embodiment.envelope.common import Call, Verdict
from embodiment.profile import EmbodimentProfile

__all__ = ["CompleteArguments", "schema_default"]

KEEPS_CURRENT = frozenset({"position.x", "position.y", "position.z"})
"""Kinds whose absence means "stay where you are", not "use a value of your own"."""


def schema_default(schema: Mapping[str, Any] | None, name: str) -> tuple[bool, Any]:
    """(has a default, the default) of ``name`` in a JSON object schema."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    spec = properties.get(name) if isinstance(properties, Mapping) else None
    if isinstance(spec, Mapping) and "default" in spec:
        return True, spec["default"]
    return False, None


class CompleteArguments:
    """Fills schema defaults and blocks needed arguments that have none (the first built-in
    rule: when it blocks, no later rule runs, since they all need the complete set)."""

    name = "arguments"
    ends_on_block = True
    needs_unblocked = False

    def __init__(self, profile: EmbodimentProfile) -> None:
        self.profile = profile

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._complete_arguments(verdict, call.kinds)

    def _complete_arguments(self, verdict: Verdict, kinds: Mapping[str, str]) -> None:
        args = verdict.arguments
        for arg, kind in kinds.items():
            if kind == "free" or args.get(arg) is not None:
                continue
            has_default, default = schema_default(verdict.schema, arg)
            if arg not in args and has_default and default is not None:
                args[arg] = default  # checked below like any value the model sent
                verdict.filled.append(arg)
                continue
            if kind in KEEPS_CURRENT:
                continue
            given = "was sent as null" if arg in args else "was not given"
            verdict.block(
                f"missing_argument:{arg}: {arg} {given} and has no default the envelope can "
                f"check; {self._what_to_send(arg, kind)}"
            )

    def _what_to_send(self, arg: str, kind: str) -> str:
        profile = self.profile
        limits = profile.limits
        base = profile.base
        gripper = profile.grippers[0] if profile.grippers else None
        joints = len(limits.joint_limits or [])
        hints = {
            "speed": f"pass {arg} between {limits.min_speed_m_s:g} and "
            f"{limits.max_speed_m_s:g} m/s",
            "force": f"pass {arg} between {limits.min_force_n:g} and {limits.max_force_n:g} N",
            "width": (
                f"pass {arg} up to {gripper.max_opening_m:g} m"
                if gripper is not None and gripper.max_opening_m is not None
                else f"pass {arg} (the profile declares no gripper opening to check it against)"
            ),
            "joints": f"pass {arg} as {joints} joint positions (radians) within the joint limits",
            "position": f"pass {arg} as a target [x, y, z] inside the workspace",
            "object_ref": f"pass {arg} as the scene ref of the object",
            "target_ref": f"pass {arg} as the scene ref of the destination",
            "distance": f"pass {arg} in metres (at most {base.max_step_m or 0:g} m per call)",
            "direction": f"pass {arg} as forward, backward, left or right",
            "angle": f"pass {arg} in radians (at most {base.max_turn_rad or 0:g} rad per call)",
            "navigation": f"pass {arg} as a named goal",
        }
        return hints.get(kind, f"pass {arg}")
