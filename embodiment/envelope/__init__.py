"""The safety envelope, one module per check family behind :class:`SafetyEnvelope`.

- :mod:`~embodiment.envelope.core`: the entry point (``check`` / ``check_call``) and the
  order the families run in; custom rules after them.
- :mod:`~embodiment.envelope.readings`: reading freshness and presence.
- :mod:`~embodiment.envelope.positions`: Cartesian targets, workspace, keep-out zones.
- :mod:`~embodiment.envelope.refs`: object and place refs, payload.
- :mod:`~embodiment.envelope.motion`: the path a call will execute.
- :mod:`~embodiment.envelope.scalars`: speed, force, gripper width.
- :mod:`~embodiment.envelope.joints`: joint limits and joint step.
- :mod:`~embodiment.envelope.base`: base moves and turns (step, turn, clearance).
- :mod:`~embodiment.envelope.sweep`: the gripper carried by a base move or turn.
- :mod:`~embodiment.envelope.jointspace`: joint targets through forward kinematics.
- :mod:`~embodiment.envelope.kinematics`: the kinematic model (URDF, PyBullet DIRECT).
- :mod:`~embodiment.envelope.arguments`: complete arguments (schema defaults, missing ones).
- :mod:`~embodiment.envelope.audit`: how each tool's motion is checked (``harness check``).
- :mod:`~embodiment.envelope.rules`: custom rules' request and outcome types.
"""

from embodiment.envelope.audit import MotionCheck
from embodiment.envelope.core import SafetyEnvelope
from embodiment.envelope.rules import RuleOutcome, SafetyRequest, SafetyRule, segment_hits_box

__all__ = [
    "MotionCheck",
    "RuleOutcome",
    "SafetyEnvelope",
    "SafetyRequest",
    "SafetyRule",
    "segment_hits_box",
]
