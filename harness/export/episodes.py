"""Which recorded tasks become episodes of a dataset or a bag, and what each one says.

An episode is one task: a task of a run store (``harness export RUN``: a task id, ``last``
or a unique prefix gives that task; a session id gives every task of the session), or one
episode of an eval (``harness export EVAL_DIR``: the CLI reads the eval's records and hands
their stores and task ids here, with the eval's own success verdict). Each is read from
its run store with redaction, like every other way out of the store.

What an episode says about itself (:meth:`Episode.metadata`) is the run store's verdict,
never the exporter's: the task's status and outcome, the outcome's evidence (which check
ran, who judged, which goal conditions held) and ``success``: the eval's verdict for an
eval episode, else the harness's own (:func:`harness.events.task_succeeded`).
``--only-achieved`` keeps the episodes whose goal a task check confirmed (outcome
``achieved``).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.events import task_succeeded
from harness.export.control import ControlTrack, ExportError, stored_control
from harness.export.recorded import recorded_profile
from harness.store.reader import RunLog, StoredTask

__all__ = ["Episode", "EpisodeSource", "open_episode", "read_episodes", "run_sources"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeSource:
    """Where one episode is recorded."""

    store: Path
    task_id: str
    name: str = ""
    """The eval episode's key ("" for a task of a run)."""
    success: bool | None = None
    """The eval's success verdict (None: the task's own, from the run store)."""


@dataclass
class Episode:
    """One recorded task, its run store open while it is written out."""

    source: EpisodeSource
    log: RunLog
    task: StoredTask
    track: ControlTrack | None
    robot_type: str | None

    @property
    def instruction(self) -> str:
        return self.task.instruction

    @property
    def achieved(self) -> bool:
        """Completed, and a task check confirmed the goal."""
        return self.task.status == "completed" and self.task.outcome == "achieved"

    @property
    def success(self) -> bool:
        if self.source.success is not None:
            return self.source.success
        return task_succeeded(self.task.status, self.task.outcome, self.task.evidence)

    def frame(self, sha256: str) -> np.ndarray:
        """A stored frame as HxWx3 uint8 RGB."""
        from PIL import Image

        image = self.log.image(sha256)
        if image is None:
            raise ExportError(
                f"task {self.task.id}: frame {sha256[:12]} is not in the run store "
                f"{self.source.store}"
            )
        with Image.open(io.BytesIO(image.data)) as opened:
            return np.asarray(opened.convert("RGB"))

    def metadata(self) -> dict[str, Any]:
        """What the episode says about itself (see the module docstring)."""
        evidence = self.task.evidence
        track = self.track
        return {
            "success": self.success,
            "status": self.task.status,
            "outcome": self.task.outcome,
            "evidence/check": evidence.check,
            "evidence/checked_by": evidence.checked_by,
            "evidence/summary": evidence.summary,
            "evidence/conditions": json.dumps(
                [c.model_dump(mode="json") for c in evidence.conditions], ensure_ascii=False
            ),
            "source/episode": self.source.name,
            "source/task_id": self.task.id,
            "source/session_id": self.task.session_id,
            "source/store": str(self.source.store),
            "control/commands": len(track.commands) if track else 0,
            "control/gaps": track.gaps if track else 0,
            "control/dropped": track.dropped if track else 0,
        }


def run_sources(store: str | Path, run: str) -> list[EpisodeSource]:
    """The episodes ``run`` names in the run store ``store``: a session id gives each of
    the session's tasks (oldest first), anything else the one task it resolves to."""
    folder = Path(store)
    with RunLog(folder) as log:
        sessions = {session.id for session in log.sessions()}
        if run in sessions:
            tasks = [t for t in reversed(log.tasks(session_id=run)) if not t.is_lane]
        else:
            tasks = [log.resolve(run)]
    return [EpisodeSource(store=folder, task_id=task.id) for task in tasks]


@contextmanager
def open_episode(source: EpisodeSource, *, control: bool = True) -> Iterator[Episode]:
    """``source`` as an :class:`Episode`, its run store open until the block ends
    (``control``: with its control track)."""
    with RunLog(source.store, redact=True) as log:
        task = log.task(source.task_id)
        profile = recorded_profile(log, task.session_id)
        yield Episode(
            source=source,
            log=log,
            task=task,
            track=stored_control(log, task) if control else None,
            robot_type=getattr(profile, "name", None),
        )


def read_episodes(
    sources: Iterable[EpisodeSource], *, only_achieved: bool = False, control: bool = True
) -> Iterator[Episode]:
    """Each source as an :class:`Episode`, its store open until the next one is asked for
    (``only_achieved``: skipping, with a log line, those whose goal was not confirmed)."""
    for source in sources:
        with open_episode(source, control=control) as episode:
            if only_achieved and not episode.achieved:
                task = episode.task
                logger.info(
                    "left out %s: %s, outcome %s", source.name or task.id, task.status, task.outcome
                )
                continue
            yield episode
