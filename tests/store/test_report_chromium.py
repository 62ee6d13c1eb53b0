"""The HTML report renders in a real browser: headless Chromium takes a screenshot and the
plot's colours and the camera frames are on it. Skipped where Chromium is not installed
(Debian: ``apt-get install chromium``)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from harness.cli import main
from harness.store.task_page import SECTION_COLORS
from tests.recorded import RecordedSession, record_session

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
HANG_GUARD_S = 120
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def screenshot(page: Path, out: Path, *, width: int = 1200, height: int = 2600) -> Image.Image:
    """Render ``page`` in headless Chromium and return the screenshot."""
    assert CHROMIUM is not None
    profile = out.parent / "chromium-profile"
    subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=HANG_GUARD_S,
    )
    return Image.open(out).convert("RGB")


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package `chromium`)")
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        recorded: RecordedSession = record_session(tmp_path, monkeypatch)
    page = tmp_path / "report.html"
    store = str(recorded.store)
    assert main(["report", recorded.first_task, "--store", store, "-o", str(page)]) == 0
    shot = np.asarray(screenshot(page, tmp_path / "report.png"), dtype=np.int16)
    assert shot.shape == (2600, 1200, 3)
    assert _colours(shot) > 200  # not a blank or error page

    resident, accumulated = _blend(SECTION_COLORS[0]), _blend(SECTION_COLORS[2])
    assert _count(shot, resident, 18) > 10_000  # the stacked areas of the plot were drawn
    assert _count(shot, accumulated, 18) > 5_000

    # the camera frames (grey with a white stripe): the same page without its <img> tags
    # has far fewer pixels of the frames' grey, so the data-URI images were decoded and drawn
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r"<img [^>]*>", "", page.read_text()))
    without = np.asarray(screenshot(bare, tmp_path / "bare.png"), dtype=np.int16)
    grey = (135, 135, 135)  # the recorded driver's frame at x=0.5
    assert _count(shot, grey, 10) > _count(without, grey, 10) + 1_000


def _count(image: np.ndarray, color: tuple[int, int, int], tolerance: int) -> int:
    return int((np.abs(image - np.array(color, dtype=np.int16)).max(axis=2) <= tolerance).sum())


def _colours(image: np.ndarray) -> int:
    """How many distinct colours the image has (each pixel packed into one integer)."""
    rgb = image.astype(np.int32)
    packed = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    return int(np.count_nonzero(np.bincount(packed.ravel(), minlength=1 << 24)))


def _blend(hex_color: str, alpha: float = 0.85) -> tuple[int, int, int]:
    """The colour of a plot area drawn with ``alpha`` over the white background."""
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(round(alpha * c + (1 - alpha) * 255) for c in (r, g, b))  # type: ignore[return-value]
