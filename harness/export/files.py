"""One call to export recorded tasks to a file format: ``harness export --format
mcap|rrd|rosbag2|lerobot`` and ``harness eval --export`` both use it.

Each format's libraries are an extra (``viz``: MCAP and Rerun; ``rosbag``: ROS 2 bags;
``dataset``: LeRobot datasets); :func:`require_format` turns a missing one into a readable
error naming the extra before anything is written.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harness.errors import UsageError
from harness.export.recorded import stored_records
from harness.store.reader import RunLog, StoredTask

if TYPE_CHECKING:
    from harness.export.episodes import EpisodeSource
    from harness.export.lerobot_dataset import DatasetSummary

__all__ = [
    "FORMATS",
    "TaskFormat",
    "ViewerFormat",
    "export_dataset",
    "export_stored",
    "export_task",
    "require_format",
    "require_viz",
]

ViewerFormat = Literal["mcap", "rrd"]
TaskFormat = Literal["mcap", "rrd", "rosbag2"]
"""Formats that hold one task (a dataset holds many: :func:`export_dataset`)."""
FORMATS: dict[str, tuple[str, ...]] = {
    "mcap": ("mcap", "foxglove"),
    "rrd": ("rerun",),
    "foxglove": ("foxglove",),
    "rerun": ("rerun",),
    "rosbag2": ("rosbags",),
    "lerobot": ("pyarrow", "av"),
}
"""What each format or live stream imports."""
_DISTRIBUTIONS = {
    "mcap": "mcap",
    "foxglove": "foxglove-sdk",
    "rerun": "rerun-sdk",
    "rosbags": "rosbags",
    "pyarrow": "pyarrow",
    "av": "av",
}
_EXTRAS = {"rosbag2": "rosbag", "lerobot": "dataset"}
"""The extra of each format not in ``viz``."""


def require_format(what: str) -> None:
    """Raise a :class:`UsageError` naming the extra when ``what`` cannot be imported."""
    extra = _EXTRAS.get(what, "viz")
    for module in FORMATS[what]:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UsageError(
                f"{what} needs {_DISTRIBUTIONS[module]} ({exc}); install the {extra} extra: "
                f"pip install 'embodied-harness[{extra}]'"
            ) from None


require_viz = require_format
"""The name the live streams and the eval's ``--export`` have used."""


def export_task(
    log: RunLog,
    task: StoredTask,
    *,
    format: TaskFormat,
    output: str | os.PathLike[str],
    lanes: bool = True,
    ros_distro: str = "jazzy",
) -> int:
    """Write ``task`` (with its sub-agent lanes) to ``output``; returns the message count.

    ``log`` should redact (``RunLog(folder, redact=True)``): what leaves the store is
    redacted again, like every other way of reading it. ``rosbag2`` writes a bag folder
    (``output`` must not exist).
    """
    require_format(format)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    if format == "rosbag2":
        from harness.export.control import stored_control
        from harness.export.episodes import Episode, EpisodeSource
        from harness.export.recorded import recorded_profile
        from harness.export.rosbag import write_rosbag

        profile = recorded_profile(log, task.session_id)
        episode = Episode(
            source=EpisodeSource(store=log.folder, task_id=task.id),
            log=log,
            task=task,
            track=stored_control(log, task, lanes=lanes),
            robot_type=getattr(profile, "name", None),
        )
        return write_rosbag(episode, output, distro=ros_distro).messages
    records = stored_records(log, task, lanes=lanes)
    if format == "mcap":
        from harness.export.mcap_file import write_mcap

        metadata = {
            "session_id": task.session_id,
            "task_id": task.id,
            "instruction": task.instruction,
            "status": task.status,
            "outcome": task.outcome,
            "turns": task.turns,
        }
        return write_mcap(records, output, metadata=metadata)
    if format == "rrd":
        from harness.export.rerun_log import write_rrd

        return write_rrd(records, output, recording_id=task.id)
    raise UsageError(f"--format {format!r}: expected mcap, rrd or rosbag2")


def export_stored(
    store: str | os.PathLike[str],
    run: str,
    *,
    format: TaskFormat,
    output: str | os.PathLike[str],
) -> int:
    """:func:`export_task` for the task ``run`` (an id, a prefix or ``last``) of the run store
    in the folder ``store`` (read with redaction)."""
    with RunLog(store, redact=True) as log:
        return export_task(log, log.resolve(run), format=format, output=output)


def export_dataset(
    sources: Iterable[EpisodeSource],
    output: str | os.PathLike[str],
    *,
    only_achieved: bool = False,
    codec: str = "libsvtav1",
) -> DatasetSummary:
    """A LeRobot dataset of the episodes ``sources`` name (one per task or eval episode)
    in the new folder ``output``."""
    require_format("lerobot")
    from harness.export.episodes import read_episodes
    from harness.export.lerobot_dataset import write_lerobot

    episodes = read_episodes(sources, only_achieved=only_achieved)
    return write_lerobot(episodes, output, codec=codec)  # type: ignore[arg-type]
