"""The safety envelope, one module per check family behind :class:`SafetyEnvelope`.

- :mod:`~embodiment.envelope.core`: the entry point (``check`` / ``check_call``) and the
  order the families run in; custom rules after them.
- :mod:`~embodiment.envelope.readings`: reading freshness and presence.
- :mod:`~embodiment.envelope.positions`: Cartesian targets, workspace, keep-out zones.
- :mod:`~embodiment.envelope.refs`: object and place refs, payload.
- :mod:`~embodiment.envelope.motion`: the path a call will execute.
- :mod:`~embodiment.envelope.scalars`: speed, force, gripper width.
- :mod:`~embodiment.envelope.joints`: joint limits and joint step.
- :mod:`~embodiment.envelope.base`: base moves and turns.
- :mod:`~embodiment.envelope.rules`: custom rules' request and outcome types.
"""

from embodiment.envelope.core import SafetyEnvelope
from embodiment.envelope.rules import RuleOutcome, SafetyRequest, SafetyRule, segment_hits_box

__all__ = ["RuleOutcome", "SafetyEnvelope", "SafetyRequest", "SafetyRule", "segment_hits_box"]
