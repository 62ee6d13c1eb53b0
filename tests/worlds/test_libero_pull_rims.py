"""The hand's dip for a drawer pull (``worlds/libero/drawer_pull.py``) and the plate's rim
slab grasp (``worlds/libero/rims.py``), on small MuJoCo models written here (compiled in
milliseconds; no LIBERO env, no simulation steps).

Oracles are written apart from the code: the level hand is an axis-aligned box, so whether
it meets a stove in front of the drawer is interval arithmetic; the slab a grasp lands on
is the one whose angle about the plate's middle is nearest the point's.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from worlds.libero.control import Frame

mujoco = pytest.importorskip("mujoco")

from worlds.libero.drawer_pull import HAND_BOX, PULL_DIPS, pull_dip  # noqa: E402
from worlds.libero.rims import on_rim_slab  # noqa: E402

HANDLE = np.array([0.41, -0.15, 0.103])
"""The middle drawer's handle bar, as at LIBERO-PRO libero_goal_swap task 0."""
PULL_M = 0.1625
STOVE_TOP = 0.018
STOVE_X = (0.31, 0.50)


class Geo:
    """The LiberoGeometry calls the helpers make: the env's model and data, the frame,
    the catalog's kinds and an object's geoms (its body and those below it)."""

    def __init__(self, xml: str, kinds: dict[str, str]) -> None:
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, self.data)
        self.env = SimpleNamespace(sim=SimpleNamespace(model=self.model, data=self.data))
        self.frame = Frame((0.0, 0.0, 0.0))
        self.catalog = SimpleNamespace(
            items={ref: SimpleNamespace(kind=kind) for ref, kind in kinds.items()}
        )

    def collision_geoms(self, ref: str) -> list[int]:
        root = self.model.body(ref).id
        bodies = {root}
        for body in range(root + 1, self.model.nbody):
            if int(self.model.body_parentid[body]) in bodies:
                bodies.add(body)
        return [g for g in range(self.model.ngeom) if int(self.model.geom_bodyid[g]) in bodies]


def drawer_scene(stove_y: float, stove_kind: str) -> Geo:
    """A cabinet whose middle drawer opens towards +y, its handle at HANDLE, the drawer
    above's handle 7.4 cm higher, and a low box (a stove, or a movable thing as low) whose
    near face is at ``stove_y``."""
    hx, _, hz = HANDLE
    xml = f"""
    <mujoco><worldbody>
      <body name="cabinet_1" pos="{hx} -0.26 0">
        <geom type="box" size="0.11 0.1 0.11" pos="0 0 0.11"/>
        <body name="middle">
          <geom type="box" size="0.045 0.0075 0.008" pos="0 0.1025 {hz}"/>
        </body>
        <body name="top">
          <geom type="box" size="0.045 0.0075 0.008" pos="0 0.1025 {hz + 0.074}"/>
        </body>
      </body>
      <body name="thing_1" pos="{sum(STOVE_X) / 2} {stove_y + 0.095} 0">
        <geom type="box" size="{(STOVE_X[1] - STOVE_X[0]) / 2} 0.095 {STOVE_TOP / 2}"
              pos="0 0 {STOVE_TOP / 2}"/>
      </body>
    </worldbody></mujoco>"""
    return Geo(xml, {"cabinet_1": "fixture", "thing_1": stove_kind})


def level_hand_meets_stove(stove_y: float) -> bool:
    """Oracle: the level hand (closing vertically, pointing -y) swept from the handle to
    the end of the pull, as an axis-aligned box, against the stove's box."""
    (long, thick), (_, end) = HAND_BOX
    z_low = HANDLE[2] - long
    y_high = HANDLE[1] + PULL_M + end
    x_low, x_high = HANDLE[0] - thick, HANDLE[0] + thick
    return z_low < STOVE_TOP and y_high > stove_y and x_high > STOVE_X[0] and x_low < STOVE_X[1]


def dip_for(geo: Geo) -> float:
    start = (float(HANDLE[0]), float(HANDLE[1] + 0.005), float(HANDLE[2]))
    end = (float(HANDLE[0]), float(HANDLE[1] + PULL_M), float(HANDLE[2]))
    return pull_dip(geo, "cabinet_1", start, end, (0.0, 1.0, 0.0), (0.0, 0.0, -1.0))  # type: ignore[arg-type]


def test_a_stove_in_front_of_the_drawer_makes_the_hand_dip() -> None:
    """libero_goal_swap task 0 at state 0: the burner's near edge 25.7 cm in front of the
    handle; the level hand's lower corner met it 14 cm into the pull."""
    assert dip_for(drawer_scene(0.107, "fixture")) == pytest.approx(math.radians(20.0))


@settings(max_examples=examples(25), deadline=None)
@given(st.floats(0.09, 0.45))
def test_the_hand_stays_level_exactly_when_its_level_sweep_meets_no_fixture(stove_y: float) -> None:
    """From 9 cm past the pull's end (the dipped hand's lowest corner, 6.4 cm behind the
    fingers, clears the stove there) outwards."""
    dip = dip_for(drawer_scene(stove_y, "fixture"))
    if level_hand_meets_stove(stove_y):
        assert dip > 0.0
    else:
        assert dip == 0.0


def test_with_no_dip_free_the_pull_stays_level() -> None:
    """A stove right at the end of the pull: every dip meets it; the level pull, as before."""
    assert dip_for(drawer_scene(0.02, "fixture")) == 0.0


@settings(max_examples=examples(10), deadline=None)
@given(st.floats(0.0, 0.45))
def test_a_movable_thing_in_the_way_keeps_the_hand_level(stove_y: float) -> None:
    """What gives way is brushed (the plate beside libero_goal's own middle drawer)."""
    assert dip_for(drawer_scene(stove_y, "object")) == 0.0


def test_the_dips_tried_start_level() -> None:
    assert PULL_DIPS[0] == 0.0 and list(PULL_DIPS) == sorted(set(PULL_DIPS))


RING_M = 0.052
SLABS = 8


def plate_scene(turn: float) -> Geo:
    """LIBERO's plate: a flat floor and eight slabs 5 mm thick, sloped 20 degrees up from
    it, around a ring, the whole turned ``turn`` about the vertical."""
    slabs = []
    for k in range(SLABS):
        a = turn + k * 2 * math.pi / SLABS
        normal = np.array([0.33 * math.cos(a), 0.33 * math.sin(a), -0.942])
        normal /= np.linalg.norm(normal)
        tangent = np.array([-math.sin(a), math.cos(a), 0.0])
        third = np.cross(normal, tangent)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, np.column_stack([normal, tangent, third]).reshape(9))
        x, y = round(RING_M * math.cos(a), 9), round(RING_M * math.sin(a), 9)
        slabs.append(
            f'<geom type="box" size="0.0025 0.0191 0.0285" pos="{x} {y} 0.004" '
            f'quat="{quat[0]:.9f} {quat[1]:.9f} {quat[2]:.9f} {quat[3]:.9f}"/>'
        )
    xml = f"""
    <mujoco><worldbody><body name="plate_1" pos="0.5 0 0">
      <geom type="box" size="0.03 0.03 0.0022" pos="0 0 -0.006"/>
      {"".join(slabs)}
    </body></worldbody></mujoco>"""
    return Geo(xml, {"plate_1": "object"})


def _angle(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


@settings(max_examples=examples(40), deadline=None)
@given(st.floats(-math.pi, math.pi), st.floats(-math.pi, math.pi), st.sampled_from([0.0, math.pi]))
def test_a_rim_grasp_lands_on_the_nearest_slab_closing_across_it(
    turn: float, at: float, wrist: float
) -> None:
    geo = plate_scene(turn)
    radius = 0.06
    point = (0.5 + radius * math.cos(at), radius * math.sin(at), -0.0025)
    yaw = _angle(at + wrist)
    top = max(float(geo.data.geom_xpos[g][2]) + 0.01 for g in geo.collision_geoms("plate_1"))
    moved, new_yaw = on_rim_slab(geo, "plate_1", point, yaw, top)  # type: ignore[arg-type]
    # oracle: the slab whose angle is nearest the point's (the slabs' middles lie on a
    # ring, so the nearest middle is the nearest angle), when within SNAP_M of it
    step = 2 * math.pi / SLABS
    k = round(_angle(at - turn) / step)
    slab = turn + k * step
    middle = np.array([0.5 + RING_M * math.cos(slab), RING_M * math.sin(slab)])
    if np.hypot(*(np.array(point[:2]) - middle)) > 0.03:
        return  # no slab near enough: the point is kept (checked below for a case)
    # the fingers close along the slab's radial direction, the wrist turned as near as
    # it was
    assert abs(math.sin(new_yaw - slab)) < 1e-6
    assert abs(_angle(new_yaw - yaw)) <= math.pi / 2 + 1e-6
    # on the slab's radial line, as far out as the point was along it
    rel = np.array(moved[:2]) - np.array([0.5, 0.0])
    assert abs(rel[0] * math.sin(slab) - rel[1] * math.cos(slab)) < 1e-6
    along = (np.array(point[:2]) - middle) @ np.array([math.cos(slab), math.sin(slab)])
    assert rel @ np.array([math.cos(slab), math.sin(slab)]) == pytest.approx(RING_M + along)
    assert moved[2] == pytest.approx(point[2])


def test_a_point_far_from_every_slab_is_kept() -> None:
    geo = plate_scene(0.0)
    point: Any = (0.5, 0.0, -0.0025)  # the plate's middle: 5.2 cm from every slab
    assert on_rim_slab(geo, "plate_1", point, 0.3, 0.02) == (point, 0.3)  # type: ignore[arg-type]
