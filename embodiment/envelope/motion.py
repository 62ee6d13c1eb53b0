"""The path a call will execute: the driver's described waypoints, or the conservative
assumptions (straight line to a position target, the swept box of an approach to a ref);
every segment inside the workspace, clear of every keep-out zone by the margin and within
one step of where it starts (:mod:`embodiment.envelope.paths`).
"""

from __future__ import annotations

from embodiment.envelope.common import Call, MotionSource, Verdict
from embodiment.envelope.paths import Paths
from embodiment.profile import EmbodimentProfile
from embodiment.types import Motion

__all__ = ["MotionPath"]


class MotionPath:
    """Motion paths (a built-in rule; runs only on a call no earlier rule blocked)."""

    name = "motion"
    ends_on_block = False
    needs_unblocked = True

    def __init__(self, profile: EmbodimentProfile, paths: Paths | None = None) -> None:
        self.profile = profile
        self.paths = paths or Paths(profile)

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_motion(verdict, call.name, call.motion)

    def _check_motion(self, verdict: Verdict, name: str, motion: MotionSource | None) -> None:
        """The path check (:meth:`_check_path`); a block of a call the driver said it would
        refuse anyway also says the driver's reason (:attr:`Motion.refused`)."""
        refusal: list[str] = []
        blocks_before = len(verdict.blocks)
        self._check_path(verdict, name, motion, refusal)
        if refusal and len(verdict.blocks) > blocks_before:
            verdict.blocks[-1] += f"; the driver would refuse {name} anyway: {refusal[0]}"

    def _check_path(
        self, verdict: Verdict, name: str, motion: MotionSource | None, refusal: list[str]
    ) -> None:
        """Every segment of the path the call will execute: the driver's description for
        the admitted arguments, or, when it has none, the conservative assumptions: a
        position target is reached in a straight line, and a ref is approached within the
        box spanned by the gripper, the ref and ``approach_height_m`` above it."""
        if motion is not None:
            try:
                described = motion(dict(verdict.arguments))
            except Exception as exc:
                verdict.block(
                    f"motion_unknown: the driver could not describe {name}'s motion "
                    f"({type(exc).__name__}: {exc})"
                )
                return
            if described is not None:
                if not isinstance(described, Motion):
                    verdict.block(
                        f"motion_unknown: the driver described {name}'s motion as "
                        f"{type(described).__name__}, not a Motion"
                    )
                    return
                if described.refused:
                    refusal.append(described.refused)
                path = [tuple(float(v) for v in p) for p in described.waypoints]
                if path:
                    if self.paths.started(verdict, name):
                        self.paths.check_path(verdict, name, verdict.ee, path)  # type: ignore[arg-type]
                    return
                # Described with no waypoints: nothing was said about where it goes, so the
                # conservative assumptions below apply (they used to be skipped).
        if verdict.targets and self.paths.started(verdict, name):
            self.paths.check_path(verdict, name, verdict.ee, list(verdict.targets))  # type: ignore[arg-type]
        refs = list(verdict.refs.items())
        destinations = [(a, p) for a, (kind, p) in refs if kind == "target_ref"] or [
            (a, p) for a, (_, p) in refs
        ]
        for arg, (x, y, z) in destinations:
            if verdict.blocks or not self.paths.started(verdict, name):
                return
            above = (x, y, z + self.profile.safety.approach_height_m)
            self.paths.check_swept_box(
                verdict, name, str(verdict.arguments[arg]), [(x, y, z), above]
            )
