"""The LeRobot dataset format v3.0 as this exporter writes it: file paths and their
templates, the sizes files roll over at, the feature names, and the metadata tables
(``meta/tasks.parquet`` with pandas' index description, ``meta/episodes``).

What LeRobot reads, kept apart from :mod:`harness.export.lerobot_dataset` (which turns
episodes into it) so the format is named in one place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ACTION",
    "CHUNKS_SIZE",
    "CODEBASE_VERSION",
    "DATA_FILE_MB",
    "DATA_PATH",
    "EPISODES_PATH",
    "INDEX_FEATURES",
    "PANDAS_TASKS",
    "STATE",
    "VIDEO_FILE_MB",
    "VIDEO_PATH",
    "camera_key",
    "fixed_lists",
    "write_episodes",
    "write_json",
    "write_tasks",
]

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_FILE_MB = 100
VIDEO_FILE_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
STATE, ACTION = "observation.state", "action"
INDEX_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")


def camera_key(camera: str) -> str:
    return f"observation.images.{camera}"


PANDAS_TASKS = {
    "index_columns": ["task"],
    "column_indexes": [
        {
            "name": None,
            "field_name": None,
            "pandas_type": "unicode",
            "numpy_type": "object",
            "metadata": {"encoding": "UTF-8"},
        }
    ],
    "columns": [
        {
            "name": "task_index",
            "field_name": "task_index",
            "pandas_type": "int64",
            "numpy_type": "int64",
            "metadata": None,
        },
        {
            "name": "task",
            "field_name": "task",
            "pandas_type": "unicode",
            "numpy_type": "object",
            "metadata": None,
        },
    ],
    "creator": {"library": "embodied-harness", "version": "1"},
    "pandas_version": "2.0.0",
}
"""pandas' own description of a frame indexed by ``task`` with one ``task_index`` column
(the metadata pandas writes beside a DataFrame in Parquet; its reader restores the index
from it)."""


def fixed_lists(values: np.ndarray) -> Any:
    """Rows of a 2-D float array as one Arrow column of fixed-size float32 lists."""
    import pyarrow as pa

    width = values.shape[1]
    flat = pa.array(np.ascontiguousarray(values).reshape(-1), pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, width)


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON (strict: no NaN), its folder made first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_tasks(root: Path, tasks: dict[str, int]) -> None:
    """``meta/tasks.parquet``: each task string (the index) and its ``task_index``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = list(tasks)
    table = pa.table(
        {
            "task_index": pa.array([tasks[n] for n in names], pa.int64()),
            "task": pa.array(names, pa.string()),
        }
    )
    # pandas reads the ``task`` column back as the index (LeRobot looks tasks up by it)
    table = table.replace_schema_metadata({b"pandas": json.dumps(PANDAS_TASKS).encode()})
    path = root / "meta/tasks.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path))


def write_episodes(root: Path, rows: list[dict[str, Any]]) -> None:
    """``meta/episodes/...parquet``: one row per episode, in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(rows[0])
    table = pa.table({name: [row[name] for row in rows] for name in columns})
    path = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, str(path))
