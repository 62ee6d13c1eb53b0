"""Forward kinematics of the arm, from the URDF the profile names (``kinematics:``).

The envelope maps every joint-space target, and samples of the joint-space line to it,
through this model to the end-effector point, and checks that path like a Cartesian
motion. The simulator's joint tools use the same model (:func:`kinematic_model`).

Library: the simulator's own, so the envelope checks the arm that moves with the same
parser and conventions as the simulator that executes the motion (``kinematics.engine``):

- PyBullet in ``DIRECT`` mode (no window, no physics stepping: joints are set with
  ``resetJointState`` and ``getLinkState(computeForwardKinematics=True)`` returns the link
  frame), for the PyBullet worlds (it ships the Panda and xArm URDFs in ``pybullet_data``);
- MuJoCo (:mod:`embodiment.envelope.kinematics_mujoco`: ``mj_kinematics`` on the model's
  own data, no physics step), for MJCF models and MuJoCo worlds. MuJoCo has wheels for
  every Python the harness supports (PyBullet 3.2.7 has none for 3.12), so a profile that
  must work next to LeRobot (Python >= 3.12) uses it. It was chosen over pinocchio for
  the same reason as PyBullet: it is already the simulator's dependency, and a second
  parser could read the model differently from the simulator.

The library is imported only when a profile has a kinematic model: without it installed
such a profile fails closed (every joint-space call is blocked, and the error says what
to install).

Between two samples the true (curved) end-effector path can leave the chord joining
them. :meth:`KinematicModel.deviation_bound` bounds that: moving joint ``i`` by ``dq_i``
moves the end effector at most ``R_i * |dq_i|``, where ``R_i`` bounds the distance from
joint ``i``'s axis to the end effector (the sum of the URDF offsets after it, by the
triangle inequality). Every point of the curve is within that bound of a sample; the
envelope keeps the samples that much further inside the workspace and from every zone.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from embodiment.profile import KinematicsSpec

__all__ = ["KinematicModel", "KinematicsError", "engine_of", "kinematic_model", "urdf_path"]

log = logging.getLogger(__name__)
PYBULLET_DATA = "pybullet_data:"
PACKAGE_DATA = "package:"
Vec3 = tuple[float, float, float]
SAMPLE_BOUND_M = 0.005
"""How far the curve may leave the chords between samples; samples are spaced to keep
the deviation bound below this."""
MAX_SAMPLES = 2000


class KinematicsError(RuntimeError):
    """The kinematic model cannot be built (library missing, URDF unreadable, names)."""


def urdf_path(urdf: str) -> str:
    """The file a profile's ``kinematics.urdf`` names (``pybullet_data:`` and
    ``package:<module>/<path>`` resolved)."""
    if urdf.startswith(PACKAGE_DATA):
        return _package_file(urdf)
    if not urdf.startswith(PYBULLET_DATA):
        return urdf
    try:
        import pybullet_data
    except ImportError as exc:
        raise KinematicsError(
            f"kinematics.urdf {urdf!r} is in pybullet_data, which is not installed "
            "(pip install 'embodied-harness[sim]')"
        ) from exc
    return str(Path(pybullet_data.getDataPath()) / urdf.removeprefix(PYBULLET_DATA))


@dataclass(frozen=True)
class _Chain:
    client: int
    body: int
    joints: tuple[int, ...]
    ee_link: int
    reach: tuple[float, ...]
    """Per arm joint: a bound on the distance from its axis to the end effector."""


class KinematicModel:
    """Forward kinematics of one URDF, positions in the URDF root link's frame."""

    def __init__(self, spec: KinematicsSpec, joint_count: int) -> None:
        self.spec = spec
        self.joint_count = joint_count
        self._lock = threading.Lock()
        self.engine = engine_of(spec)
        self._mujoco: Any = None
        if self.engine == "mujoco":
            from embodiment.envelope.kinematics_mujoco import MujocoChain

            self._mujoco = MujocoChain(urdf_path(spec.urdf), spec, joint_count, KinematicsError)
            return
        self._pb = _import_pybullet()
        self._chain = self._load()

    @property
    def reach(self) -> tuple[float, ...]:
        """Per arm joint: a bound on the distance from its axis to the end effector."""
        return self._mujoco.reach if self._mujoco is not None else self._chain.reach

    def _load(self) -> _Chain:
        pb = self._pb
        path = urdf_path(self.spec.urdf)
        if not Path(path).is_file():
            raise KinematicsError(f"kinematics.urdf: no such file {path}")
        client = pb.connect(pb.DIRECT)
        try:
            body = pb.loadURDF(path, useFixedBase=True, physicsClientId=client)
        except Exception as exc:
            pb.disconnect(physicsClientId=client)
            raise KinematicsError(f"kinematics.urdf: PyBullet cannot load {path}: {exc}") from exc
        info = [
            pb.getJointInfo(body, i, physicsClientId=client)
            for i in range(pb.getNumJoints(body, physicsClientId=client))
        ]
        by_joint = {row[1].decode(): row for row in info}
        links = {row[12].decode(): row[0] for row in info}
        if self.spec.ee_link not in links:
            pb.disconnect(physicsClientId=client)
            raise KinematicsError(
                f"kinematics.ee_link: {self.spec.ee_link!r} is not a link of {path} (links: "
                + ", ".join(links)
                + ")"
            )
        if self.spec.joints is not None:
            missing = [name for name in self.spec.joints if name not in by_joint]
            if missing:
                pb.disconnect(physicsClientId=client)
                raise KinematicsError(f"kinematics.joints: {missing} are not joints of {path}")
            joints = tuple(by_joint[name][0] for name in self.spec.joints)
        else:
            movable = [row[0] for row in info if row[2] in (pb.JOINT_REVOLUTE, pb.JOINT_PRISMATIC)]
            joints = tuple(movable[: self.joint_count])
        if len(joints) != self.joint_count:
            pb.disconnect(physicsClientId=client)
            raise KinematicsError(
                f"kinematics: {path} has {len(joints)} movable joints for "
                f"{self.joint_count} joint_limits"
            )
        ee = links[self.spec.ee_link]
        parents = {row[0]: row[16] for row in info}
        origins = _joint_offsets(path)
        offsets = {row[0]: origins.get(row[1].decode(), math.inf) for row in info}
        chain: list[int] = []
        link = ee
        while link >= 0:
            chain.append(link)
            link = parents[link]
        for joint in joints:
            if joint not in chain:
                pb.disconnect(physicsClientId=client)
                raise KinematicsError(
                    f"kinematics: joint {info[joint][1].decode()!r} does not move "
                    f"{self.spec.ee_link!r}"
                )
        # Links after joint i up to the end effector: their offsets bound the reach.
        reach = []
        for joint in joints:
            after = chain[: chain.index(joint)]  # the ee side of the joint
            reach.append(sum(offsets[link] for link in after))
        return _Chain(client, body, joints, ee, tuple(reach))

    def ee_point(self, joints: Sequence[float]) -> Vec3:
        """The end-effector link's origin for ``joints``, in the URDF root frame."""
        return self.ee_points([joints])[0]

    def ee_points(self, configurations: Sequence[Sequence[float]]) -> list[Vec3]:
        if self._mujoco is not None:
            with self._lock:
                return self._mujoco.points(configurations)
        pb, chain = self._pb, self._chain
        points: list[Vec3] = []
        with self._lock:
            for q in configurations:
                for joint, value in zip(chain.joints, q, strict=True):
                    pb.resetJointState(
                        chain.body, joint, float(value), physicsClientId=chain.client
                    )
                state = pb.getLinkState(
                    chain.body,
                    chain.ee_link,
                    computeForwardKinematics=True,
                    physicsClientId=chain.client,
                )
                points.append((float(state[4][0]), float(state[4][1]), float(state[4][2])))
        return points

    def deviation_bound(self, start: Sequence[float], end: Sequence[float], samples: int) -> float:
        """How far the end effector can be from the nearest of ``samples`` evenly spaced
        samples of the joint-space line ``start -> end`` (see the module docstring)."""
        travel = sum(r * abs(b - a) for r, a, b in zip(self.reach, start, end, strict=True))
        return travel / max(1, samples) / 2

    def path(self, start: Sequence[float], end: Sequence[float]) -> tuple[list[Vec3], float]:
        """Samples of the end-effector path along the joint-space line (``start``
        excluded, ``end`` included) and the deviation bound that holds between them."""
        travel = sum(r * abs(b - a) for r, a, b in zip(self.reach, start, end, strict=True))
        count = min(MAX_SAMPLES, max(1, math.ceil(travel / (2 * SAMPLE_BOUND_M))))
        configurations = [
            [a + (b - a) * index / count for a, b in zip(start, end, strict=True)]
            for index in range(1, count + 1)
        ]
        return self.ee_points(configurations), self.deviation_bound(start, end, count)

    def close(self) -> None:
        if self._mujoco is not None:
            return  # plain data, freed with the object
        try:
            self._pb.disconnect(physicsClientId=self._chain.client)
        except Exception:  # already gone
            log.debug("kinematics client already disconnected")


_MODELS: dict[tuple[Any, ...], KinematicModel] = {}
_MODELS_LOCK = threading.Lock()


def kinematic_model(spec: KinematicsSpec, joint_count: int) -> KinematicModel:
    """The (shared, cached) model of ``spec``; raises :class:`KinematicsError`."""
    key = (spec.urdf, spec.ee_link, tuple(spec.joints or ()), joint_count, engine_of(spec))
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = _MODELS[key] = KinematicModel(spec, joint_count)
        return model


def engine_of(spec: KinematicsSpec) -> str:
    """The library that computes ``spec``'s kinematics (see ``KinematicsSpec.engine``)."""
    if spec.engine is not None:
        return spec.engine
    return "mujoco" if spec.urdf.lower().endswith(".xml") else "pybullet"


def _package_file(urdf: str) -> str:
    """``package:<module>/<path>`` -> the file inside the installed package."""
    import importlib.util

    rest = urdf.removeprefix(PACKAGE_DATA)
    module, _, inner = rest.partition("/")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations or not inner:
        raise KinematicsError(
            f"kinematics.urdf {urdf!r}: no installed package {module!r} holds it "
            f"(pip install the package that ships the robot's model)"
        )
    return str(Path(locations[0]) / inner)


def _joint_offsets(path: str) -> dict[str, float]:
    """Each URDF joint's origin distance from its parent link's frame (the link lengths;
    PyBullet reports them relative to the parent's centre of mass instead)."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        raise KinematicsError(f"kinematics.urdf: cannot read {path}: {exc}") from exc
    offsets = {}
    for joint in root.findall("joint"):
        origin = joint.find("origin")
        xyz = (origin.get("xyz") if origin is not None else None) or "0 0 0"
        offsets[joint.get("name", "")] = math.dist((0.0, 0.0, 0.0), [float(v) for v in xyz.split()])
    return offsets


def _import_pybullet() -> Any:
    try:
        from embodiment.pybullet_import import import_pybullet
    except ImportError as exc:  # pragma: no cover - the sim package is part of embodiment
        raise KinematicsError(str(exc)) from exc
    try:
        return import_pybullet()
    except ImportError as exc:
        raise KinematicsError(
            "the profile's kinematics need PyBullet, which is not installed "
            "(pip install 'embodied-harness[sim]')"
        ) from exc
