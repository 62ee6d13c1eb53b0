"""Camera calibration, projection and crops (hand-computed cameras and a real PyBullet
render)."""

from __future__ import annotations

import numpy as np
import pytest

from scene import Detection, SceneGraph, crop_frame, parse_cameras, project_box
from scene.frames import as_matrix
from tests.scene_helpers import column_major, look_at, perspective

W, H = 320, 240
EYE = np.array([0.9, 0.0, 0.6])
TARGET = np.array([0.4, 0.0, 0.0])
UP = np.array([0.0, 0.0, 1.0])
FOV = 60.0


def gl_spec() -> dict[str, object]:
    view = look_at(EYE, TARGET, UP)
    projection = perspective(FOV, W / H, 0.01, 5.0)
    return {"view": column_major(view), "projection": column_major(projection)}


def pinhole_spec(scale: int = 1) -> dict[str, object]:
    """The same camera as ``gl_spec`` in the OpenCV convention (optionally calibrated at a
    multiple of the frame's resolution)."""
    f = (H / 2) / np.tan(np.radians(FOV) / 2)
    view = look_at(EYE, TARGET, UP)
    world_from_camera = np.linalg.inv(view) @ np.diag([1.0, -1.0, -1.0, 1.0])
    return {
        "fx": f * scale,
        "fy": f * scale,
        "cx": W / 2 * scale,
        "cy": H / 2 * scale,
        "world_from_camera": world_from_camera.tolist(),
        "width": W * scale,
        "height": H * scale,
    }


def test_matrix_layout_rule() -> None:
    matrix = np.arange(16, dtype=float).reshape(4, 4)
    assert np.array_equal(as_matrix(matrix.tolist()), matrix)  # nested: row-major
    assert np.array_equal(as_matrix(column_major(matrix)), matrix)  # flat: column-major
    assert as_matrix(matrix[:3].tolist())[3].tolist() == [0, 0, 0, 1]
    with pytest.raises(ValueError, match="4x4"):
        as_matrix([1, 2, 3])


def test_opengl_and_pinhole_calibrations_project_alike() -> None:
    cameras, problems = parse_cameras(
        {"cameras": {"gl": gl_spec(), "cv": pinhole_spec(), "hires": pinhole_spec(scale=2)}}
    )
    assert problems == {}
    rng = np.random.default_rng(0)
    points = np.column_stack(
        [rng.uniform(0.2, 0.6, 50), rng.uniform(-0.2, 0.2, 50), rng.uniform(0.0, 0.1, 50)]
    )
    uv_gl, front_gl = cameras["gl"].project(points, W, H)
    uv_cv, front_cv = cameras["cv"].project(points, W, H)
    uv_hi, _ = cameras["hires"].project(points, W, H)
    assert front_gl.all() and front_cv.all()
    assert np.allclose(uv_gl, uv_cv, atol=1e-6)
    assert np.allclose(uv_hi, uv_cv, atol=1e-6)  # rescaled to the frame's resolution
    centre, _ = cameras["gl"].project(TARGET[None, :], W, H)
    assert centre[0] == pytest.approx([W / 2, H / 2])
    _, front = cameras["gl"].project(np.array([[2.0, 0.0, 1.2]]), W, H)
    assert not front[0]


def test_bad_calibrations_are_reported_not_guessed() -> None:
    cameras, problems = parse_cameras(
        {
            "cameras": {
                "a": {"view": [1, 2, 3], "projection": column_major(np.eye(4))},
                "b": {"fx": 100.0},
                "c": {"fx": 1, "fy": 1, "cx": 0, "cy": 0},
                "d": "front",
                "ok": gl_spec(),
            }
        }
    )
    assert set(cameras) == {"ok"}
    assert "view" in problems["a"] and "4x4" in problems["a"]
    assert "fx/fy/cx/cy" in problems["b"]
    assert "world_from_camera" in problems["c"]
    assert "mapping" in problems["d"]
    assert parse_cameras({"cameras": [1, 2]})[1] == {
        "cameras": "state['cameras'] must be a mapping, got list"
    }


def test_project_box_and_crop() -> None:
    camera = parse_cameras({"cameras": {"front": gl_spec()}})[0]["front"]
    box = project_box(camera, (0.38, -0.02, 0.0), (0.42, 0.02, 0.04), W, H)
    assert box is not None
    x0, y0, x1, y1 = box
    assert x0 < W / 2 < x1 and x0 >= 0 and x1 <= W and y0 >= 0 and y1 <= H
    assert project_box(camera, (3, 3, 0), (3.1, 3.1, 0.1), W, H) is None  # out of view
    assert project_box(camera, (1.5, -0.1, 0.8), (1.6, 0.1, 0.9), W, H) is None  # behind
    frame = np.zeros((H, W, 3), dtype=np.uint8)
    crop = crop_frame(frame, (10, 10, 30, 40))
    assert crop.shape == (30 * 7, 20 * 7, 3)  # whole-factor enlargement to >= 128
    assert crop_frame(frame, (0, 0, W, H)).shape == (H, W, 3)


def test_detections_in_a_camera_frame_land_in_world() -> None:
    """A detector reporting positions in the camera's own (OpenCV) frame."""
    distance = float(np.linalg.norm(TARGET - EYE))
    graph = SceneGraph()
    graph.apply(
        [Detection(ref="cube_1", label="cube", position=(0.0, 0.0, distance), frame="front")],
        timestamp=1.0,
        state={"cameras": {"front": gl_spec()}},
    )
    node = graph.node("cube_1")
    assert node.frame == "world"
    assert node.position == pytest.approx(tuple(TARGET), abs=1e-9)


def test_crop_finds_the_object_in_a_real_pybullet_render() -> None:
    pb = pytest.importorskip("pybullet")
    client = pb.connect(pb.DIRECT)
    try:
        half = [0.02, 0.02, 0.02]
        for position, rgba in (
            ([0.5, 0.1, 0.02], [1, 0, 0, 1]),
            ([0.3, -0.15, 0.02], [0, 0, 1, 1]),
        ):
            shape = pb.createVisualShape(
                pb.GEOM_BOX, halfExtents=half, rgbaColor=rgba, physicsClientId=client
            )
            pb.createMultiBody(
                baseMass=0,
                baseVisualShapeIndex=shape,
                basePosition=position,
                physicsClientId=client,
            )
        view = pb.computeViewMatrix(
            cameraEyePosition=EYE.tolist(),
            cameraTargetPosition=TARGET.tolist(),
            cameraUpVector=UP.tolist(),
            physicsClientId=client,
        )
        projection = pb.computeProjectionMatrixFOV(
            fov=FOV, aspect=W / H, nearVal=0.01, farVal=5.0, physicsClientId=client
        )
        width, height, rgba_pixels, _, _ = pb.getCameraImage(
            W, H, view, projection, renderer=pb.ER_TINY_RENDERER, physicsClientId=client
        )
    finally:
        pb.disconnect(client)
    frame = np.reshape(np.asarray(rgba_pixels, dtype=np.uint8), (height, width, 4))[:, :, :3]
    # PyBullet's flat matrices go into state as they are
    state = {"cameras": {"front": {"view": list(view), "projection": list(projection)}}}
    camera = parse_cameras(state)[0]["front"]
    box = project_box(camera, (0.48, 0.08, 0.0), (0.52, 0.12, 0.04), width, height, min_pad_px=1)
    assert box is not None
    x0, y0, x1, y1 = box
    red = (frame[:, :, 0] > 150) & (frame[:, :, 1] < 80) & (frame[:, :, 2] < 80)
    blue = (frame[:, :, 2] > 150) & (frame[:, :, 0] < 80) & (frame[:, :, 1] < 80)
    assert red.sum() > 50
    assert red[y0:y1, x0:x1].sum() == red.sum()  # the whole red cube is in the crop
    assert blue[y0:y1, x0:x1].sum() == 0  # and the blue one is not
    assert red[y0:y1, x0:x1].mean() > 0.25  # and it fills a good part of it
