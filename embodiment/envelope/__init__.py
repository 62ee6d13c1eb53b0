"""The safety envelope: :class:`SafetyEnvelope` runs an ordered list of rule objects.

- :mod:`~embodiment.envelope.core`: the entry point (``check`` / ``check_call``), the
  built-in rules in the order they run (:func:`builtin_rules`), custom rules after them.
- :mod:`~embodiment.envelope.rules`: the rule protocols (:class:`EnvelopeRule` for the
  built-in rules, :class:`SafetyRule` for a deployment's own), a custom rule's request
  and outcome.
- :mod:`~embodiment.envelope.readings`: reading freshness and presence, before any rule.
- The built-in rules, one module each: :mod:`~embodiment.envelope.arguments` (complete
  arguments: schema defaults, missing ones), :mod:`~embodiment.envelope.positions`
  (Cartesian targets, workspace, keep-out zones), :mod:`~embodiment.envelope.refs`
  (object and place refs, payload), :mod:`~embodiment.envelope.scalars` (speed, force,
  gripper width), :mod:`~embodiment.envelope.joints` (joint limits and joint step),
  :mod:`~embodiment.envelope.base` (base moves and turns: step, turn, clearance),
  :mod:`~embodiment.envelope.jointspace` (joint targets through forward kinematics),
  :mod:`~embodiment.envelope.sweep` (the gripper carried by a base move or turn),
  :mod:`~embodiment.envelope.motion` (the path a call will execute).
- What the rules share: :mod:`~embodiment.envelope.common` (the call, the verdict),
  :mod:`~embodiment.envelope.frames` (workspace and zones from the world frame),
  :mod:`~embodiment.envelope.paths` (a path against workspace, step and zones),
  :mod:`~embodiment.envelope.kinematics` (the kinematic model: URDF, PyBullet DIRECT).
- :mod:`~embodiment.envelope.audit`: how each tool's motion is checked (``harness check``).
"""

from embodiment.envelope.audit import MotionCheck
from embodiment.envelope.common import Call, Verdict
from embodiment.envelope.core import SafetyEnvelope, builtin_rules
from embodiment.envelope.rules import (
    EnvelopeRule,
    RuleOutcome,
    SafetyRequest,
    SafetyRule,
    segment_hits_box,
)

__all__ = [
    "Call",
    "EnvelopeRule",
    "MotionCheck",
    "RuleOutcome",
    "SafetyEnvelope",
    "SafetyRequest",
    "SafetyRule",
    "Verdict",
    "builtin_rules",
    "segment_hits_box",
]
