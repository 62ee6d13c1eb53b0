"""The oracle's own kinematics and whole-body geometry, independent of the envelope's.

Forward kinematics is computed here with numpy straight from the URDF text: each joint's
``<origin xyz rpy>`` and ``<axis>``, composed as 4x4 transforms from the root link to the
end-effector link (a revolute joint rotates about its axis by Rodrigues' formula, a
prismatic one translates along it). Nothing here calls PyBullet or
``embodiment.envelope.kinematics``; only the URDF file is shared (found through
``pybullet_data`` for the ``pybullet_data:`` prefix). Frames are composed from the
profile's numbers by :mod:`benchmarks.lib.safety_oracle`'s own frame code.

It judges what a joint or base command really did, with the true (curved) paths sampled
finely: the joint-space line mapped through this FK, and the gripper carried by a base
move (a line) or turn (an arc about the base's origin).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

__all__ = ["UrdfChain", "base_sweep_problems", "joint_path_problems"]

FK_TOLERANCE_M = 1e-4
"""Slack for two FK implementations agreeing (float32 inside PyBullet, float64 here)."""
PATH_SAMPLES = 200


def _rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    k = axis / np.linalg.norm(axis)
    skew = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * skew + (1 - math.cos(angle)) * (skew @ skew)


def _transform(rotation: np.ndarray, translation: Sequence[float]) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = rotation
    out[:3, 3] = translation
    return out


URDF_TWINS: dict[tuple[str, str], tuple[str, str]] = {
    ("so101_new_calib.xml", "gripperframe"): ("so101_new_calib.urdf", "gripper_frame_link"),
}
"""MJCF model and end-effector site -> the URDF published with it and its matching link
(the oracle parses URDF only; the two files are exports of one CAD model)."""


def _package_file(rest: str) -> str:
    import importlib.util

    module, _, inner = rest.partition("/")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"no installed package {module!r}")
    return str(Path(next(iter(spec.submodule_search_locations))) / inner)


def _urdf_twin(path: str, ee_link: str) -> tuple[str, str]:
    twin = URDF_TWINS.get((Path(path).name, ee_link))
    if twin is None:
        raise ValueError(f"{path}: the oracle knows no URDF twin of this MJCF ({ee_link})")
    return str(Path(path).with_name(twin[0])), twin[1]


@dataclass(frozen=True)
class _Joint:
    name: str
    kind: str
    origin: np.ndarray
    axis: np.ndarray


@dataclass(frozen=True)
class UrdfChain:
    """The serial chain from a URDF's root link to one link, with its movable joints."""

    joints: tuple[_Joint, ...]
    movable: tuple[int, ...]
    """Indexes (into ``joints``) of the joints the command's values drive, in order."""
    profile: Any = None

    @classmethod
    def from_urdf(
        cls, path: str, ee_link: str, count: int, names: Sequence[str] | None = None
    ) -> UrdfChain:
        root = ElementTree.parse(path).getroot()
        by_child: dict[str, ElementTree.Element] = {}
        for joint in root.findall("joint"):
            child = joint.find("child")
            if child is not None:
                by_child[child.get("link", "")] = joint
        chain: list[_Joint] = []
        link = ee_link
        while link in by_child:
            element = by_child[link]
            origin = element.find("origin")
            xyz = [
                float(v)
                for v in ((origin.get("xyz") if origin is not None else None) or "0 0 0").split()
            ]
            rpy = [
                float(v)
                for v in ((origin.get("rpy") if origin is not None else None) or "0 0 0").split()
            ]
            axis_element = element.find("axis")
            axis = [
                float(v)
                for v in (
                    (axis_element.get("xyz") if axis_element is not None else None) or "1 0 0"
                ).split()
            ]
            chain.append(
                _Joint(
                    element.get("name", ""),
                    element.get("type", "fixed"),
                    _transform(_rpy(*rpy), xyz),
                    np.array(axis, dtype=float),
                )
            )
            parent = element.find("parent")
            link = parent.get("link", "") if parent is not None else ""
        chain.reverse()
        if names is not None:
            movable = tuple(i for name in names for i, j in enumerate(chain) if j.name == name)
        else:
            movable = tuple(
                i for i, j in enumerate(chain) if j.kind in ("revolute", "continuous", "prismatic")
            )[:count]
        if len(movable) != count:
            raise ValueError(f"{path}: {len(movable)} movable joints to {ee_link}, need {count}")
        return cls(tuple(chain), movable)

    @classmethod
    def from_profile(cls, profile: Any) -> UrdfChain:
        spec = profile.kinematics
        path, ee_link = spec.urdf, spec.ee_link
        if path.startswith("pybullet_data:"):
            import pybullet_data

            path = str(Path(pybullet_data.getDataPath()) / path.removeprefix("pybullet_data:"))
        elif path.startswith("package:"):
            path = _package_file(path.removeprefix("package:"))
        if path.endswith(".xml"):  # an MJCF: the oracle reads the URDF published beside it
            path, ee_link = _urdf_twin(path, ee_link)
        chain = cls.from_urdf(path, ee_link, len(profile.limits.joint_limits), spec.joints)
        return cls(chain.joints, chain.movable, profile)

    def root_point(self, q: Sequence[float]) -> tuple[float, float, float]:
        """The end-effector link's origin in the root link's frame."""
        values = dict(zip(self.movable, q, strict=True))
        pose = np.eye(4)
        for index, joint in enumerate(self.joints):
            pose = pose @ joint.origin
            if index in values:
                if joint.kind == "prismatic":
                    pose = pose @ _transform(np.eye(3), joint.axis * values[index])
                else:
                    pose = pose @ _transform(_axis_rotation(joint.axis, values[index]), (0, 0, 0))
        return (float(pose[0, 3]), float(pose[1, 3]), float(pose[2, 3]))

    def world_point(
        self, q: Sequence[float], base_pose: Sequence[float] | None = None
    ) -> tuple[float, float, float]:
        from benchmarks.lib.safety_oracle import frame_to_world

        return frame_to_world(
            self.profile, self.root_point(q), self.profile.kinematics.frame, base_pose
        )

    @staticmethod
    def line(start: Sequence[float], end: Sequence[float], samples: int) -> list[list[float]]:
        return [
            [a + (b - a) * i / samples for a, b in zip(start, end, strict=True)]
            for i in range(samples + 1)
        ]


def joint_path_problems(
    profile: Any,
    chain: UrdfChain,
    tool: str,
    before: Sequence[float],
    after: Sequence[float],
    base_pose: Sequence[float] | None = None,
) -> list[str]:
    """The gripper's path along the joint-space line ``before -> after``, sampled finely:
    inside the workspace, within one step of its start, never within a zone's margin
    (one that starts inside the margin must not get closer)."""
    points = [chain.world_point(q, base_pose) for q in chain.line(before, after, PATH_SAMPLES)]
    return _path_problems(profile, tool, points, "joint path", base_pose)


def base_sweep_problems(
    profile: Any,
    tool: str,
    ee_before: Sequence[float],
    base_before: Sequence[float],
    base_after: Sequence[float],
) -> list[str]:
    """The gripper carried rigidly from ``base_before`` to ``base_after`` (x, y, yaw): a
    translation is a line, a turn an arc about the base origin (the fake and the
    simulator do one or the other per call)."""
    (x0, y0, yaw0), (x1, y1, yaw1) = base_before, base_after
    points = []
    for i in range(PATH_SAMPLES + 1):
        t = i / PATH_SAMPLES
        turn = (yaw1 - yaw0) * t
        c, s = math.cos(turn), math.sin(turn)
        px, py = ee_before[0] - x0, ee_before[1] - y0
        bx, by = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
        points.append((bx + c * px - s * py, by + s * px + c * py, float(ee_before[2])))
    return _path_problems(
        profile, tool, points, "base sweep", None, base_from=base_before, base_to=base_after
    )


def _path_problems(
    profile: Any,
    tool: str,
    points: list[tuple[float, float, float]],
    what: str,
    base_pose: Sequence[float] | None,
    *,
    base_from: Sequence[float] | None = None,
    base_to: Sequence[float] | None = None,
) -> list[str]:
    from benchmarks.lib.safety_oracle import in_workspace, moves_with_base, zone_distance

    problems: list[str] = []
    margin = profile.safety.keep_out_margin_m
    start = points[0]
    sweeping = base_from is not None
    for index, point in enumerate(points):
        pose = base_pose
        if sweeping:
            t = index / (len(points) - 1)
            pose = [a + (b - a) * t for a, b in zip(base_from, base_to, strict=True)]  # type: ignore[arg-type]
        carried = sweeping and moves_with_base(profile, profile.workspace.frame)
        if not carried and not in_workspace(profile, point, pose, FK_TOLERANCE_M):
            problems.append(f"{tool}: {what} reaches {point}, outside the workspace")
            break
        limit = profile.base.max_step_m if sweeping else profile.limits.max_step_m
        if math.dist(start, point) > limit + FK_TOLERANCE_M:
            problems.append(f"{tool}: {what} reaches {math.dist(start, point):.4f} m (max {limit})")
            break
    for zone in profile.keep_out:
        if sweeping and moves_with_base(profile, zone.frame):
            continue
        first = zone_distance(profile, zone, points[0], base_pose)
        for point in points:
            gap = zone_distance(profile, zone, point, base_pose)
            if first >= margin and gap < margin - FK_TOLERANCE_M:
                problems.append(
                    f"{tool}: {what} comes {gap:.4f} m from {zone.name} (margin {margin})"
                )
                break
            if first < margin and gap < first - FK_TOLERANCE_M:
                problems.append(
                    f"{tool}: {what} moves closer to {zone.name} from inside its margin"
                )
                break
    return problems
