"""The Embodiment Profile: what the hardware is and what it may do.

A profile is data (YAML, an inline mapping, or a Thea Markdown file) validated once at
startup. It serves two readers: the model, which gets a compact rendering in Resident
context (:func:`render_profile`), and the safety envelope, which takes its numbers
(workspace, keep-out zones, limits) as the envelope every physical call must stay in.

Coordinates are metres; every box, camera and gripper names the frame it is written in.
Frames form a tree rooted at ``world``; only rotations about z are modelled (tables and
mobile bases), which is what the envelope needs. For a mobile base the ``base`` frame
moves: its live pose is read from the observation (``state["base_pose"] = [x, y, yaw]``).
"""

from embodiment.errors import ProfileError
from embodiment.profile.loading import builtin_profiles, load_profile
from embodiment.profile.model import EmbodimentProfile
from embodiment.profile.parts import (
    SENSOR_MODALITIES,
    BaseSpec,
    Box,
    CameraSpec,
    Footprint,
    FramePose,
    GripperSpec,
    KeepOutZone,
    KinematicsSpec,
    Limits,
    SafetySettings,
)
from embodiment.profile.render import render_profile

__all__ = [
    "SENSOR_MODALITIES",
    "BaseSpec",
    "Box",
    "CameraSpec",
    "EmbodimentProfile",
    "Footprint",
    "FramePose",
    "GripperSpec",
    "KeepOutZone",
    "KinematicsSpec",
    "Limits",
    "ProfileError",
    "SafetySettings",
    "builtin_profiles",
    "load_profile",
    "render_profile",
]
