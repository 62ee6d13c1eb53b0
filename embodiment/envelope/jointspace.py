"""Joint-space motion in Cartesian space: where a ``joints`` target takes the gripper.

After the joint checks (limits, joint step) have admitted a target, the joint-space line
from the arm's reading to it is sampled, mapped through the profile's kinematic model
(:mod:`embodiment.envelope.kinematics`, placed at ``kinematics.frame`` with the live base
pose) and checked like any Cartesian motion: every sample inside the workspace, within
one step of where the gripper starts, every segment the margin clear of each keep-out
zone, all tightened by the bound on how far the curve strays from the samples.

A joint tool on a robot with no kinematic model is blocked, unless the profile sets
``safety.joint_limits_only: true`` (joint limits and joint step alone, said in so many
words). A model that cannot be built (PyBullet missing, a bad URDF) blocks too.
"""

from __future__ import annotations

from collections.abc import Mapping

from embodiment.envelope.common import Call, Verdict, finite_value
from embodiment.envelope.kinematics import KinematicModel, KinematicsError, kinematic_model
from embodiment.envelope.paths import Paths
from embodiment.profile import EmbodimentProfile
from embodiment.types import Observation, reading

__all__ = ["JointSpacePath"]


class JointSpacePath:
    """Forward kinematics of ``joints`` targets and their paths (a built-in rule; runs only
    on a call no earlier rule blocked)."""

    name = "joint_space"
    ends_on_block = False
    needs_unblocked = True

    def __init__(self, profile: EmbodimentProfile, paths: Paths | None = None) -> None:
        self.profile = profile
        self.paths = paths or Paths(profile)

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_joint_motion(verdict, call.name, call.kinds, call.observation)

    def kinematics(self) -> KinematicModel | None:
        """The profile's kinematic model (None: it has none); raises
        :class:`~embodiment.envelope.kinematics.KinematicsError` when it cannot be built."""
        spec = self.profile.kinematics
        if spec is None:
            return None
        return kinematic_model(spec, len(self.profile.limits.joint_limits or []))

    def _check_joint_motion(
        self,
        verdict: Verdict,
        name: str,
        kinds: Mapping[str, str],
        observation: Observation | None,
    ) -> None:
        joint_args = [arg for arg, kind in kinds.items() if kind == "joints"]
        if not joint_args:
            return
        profile = self.profile
        spec = profile.kinematics
        if spec is None:
            if profile.safety.joint_limits_only:
                return
            verdict.block(
                f"no_kinematic_model: {name} commands joint positions, but the profile has no "
                "kinematic model to tell where they put the arm; add `kinematics:` (the "
                "robot's URDF) to the profile, or set `safety.joint_limits_only: true` to "
                "accept joint limits alone"
            )
            return
        try:
            model = self.kinematics()
        except KinematicsError as exc:
            verdict.block(f"kinematics_unavailable: {exc}")
            return
        assert model is not None
        current = reading(observation, "joint_positions")
        count = model.joint_count
        if current is None or not finite_value(current) or len(current) != count:
            verdict.block(
                "missing_reading:joint_positions: needed to map the joint path through the "
                "kinematic model"
            )
            return
        now = [float(v) for v in current]
        for arg in joint_args:
            target = verdict.arguments.get(arg)
            if not isinstance(target, (list, tuple)) or len(target) != count:
                return  # the joint checks have blocked it already
            start = self._kinematic_to_world(verdict, model.ee_point(now))
            samples, slack = model.path(now, [float(v) for v in target])
            path = [self._kinematic_to_world(verdict, point) for point in samples]
            self.paths.check_path(
                verdict, name, start, path, slack=slack, what="joint-space path (kinematics)"
            )
            if verdict.blocks:
                return

    def _kinematic_to_world(
        self, verdict: Verdict, point: tuple[float, float, float]
    ) -> tuple[float, float, float]:
        spec = self.profile.kinematics
        assert spec is not None
        return self.profile.to_world(point, spec.frame, base_pose=verdict.base_pose)
