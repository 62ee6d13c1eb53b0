"""Episodes as a LeRobot dataset (format v3.0), written with pyarrow and PyAV: no torch.

The layout LeRobot reads (``LeRobotDataset(repo_id, root=DIR)``)::

    meta/info.json                         fps, features, counts, path templates
    meta/stats.json                        every feature's statistics (normalisation)
    meta/tasks.parquet                     task string (the index) -> task_index
    meta/episodes/chunk-000/file-000.parquet   one row per episode: length, tasks, where its
                                               rows and video frames are, its statistics,
                                               and what the run store says about it
    data/chunk-000/file-000.parquet        one row per control step, many episodes a file
    videos/observation.images.CAM/chunk-000/file-000.mp4   one video per camera, many
                                               episodes a file
    meta/harness.json                      where the episodes came from, what the state and
                                               action components mean (the driver's words)

One episode per task; one frame per control step (:mod:`harness.export.control`), so the
dataset's ``fps`` is the driver's control rate, never a guess: ``observation.state`` is the
state measured at the step, ``action`` the command sent right after it and held until the
next step, ``observation.images.CAM`` the frame rendered at the step, ``timestamp`` the
step's place in the episode (``frame_index / fps``). The task string is the instruction.
Files roll over at LeRobot's default sizes (100 MB of data, 200 MB of video, 1000 files a
chunk folder). The layout's names, sizes and metadata tables are
:mod:`harness.export.lerobot_layout`; this module turns episodes into it.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from embodiment.recording import ControlLayout
from harness.export.control import ExportError
from harness.export.episodes import Episode
from harness.export.feature_stats import image_stats, pixel_sample, vector_stats
from harness.export.lerobot_layout import (
    ACTION,
    CHUNKS_SIZE,
    CODEBASE_VERSION,
    DATA_FILE_MB,
    DATA_PATH,
    INDEX_FEATURES,
    STATE,
    VIDEO_FILE_MB,
    VIDEO_PATH,
    camera_key,
    fixed_lists,
    write_episodes,
    write_json,
    write_tasks,
)
from harness.export.video import VideoCodec, VideoFile, encoder_info, probe_video

__all__ = ["DatasetSummary", "LeRobotWriter", "write_lerobot"]


@dataclass
class DatasetSummary:
    """What was written."""

    root: Path
    episodes: int = 0
    frames: int = 0
    fps: int = 0
    tasks: list[str] = field(default_factory=list)
    cameras: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Episodes left out, with why."""


@dataclass
class _Position:
    """Which chunk and file a stream is writing."""

    chunk: int = 0
    file: int = 0

    def next(self) -> None:
        self.file += 1
        if self.file == CHUNKS_SIZE:
            self.chunk, self.file = self.chunk + 1, 0


class LeRobotWriter:
    """Episodes in, a LeRobot v3.0 dataset out (:meth:`add` each, then :meth:`close`).

    The first episode fixes the dataset's rate, state and action components and cameras;
    an episode that differs is refused (:class:`ExportError` naming it and the difference).
    ``root`` must not exist or be empty: nothing is ever written over.
    """

    def __init__(self, root: str | Path, *, codec: VideoCodec = "libsvtav1") -> None:
        self.root = Path(root)
        if self.root.exists() and (not self.root.is_dir() or any(self.root.iterdir())):
            raise ExportError(f"-o {self.root}: it exists and is not an empty folder")
        self.codec = codec
        self.summary = DatasetSummary(root=self.root)
        self.layout: ControlLayout | None = None
        self.robot_type: str | None = None
        self._shapes: dict[str, tuple[int, int, int]] = {}
        self._tasks: dict[str, int] = {}
        self._rows: list[dict[str, Any]] = []
        self._episode_rows: list[dict[str, Any]] = []
        self._data_pos = _Position()
        self._data_writer: Any = None
        self._data_bytes = 0
        self._videos: dict[str, VideoFile] = {}
        self._video_pos: dict[str, _Position] = {}
        self._states: list[np.ndarray] = []
        self._actions: list[np.ndarray] = []
        self._pixels: dict[str, list[np.ndarray]] = {}
        self._sources: list[dict[str, Any]] = []
        self.closed = False

    # ------------------------------------------------------------------ episodes

    def add(self, episode: Episode) -> bool:
        """Write one episode; False (and a line in ``summary.skipped``) for an episode with
        no control step."""
        name = episode.source.name or episode.task.id
        track = episode.track
        if track is None or len(track) == 0:
            self.summary.skipped.append(f"{name}: no control steps recorded")
            return False
        if track.dropped:
            # the steps around a hole would be joined as if one followed the other
            self.summary.skipped.append(
                f"{name}: {track.dropped} control step(s) could not be recorded"
            )
            return False
        self._fix_layout(track.layout, episode, name)
        layout = self.layout
        assert layout is not None
        fps = self.summary.fps
        length = len(track)
        index = self.summary.episodes
        first = self.summary.frames
        task_index = self._tasks.setdefault(episode.instruction, len(self._tasks))
        frame_index = np.arange(length, dtype=np.int64)
        timestamps = (frame_index / fps).astype(np.float32)
        columns: dict[str, Any] = {
            STATE: track.states.astype(np.float32),
            ACTION: track.actions.astype(np.float32),
            "timestamp": timestamps,
            "frame_index": frame_index,
            "episode_index": np.full(length, index, dtype=np.int64),
            "index": np.arange(first, first + length, dtype=np.int64),
            "task_index": np.full(length, task_index, dtype=np.int64),
        }
        row: dict[str, Any] = {
            "episode_index": index,
            "tasks": [episode.instruction],
            "length": length,
        }
        row.update(self._write_data(columns))
        row["dataset_from_index"] = first
        row["dataset_to_index"] = first + length
        stats: dict[str, dict[str, Any]] = {
            STATE: vector_stats(columns[STATE]),
            ACTION: vector_stats(columns[ACTION]),
            **{key: vector_stats(columns[key]) for key in INDEX_FEATURES},
        }
        for camera in layout.cameras:
            placed, pixels = self._write_video(camera, episode, track.frames[camera])
            row.update(placed)
            stats[camera_key(camera)] = image_stats(pixels, length)
            self._pixels[camera].append(pixels)
        row["meta/episodes/chunk_index"] = 0
        row["meta/episodes/file_index"] = 0
        for feature, values in stats.items():
            for stat, value in values.items():
                row[f"stats/{feature}/{stat}"] = value
        row.update(episode.metadata())
        self._episode_rows.append(row)
        self._states.append(columns[STATE])
        self._actions.append(columns[ACTION])
        self._sources.append(
            {"episode_index": index, **{k: v for k, v in episode.metadata().items()}}
        )
        self.summary.episodes += 1
        self.summary.frames += length
        return True

    def _fix_layout(self, layout: ControlLayout, episode: Episode, name: str) -> None:
        if self.layout is None:
            rate = layout.rate_hz
            if rate != int(rate):
                raise ExportError(
                    f"{name}: the control rate is {rate} Hz; a LeRobot dataset's fps is a "
                    "whole number (choose a control rate that is one)"
                )
            self.layout = layout
            self.robot_type = episode.robot_type
            self.summary.fps = int(rate)
            self.summary.cameras = list(layout.cameras)
            recorded = list((episode.track.frames if episode.track else {}).keys())
            if recorded != list(layout.cameras):
                # Cameras the driver could render but the run did not record are left out.
                self.layout = layout.model_copy(update={"cameras": tuple(recorded)})
                self.summary.cameras = recorded
            self._pixels = {camera: [] for camera in self.summary.cameras}
            return
        mine = self.layout
        if layout.rate_hz != mine.rate_hz:
            raise ExportError(
                f"{name}: recorded at {layout.rate_hz} Hz, the dataset's episodes at "
                f"{mine.rate_hz} Hz (one dataset has one fps)"
            )
        for what in ("state_names", "action_names"):
            if getattr(layout, what) != getattr(mine, what):
                raise ExportError(
                    f"{name}: {what} {list(getattr(layout, what))} differ from the dataset's "
                    f"{list(getattr(mine, what))}"
                )
        recorded = list((episode.track.frames if episode.track else {}).keys())
        if recorded != list(mine.cameras):
            raise ExportError(
                f"{name}: frames of cameras {recorded}, the dataset's episodes have "
                f"{list(mine.cameras)}"
            )

    # ------------------------------------------------------------------ data

    def _write_data(self, columns: dict[str, Any]) -> dict[str, int]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        assert self.layout is not None
        table = pa.table(
            {
                STATE: fixed_lists(columns[STATE]),
                ACTION: fixed_lists(columns[ACTION]),
                **{key: pa.array(columns[key]) for key in INDEX_FEATURES},
            }
        )
        if self._data_writer is not None and self._data_bytes + table.nbytes > DATA_FILE_MB * 2**20:
            self._data_writer.close()
            self._data_writer = None
            self._data_pos.next()
            self._data_bytes = 0
        if self._data_writer is None:
            path = self.root / DATA_PATH.format(
                chunk_index=self._data_pos.chunk, file_index=self._data_pos.file
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            self._data_writer = pq.ParquetWriter(str(path), table.schema, compression="snappy")
        self._data_writer.write_table(table)  # one row group per episode
        self._data_bytes += table.nbytes
        return {"data/chunk_index": self._data_pos.chunk, "data/file_index": self._data_pos.file}

    # ------------------------------------------------------------------ video

    def _write_video(
        self, camera: str, episode: Episode, shas: list[str]
    ) -> tuple[dict[str, Any], np.ndarray]:
        key = camera_key(camera)
        position = self._video_pos.setdefault(camera, _Position())
        video = self._videos.get(camera)
        if video is not None and video.frames and video.size_mb() >= VIDEO_FILE_MB:
            video.close()
            position.next()
            video = None
        samples = []
        for sha in shas:
            frame = episode.frame(sha)
            shape = self._shapes.setdefault(camera, frame.shape)  # type: ignore[arg-type]
            if frame.shape != shape:
                raise ExportError(
                    f"{episode.source.name or episode.task.id}: a {frame.shape[1]}x"
                    f"{frame.shape[0]} frame from {camera}, whose frames are "
                    f"{shape[1]}x{shape[0]}"
                )
            if video is None:
                video = VideoFile(
                    self.root
                    / VIDEO_PATH.format(
                        video_key=key, chunk_index=position.chunk, file_index=position.file
                    ),
                    fps=self.summary.fps,
                    width=shape[1],
                    height=shape[0],
                    codec=self.codec,
                )
                self._videos[camera] = video
                start = 0.0
            if not samples:
                start = video.seconds
            video.add(frame)
            samples.append(pixel_sample(frame))
        assert video is not None
        placed = {
            f"videos/{key}/chunk_index": position.chunk,
            f"videos/{key}/file_index": position.file,
            f"videos/{key}/from_timestamp": start,
            f"videos/{key}/to_timestamp": video.seconds,
        }
        return placed, np.concatenate(samples)

    # ------------------------------------------------------------------ metadata

    def close(self) -> DatasetSummary:
        """Finish the files and write the metadata (idempotent). Raises ExportError when no
        episode had control steps (nothing would be a dataset)."""
        if self.closed:
            return self.summary
        self.closed = True
        if self._data_writer is not None:
            self._data_writer.close()
        for video in self._videos.values():
            video.close()
        if not self.summary.episodes:
            reasons = "; ".join(self.summary.skipped) or "no episodes"
            raise ExportError(
                f"nothing to export as a dataset ({reasons}): record control steps with "
                "recording.control: true (harness eval --export lerobot turns it on)"
            )
        self.summary.tasks = list(self._tasks)
        write_tasks(self.root, self._tasks)
        write_episodes(self.root, self._episode_rows)
        features = self._features()
        stats = self._stats()
        write_json(
            self.root / "meta/info.json",
            {
                "codebase_version": CODEBASE_VERSION,
                "robot_type": self.robot_type,
                "total_episodes": self.summary.episodes,
                "total_frames": self.summary.frames,
                "total_tasks": len(self._tasks),
                "chunks_size": CHUNKS_SIZE,
                "data_files_size_in_mb": DATA_FILE_MB,
                "video_files_size_in_mb": VIDEO_FILE_MB,
                "fps": self.summary.fps,
                "splits": {"train": f"0:{self.summary.episodes}"},
                "data_path": DATA_PATH,
                "video_path": VIDEO_PATH if self.summary.cameras else None,
                "features": features,
            },
        )
        write_json(self.root / "meta/stats.json", stats)
        layout = self.layout
        assert layout is not None
        write_json(
            self.root / "meta/harness.json",
            {
                "written_by": "embodied-harness",
                "fps_source": "the driver's control rate (embodiment.recording)",
                "layout": layout.model_dump(mode="json"),
                "episodes": self._sources,
            },
        )
        return self.summary

    def abort(self) -> None:
        """Stop writing and remove what was written."""
        self.closed = True
        if self._data_writer is not None:
            self._data_writer.close()
        for video in self._videos.values():
            with contextlib.suppress(Exception):
                video.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def _features(self) -> dict[str, Any]:
        layout = self.layout
        assert layout is not None
        features: dict[str, Any] = {
            STATE: {
                "dtype": "float32",
                "shape": [len(layout.state_names)],
                "names": list(layout.state_names),
            },
            ACTION: {
                "dtype": "float32",
                "shape": [len(layout.action_names)],
                "names": list(layout.action_names),
            },
        }
        for camera in self.summary.cameras:
            height, width, channels = self._shapes[camera]
            first = self.root / VIDEO_PATH.format(
                video_key=camera_key(camera), chunk_index=0, file_index=0
            )
            features[camera_key(camera)] = {
                "dtype": "video",
                "shape": [height, width, channels],
                "names": ["height", "width", "channels"],
                "info": {**probe_video(first), **encoder_info(self.codec)},
            }
        features["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
        for key in ("frame_index", "episode_index", "index", "task_index"):
            features[key] = {"dtype": "int64", "shape": [1], "names": None}
        return features

    def _stats(self) -> dict[str, Any]:
        states = np.concatenate(self._states)
        stats: dict[str, Any] = {
            STATE: vector_stats(states),
            ACTION: vector_stats(np.concatenate(self._actions)),
        }
        rows = self._episode_rows
        frames = self.summary.frames
        stats["timestamp"] = vector_stats(
            np.concatenate([np.arange(r["length"]) / self.summary.fps for r in rows])
        )
        stats["frame_index"] = vector_stats(np.concatenate([np.arange(r["length"]) for r in rows]))
        stats["episode_index"] = vector_stats(
            np.concatenate([np.full(r["length"], r["episode_index"]) for r in rows])
        )
        stats["index"] = vector_stats(np.arange(frames))
        stats["task_index"] = vector_stats(
            np.concatenate([np.full(r["length"], self._tasks[r["tasks"][0]]) for r in rows])
        )
        for camera, samples in self._pixels.items():
            stats[camera_key(camera)] = image_stats(np.concatenate(samples), frames)
        return stats


def write_lerobot(
    episodes: Any, output: str | Path, *, codec: VideoCodec = "libsvtav1"
) -> DatasetSummary:
    """Write ``episodes`` (:func:`~harness.export.episodes.read_episodes`) as a LeRobot
    dataset in the folder ``output``; a failure removes what was written."""
    writer = LeRobotWriter(output, codec=codec)
    try:
        for episode in episodes:
            writer.add(episode)
        return writer.close()
    except BaseException:
        writer.abort()
        raise
