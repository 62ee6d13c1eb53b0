"""Seeded synthetic scenes: tables with trays and coloured objects, at any size.

For tests and benchmarks that need many objects with realistic relations (objects on
tables, some in trays, some stacked) without a simulator. The same seed gives the same
detections; density per table stays constant as the scene grows, like a warehouse of
workcells rather than one ever more crowded table.
"""

from __future__ import annotations

import random

from scene.perception import Detection

__all__ = ["COLOURS", "LABELS", "synthetic_scene"]

COLOURS = ("red", "green", "blue", "yellow", "orange", "purple", "white", "black")
LABELS: dict[str, tuple[float, float, float]] = {
    "cube": (0.04, 0.04, 0.04),
    "cup": (0.07, 0.07, 0.09),
    "ball": (0.05, 0.05, 0.05),
    "bottle": (0.06, 0.06, 0.2),
    "block": (0.08, 0.04, 0.03),
}
TABLE = (1.2, 0.8, 0.72)
TRAY = (0.2, 0.15, 0.03)
OBJECTS_PER_TABLE = 24


def synthetic_scene(n: int, *, seed: int = 0) -> list[Detection]:
    """About ``n`` detections (exactly ``n`` when n >= 1): tables, trays and objects."""
    rng = random.Random(seed)
    detections: list[Detection] = []
    if n <= 0:
        return detections
    tables = max(1, n // (OBJECTS_PER_TABLE + 3))
    per_row = max(1, int(tables**0.5))
    counters: dict[str, int] = {}

    def ref(base: str) -> str:
        counters[base] = counters.get(base, 0) + 1
        return f"{base}_{counters[base]}"

    for t in range(tables):
        if len(detections) >= n:
            break
        tx, ty = (t % per_row) * 2.0, (t // per_row) * 1.5
        detections.append(
            Detection(
                ref=ref("table"),
                label="table",
                category="surface",
                position=(tx, ty, TABLE[2] / 2),
                size=TABLE,
                provenance="ground_truth",
            )
        )
        top = TABLE[2]
        trays: list[tuple[float, float]] = []
        for _ in range(2):
            if len(detections) >= n:
                break
            x = tx + rng.uniform(-0.45, 0.45)
            y = ty + rng.uniform(-0.28, 0.28)
            trays.append((x, y))
            detections.append(
                Detection(
                    ref=ref("tray"),
                    label="tray",
                    category="container",
                    is_open=True,
                    position=(x, y, top + TRAY[2] / 2),
                    size=TRAY,
                    provenance="ground_truth",
                )
            )
        for _ in range(OBJECTS_PER_TABLE):
            if len(detections) >= n:
                break
            label = rng.choice(list(LABELS))
            colour = rng.choice(COLOURS)
            size = LABELS[label]
            if trays and rng.random() < 0.2:
                cx, cy = rng.choice(trays)
                position = (
                    cx + rng.uniform(-0.05, 0.05),
                    cy + rng.uniform(-0.04, 0.04),
                    top + 0.004 + size[2] / 2,
                )
            else:
                position = (
                    tx + rng.uniform(-0.55, 0.55),
                    ty + rng.uniform(-0.35, 0.35),
                    top + size[2] / 2,
                )
            detections.append(
                Detection(
                    ref=ref(f"{colour}_{label}"),
                    label=label,
                    color=colour,
                    position=position,
                    size=size,
                    confidence=round(rng.uniform(0.6, 1.0), 2),
                    provenance="ground_truth",
                )
            )
    while len(detections) < n:  # more tables were needed than the estimate: top up
        label = rng.choice(list(LABELS))
        colour = rng.choice(COLOURS)
        detections.append(
            Detection(
                ref=ref(f"{colour}_{label}"),
                label=label,
                color=colour,
                position=(rng.uniform(-1, 0), rng.uniform(-1, 0), LABELS[label][2] / 2),
                size=LABELS[label],
                provenance="ground_truth",
            )
        )
    return detections
