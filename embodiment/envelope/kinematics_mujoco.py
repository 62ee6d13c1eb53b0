"""Forward kinematics with MuJoCo: the chain of one MJCF (or URDF) model, no physics.

:class:`~embodiment.envelope.kinematics.KinematicModel` uses this for a profile whose
``kinematics.engine`` is ``mujoco`` (the default for an ``.xml`` model). Joint positions
are written into the model's own ``qpos`` and ``mj_kinematics`` computes every frame; the
end-effector point is the named body's origin or the named site, expressed in the frame
of the chain's root body (the URDF's root link), the same frame the PyBullet backend
reports in. Nothing is stepped, so the answer is pure geometry of the model file.

The reach bound per joint (what ``deviation_bound`` multiplies by a joint's travel) is
the sum, along the chain from that joint to the end effector, of the joint anchor's
offset and every body and site offset after it: by the triangle inequality the end
effector is never further than that from the joint's axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from embodiment.profile import KinematicsSpec

__all__ = ["MujocoChain"]

Vec3 = tuple[float, float, float]


def _import_mujoco(error: type[Exception]) -> Any:
    try:
        import mujoco
    except ImportError as exc:
        raise error(
            "the profile's kinematics need MuJoCo, which is not installed (pip install mujoco)"
        ) from exc
    return mujoco


class MujocoChain:
    """The arm chain of ``path`` for ``spec`` (joints and end effector by name); a model
    that cannot be used raises ``error`` (the caller's ``KinematicsError``)."""

    def __init__(
        self, path: str, spec: KinematicsSpec, joint_count: int, error: type[Exception]
    ) -> None:
        KinematicsError = error
        mj = self._mj = _import_mujoco(error)
        if not Path(path).is_file():
            raise KinematicsError(f"kinematics.urdf: no such file {path}")
        try:
            model = mj.MjModel.from_xml_path(path)
        except Exception as exc:  # MuJoCo raises ValueError with the parser's words
            raise KinematicsError(f"kinematics.urdf: MuJoCo cannot load {path}: {exc}") from exc
        self.model = model
        self.data = mj.MjData(model)
        self._site = mj.mj_name2id(model, mj.mjtObj.mjOBJ_SITE, spec.ee_link)
        body = mj.mj_name2id(model, mj.mjtObj.mjOBJ_BODY, spec.ee_link)
        if self._site < 0 and body < 0:
            names = [model.body(i).name for i in range(1, model.nbody)]
            names += [model.site(i).name for i in range(model.nsite)]
            raise KinematicsError(
                f"kinematics.ee_link: {spec.ee_link!r} is no body or site of {path} "
                f"(bodies and sites: {', '.join(names)})"
            )
        self._body = int(model.site_bodyid[self._site]) if self._site >= 0 else body
        hinge_like = (mj.mjtJoint.mjJNT_HINGE, mj.mjtJoint.mjJNT_SLIDE)
        if spec.joints is not None:
            joints = []
            for name in spec.joints:
                jid = mj.mj_name2id(model, mj.mjtObj.mjOBJ_JOINT, name)
                if jid < 0:
                    raise KinematicsError(f"kinematics.joints: {name!r} is not a joint of {path}")
                joints.append(jid)
        else:
            joints = [j for j in range(model.njnt) if model.jnt_type[j] in hinge_like]
            joints = joints[:joint_count]
        if len(joints) != joint_count:
            raise KinematicsError(
                f"kinematics: {path} has {len(joints)} movable joints for "
                f"{joint_count} joint_limits"
            )
        chain = self._chain_bodies(self._body)
        for jid in joints:
            if int(model.jnt_bodyid[jid]) not in chain:
                raise KinematicsError(
                    f"kinematics: joint {model.joint(jid).name!r} does not move {spec.ee_link!r}"
                )
        self._qpos = [int(model.jnt_qposadr[j]) for j in joints]
        self._root = chain[-1]  # the body right below the world: the URDF's root link
        self.reach = tuple(self._reach(jid, chain) for jid in joints)

    def _chain_bodies(self, body: int) -> list[int]:
        """``body`` and its ancestors up to (not including) the world body."""
        chain = []
        while body > 0:
            chain.append(body)
            body = int(self.model.body_parentid[body])
        return chain

    def _reach(self, joint: int, chain: list[int]) -> float:
        model = self.model
        owner = int(model.jnt_bodyid[joint])
        after = chain[: chain.index(owner)]  # bodies below the joint's own, toward the ee
        total = float(np.linalg.norm(model.jnt_pos[joint]))
        total += sum(float(np.linalg.norm(model.body_pos[b])) for b in after)
        if self._site >= 0:
            total += float(np.linalg.norm(model.site_pos[self._site]))
        return total

    def points(self, configurations: Sequence[Sequence[float]]) -> list[Vec3]:
        """The end-effector point for each configuration, in the root body's frame."""
        mj, model, data = self._mj, self.model, self.data
        out: list[Vec3] = []
        for q in configurations:
            for address, value in zip(self._qpos, q, strict=True):
                if not math.isfinite(float(value)):
                    raise ValueError(f"joint position {value!r} is not finite")
                data.qpos[address] = float(value)
            mj.mj_kinematics(model, data)
            world = data.site_xpos[self._site] if self._site >= 0 else data.xpos[self._body]
            origin = data.xpos[self._root]
            rotation = data.xmat[self._root].reshape(3, 3)
            local = rotation.T @ (np.asarray(world) - origin)
            out.append((float(local[0]), float(local[1]), float(local[2])))
        return out
