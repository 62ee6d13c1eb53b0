"""The safety envelope's public import path (kept for every caller that imports it here).

The envelope itself lives in :mod:`embodiment.envelope`, one module per check family;
this module re-exports every name that was importable from ``embodiment.safety``.
"""

from embodiment.envelope import (
    RuleOutcome,
    SafetyEnvelope,
    SafetyRequest,
    SafetyRule,
    segment_hits_box,
)

__all__ = ["RuleOutcome", "SafetyEnvelope", "SafetyRequest", "SafetyRule", "segment_hits_box"]
