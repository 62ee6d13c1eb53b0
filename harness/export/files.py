"""One call to export a recorded task to a viewer file: ``harness export --format mcap|rrd``
and ``harness eval --export`` both use it.

The viewer SDKs are the ``viz`` extra; :func:`require_viz` turns a missing one into a
readable error naming the extra before anything is written.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Literal

from harness.errors import UsageError
from harness.export.recorded import stored_records
from harness.store.reader import RunLog, StoredTask

__all__ = ["FORMATS", "ViewerFormat", "export_stored", "export_task", "require_viz"]

ViewerFormat = Literal["mcap", "rrd"]
FORMATS: dict[str, tuple[str, ...]] = {
    "mcap": ("mcap", "foxglove"),
    "rrd": ("rerun",),
    "foxglove": ("foxglove",),
    "rerun": ("rerun",),
}
"""What each format or live stream imports (all from the ``viz`` extra)."""
_DISTRIBUTIONS = {"mcap": "mcap", "foxglove": "foxglove-sdk", "rerun": "rerun-sdk"}


def require_viz(what: str) -> None:
    """Raise a :class:`UsageError` naming the extra when ``what`` cannot be imported."""
    for module in FORMATS[what]:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UsageError(
                f"{what} needs {_DISTRIBUTIONS[module]} ({exc}); install the viz extra: "
                "pip install 'embodied-harness[viz]'"
            ) from None


def export_task(
    log: RunLog,
    task: StoredTask,
    *,
    format: ViewerFormat,
    output: str | os.PathLike[str],
    lanes: bool = True,
) -> int:
    """Write ``task`` (with its sub-agent lanes) to ``output``; returns the message count.

    ``log`` should redact (``RunLog(folder, redact=True)``): what leaves the store is
    redacted again, like every other way of reading it.
    """
    require_viz(format)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
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
    raise UsageError(f"--format {format!r}: expected mcap or rrd")


def export_stored(
    store: str | os.PathLike[str],
    run: str,
    *,
    format: ViewerFormat,
    output: str | os.PathLike[str],
) -> int:
    """:func:`export_task` for the task ``run`` (an id, a prefix or ``last``) of the run store
    in the folder ``store`` (read with redaction)."""
    with RunLog(store, redact=True) as log:
        return export_task(log, log.resolve(run), format=format, output=output)
