"""The tabletop scene as data: what is on the table and where, placed from a seed.

Pure Python (no PyBullet), so layouts can be checked and reused without a simulator. The
world frame has x away from the robot, y to its left and z up; the table top is at
``TABLE_TOP_Z`` and the robot's base sits on it at the origin.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

__all__ = [
    "COLORS",
    "HIDDEN_CUBE_REF",
    "TABLE_TOP_Z",
    "Faults",
    "Layout",
    "ObjectSpec",
    "PlacedObject",
    "TabletopConfig",
    "TraySpec",
    "plan_layout",
]

TABLE_TOP_Z = 0.625
TABLE_CENTER = (0.35, 0.0)
TABLE_HALF = (0.65, 0.70)
TABLE_THICKNESS = 0.04

COLORS: dict[str, tuple[float, float, float, float]] = {
    "red": (0.85, 0.10, 0.10, 1.0),
    "green": (0.10, 0.70, 0.20, 1.0),
    "blue": (0.10, 0.25, 0.90, 1.0),
    "yellow": (0.95, 0.85, 0.10, 1.0),
    "orange": (0.95, 0.50, 0.05, 1.0),
    "purple": (0.55, 0.20, 0.75, 1.0),
    "white": (0.95, 0.95, 0.95, 1.0),
    "black": (0.08, 0.08, 0.08, 1.0),
}
Color = Literal["red", "green", "blue", "yellow", "orange", "purple", "white", "black"]

OBJECT_REGION = ((0.36, 0.66), (-0.30, 0.30))
"""Where loose objects are scattered (x range, y range): comfortably inside the reach."""
TRAY_SPOTS = ((0.52, 0.30), (0.52, -0.30), (0.62, 0.24), (0.62, -0.24))
MIN_GAP = 0.035
"""Free space kept between placed things (fingers need room on both sides)."""

HIDDEN_CUBE_REF = "yellow_cube_1"
HIDDEN_TRAY = ((0.56, 0.0), 0.09)
"""The ``hidden_cube`` variant's tray: its centre (straight in front of the front camera)
and a wall height that hides a 4 cm cube standing just behind it from that camera."""
HIDDEN_GAP = 0.025
"""Between the tray's back wall and the hidden cube (room for the fingers, still hidden)."""
HIDDEN_SHADOW = ((0.39, 0.0), 0.10)
"""A disc kept free of the seeded objects: what stands there is hidden as well."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ObjectSpec(_Spec):
    """A loose object on the table (cubes; the Panda grasps them from above)."""

    color: Color
    shape: Literal["cube"] = "cube"
    size: float = Field(0.04, ge=0.02, le=0.07)
    """Edge length (metres); the open gripper spans 0.08 m."""
    mass_kg: float = Field(0.05, gt=0, le=10)
    ref: str | None = Field(None, pattern=r"^[a-z][a-z0-9_]*$")
    position: tuple[float, float] | None = None
    """x, y on the table; placed from the seed when omitted."""
    yaw: float | None = None


class TraySpec(_Spec):
    """The open container things are put in."""

    size: tuple[float, float] = (0.20, 0.15)
    wall_height: float = Field(0.03, gt=0.005, le=0.1)
    wall_thickness: float = Field(0.008, gt=0.002, le=0.03)
    position: tuple[float, float] | None = None
    ref: str = "tray_1"


class Faults(_Spec):
    """Injected faults, for tests and demos of recovery."""

    drop_on_lift: dict[str, int] = Field(default_factory=dict)
    """ref -> how many of its next picks lose the object while lifting (a slipping grasp)."""


class TabletopConfig(_Spec):
    """Options of the ``sim.tabletop`` driver (the ``driver:`` config section)."""

    seed: int = 0
    gui: bool = False
    """Open PyBullet's window (needs a display); headless tiny renderer otherwise."""
    real_time_factor: float | None = Field(None, ge=0)
    """1.0 paces motions in real time, 0 runs them as fast as possible (default headless;
    the GUI defaults to 1.0)."""
    objects: list[ObjectSpec] = Field(
        default_factory=lambda: [
            ObjectSpec(color="red"),
            ObjectSpec(color="green"),
            ObjectSpec(color="blue"),
        ]
    )
    tray: TraySpec | None = Field(default_factory=TraySpec)
    faults: Faults = Field(default_factory=Faults)
    physics_hz: int = Field(240, ge=60, le=2000)
    control_hz: int = Field(30, ge=5, le=240)
    """How often the arm's and fingers' position targets may change (the physics runs
    ``physics_hz / control_hz`` steps under each command): the rate of the control steps a
    recording keeps and of a LeRobot dataset made from them. ``physics_hz`` must be a
    multiple of it."""
    variant: Literal["standard", "hidden_cube"] = "standard"
    """``hidden_cube``: a deep tray straight in front of the front camera with a yellow cube
    (``yellow_cube_1``) just behind it, out of that camera's view; the other objects are
    placed from the seed as usual, never in the tray's shadow."""
    perception: Literal["ground_truth", "seen"] | None = None
    """``ground_truth``: every object is detected wherever it is; ``seen``: only objects a
    rendered camera frame has shown so far (a look with another camera can find a hidden
    one). Default: ``seen`` for the ``hidden_cube`` variant, else ``ground_truth``."""

    @field_validator("control_hz")
    @classmethod
    def _whole_control_period(cls, value: int, info: ValidationInfo) -> int:
        physics = info.data.get("physics_hz")
        if isinstance(physics, int) and physics % value:
            raise ValueError(
                f"{value} Hz does not divide physics_hz {physics} (each command must last a "
                "whole number of physics steps)"
            )
        return value

    @property
    def physics_per_control(self) -> int:
        """Physics steps per control step."""
        return self.physics_hz // self.control_hz

    @property
    def perceives_only_what_was_seen(self) -> bool:
        chosen = self.perception or ("seen" if self.variant == "hidden_cube" else "ground_truth")
        return chosen == "seen"

    def scene(self) -> TabletopConfig:
        """The config with its variant applied (the tray and objects it really builds)."""
        if self.variant == "standard":
            return self
        (x, y), wall = HIDDEN_TRAY
        tray = (self.tray or TraySpec()).model_copy(
            update={"position": (x, y), "wall_height": wall}
        )
        size = 0.04
        cube = ObjectSpec(
            color="yellow",
            size=size,
            ref=HIDDEN_CUBE_REF,
            position=(round(x - tray.size[0] / 2 - HIDDEN_GAP - size / 2, 4), y),
            yaw=0.0,
        )
        seen = "seen" if self.perceives_only_what_was_seen else "ground_truth"
        return self.model_copy(
            update={
                "tray": tray,
                "objects": [*self.objects, cube],
                "variant": "standard",  # applied: scene() of the result is itself
                "perception": seen,
            }
        )

    @model_validator(mode="after")
    def _unique_refs(self) -> TabletopConfig:
        refs = [ref for ref, _ in assign_refs(self.scene().objects)]
        if self.tray is not None:
            refs.append(self.tray.ref)
        duplicates = [ref for ref, count in Counter(refs).items() if count > 1]
        if duplicates:
            raise ValueError(f"duplicate object refs: {', '.join(duplicates)}")
        unknown = [ref for ref in self.faults.drop_on_lift if ref not in refs]
        if unknown:  # a fault on a ref that does not exist would never fire
            raise ValueError(
                f"faults.drop_on_lift: no object {', '.join(map(repr, unknown))} in the scene "
                f"(objects: {', '.join(refs)})"
            )
        return self


class PlacedObject(_Spec):
    ref: str
    spec: ObjectSpec
    position: tuple[float, float]
    yaw: float

    @property
    def label(self) -> str:
        return f"{self.spec.color} {self.spec.shape}"


class Layout(_Spec):
    objects: list[PlacedObject]
    tray_position: tuple[float, float] | None


def assign_refs(objects: list[ObjectSpec]) -> list[tuple[str, ObjectSpec]]:
    """Stable refs: an explicit ``ref`` or ``{color}_{shape}_{n}`` counting per kind."""
    counts: Counter[str] = Counter()
    named = []
    for spec in objects:
        if spec.ref:
            named.append((spec.ref, spec))
            continue
        key = f"{spec.color}_{spec.shape}"
        counts[key] += 1
        named.append((f"{key}_{counts[key]}", spec))
    return named


def plan_layout(config: TabletopConfig, *, seed: int | None = None) -> Layout:
    """Place the tray and the objects from the seed without overlaps (deterministic); the
    config's variant is applied first."""
    variant = config.variant
    config = config.scene()
    rng = random.Random(config.seed if seed is None else seed)
    occupied: list[tuple[float, float, float]] = []  # x, y, radius
    if variant == "hidden_cube":
        (sx, sy), radius = HIDDEN_SHADOW
        occupied.append((sx, sy, radius))
    tray_position = None
    if config.tray is not None:
        tray_position = config.tray.position or rng.choice(TRAY_SPOTS)
        half_diagonal = math.hypot(*config.tray.size) / 2
        occupied.append((tray_position[0], tray_position[1], half_diagonal))
    placed = []
    for ref, spec in assign_refs(config.objects):
        radius = spec.size * math.sqrt(2) / 2
        yaw = spec.yaw if spec.yaw is not None else rng.uniform(-0.6, 0.6)
        if spec.position is not None:
            position = spec.position
        else:
            position = _free_spot(rng, occupied, radius, ref)
        occupied.append((position[0], position[1], radius))
        placed.append(PlacedObject(ref=ref, spec=spec, position=position, yaw=yaw))
    return Layout(objects=placed, tray_position=tray_position)


def _free_spot(
    rng: random.Random, occupied: list[tuple[float, float, float]], radius: float, ref: str
) -> tuple[float, float]:
    (x_low, x_high), (y_low, y_high) = OBJECT_REGION
    for _ in range(2000):
        x, y = rng.uniform(x_low, x_high), rng.uniform(y_low, y_high)
        if all(math.hypot(x - ox, y - oy) >= radius + r + MIN_GAP for ox, oy, r in occupied):
            return (round(x, 4), round(y, 4))
    raise ValueError(f"no free spot left on the table for {ref}; use fewer or smaller objects")
