"""What the robot knows about the world: a scene graph and its bounded Brief.

Nothing here imports the harness; :mod:`harness.world.scene` turns the graph into the
loop's scene provider and the model's query tools.
"""

from scene.brief import OBJECT_LINE, ROBOT_LINE, Brief, rank_objects, render_brief
from scene.camera import CameraCalibration, crop_frame, parse_cameras, project_box
from scene.geometry import RelationTolerances
from scene.graph import SceneGraph, UnknownRefError, UpdateReport
from scene.nodes import SceneEdge, SceneNode
from scene.perception import Detection, Perception
from scene.query import find_objects, suggest_refs
from scene.robot import RobotState, RobotView
from scene.snapshot import NodeChange, SceneDiff, SceneSnapshot, diff

__all__ = [
    "OBJECT_LINE",
    "ROBOT_LINE",
    "Brief",
    "CameraCalibration",
    "Detection",
    "NodeChange",
    "Perception",
    "RelationTolerances",
    "RobotState",
    "RobotView",
    "SceneDiff",
    "SceneEdge",
    "SceneGraph",
    "SceneNode",
    "SceneSnapshot",
    "UnknownRefError",
    "UpdateReport",
    "crop_frame",
    "diff",
    "find_objects",
    "parse_cameras",
    "project_box",
    "rank_objects",
    "render_brief",
    "suggest_refs",
]
