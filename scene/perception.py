"""What perception hands the scene graph: one :class:`Detection` per thing it sees.

The simulator supplies ground truth through this protocol; a deployment plugs in its own
detector. Nothing here imports the harness.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Detection",
    "DetectionSource",
    "GroundTruthPerception",
    "NodeCategory",
    "Perception",
    "Provenance",
]

NodeCategory = Literal["object", "container", "surface", "robot", "robot_part"]
Provenance = Literal["ground_truth", "detector", "user", "evaluator"]


class Detection(BaseModel):
    """One detected thing, in a named frame (metres).

    ``ref`` is a stable id when the source has one (simulator ground truth); detectors
    leave it empty and the scene graph associates by label and distance. ``relations``
    are relations perception asserts directly, e.g. ``[("inside", "tray_1")]``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str | None = None
    label: str
    category: NodeCategory = "object"
    color: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float] | None = None
    """Quaternion (x, y, z, w)."""
    size: tuple[float, float, float] | None = None
    """Axis-aligned extents (dx, dy, dz)."""
    frame: str = "world"
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    is_open: bool | None = None
    """Container state, when it has one."""
    provenance: Provenance = "detector"
    relations: list[tuple[str, str]] = Field(default_factory=list)
    supports_stated: bool = False
    """Whether ``relations`` name every on/inside support the thing has, none when they
    name none: a simulator judging support by its own predicates says so, and the scene
    graph then derives none from boxes. A bowl leaning on a plate's rim is not on the plate
    by the benchmark's own predicate, yet its box sat over the plate's, and the geometry
    said "on" (the planner reported a task done that the check denied)."""


@runtime_checkable
class Perception(Protocol):
    """Turns an observation into detections (ground truth, or a detector's output)."""

    def perceive(self, observation: Any) -> list[Detection]: ...


class DetectionSource(Protocol):
    """A simulator that keeps the detections of its latest observation (ground truth)."""

    def latest_detections(self, timestamp: float | None) -> list[Detection]: ...


class GroundTruthPerception:
    """A simulator's ground truth through the Perception protocol: every simulated world
    serves its detections this way, so the adapter lives here once."""

    def __init__(self, sim: DetectionSource) -> None:
        self.sim = sim

    def perceive(self, observation: Any) -> list[Detection]:
        return self.sim.latest_detections(getattr(observation, "timestamp", None))
