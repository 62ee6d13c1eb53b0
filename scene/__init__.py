"""What the robot knows about the world: a scene graph and its bounded Brief."""

from scene.perception import Detection, Perception

__all__ = ["Detection", "Perception"]
