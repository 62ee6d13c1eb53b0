"""A recorded task as viewer records: its events (and its sub-agent lanes', interleaved as
they happened) read from the run store, redacted on the way out, through a
:class:`~harness.export.translate.Translator`.

The run store keeps everything a viewer needs: frames by hash in ``images``, the
gripper's pose in each ``observation`` event's state, the scene graph's objects in each
``scene_update`` (a full snapshot first, then diffs). The workspace and keep-out zones are
the session's embodiment profile, which the store records as configured: a built-in name
or an inline mapping reads back exactly; a profile file is read again from its path (when
it has moved, the export goes on without zones and says so).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from harness.export.records import Record
from harness.export.translate import Translator
from harness.store.reader import RunLog, StoredTask

__all__ = ["recorded_profile", "stored_records"]

logger = logging.getLogger(__name__)


def recorded_profile(log: RunLog, session_id: str) -> Any:
    """The embodiment profile the session ran with, or None (none configured, or its file
    cannot be read any more: a warning says which)."""
    from embodiment.profile import ProfileError
    from worlds.registry import load_profile  # a name may be a world's profile

    source = log.session(session_id).config.get("embodiment")
    if source is None:
        return None
    try:
        return load_profile(source)
    except ProfileError as exc:
        logger.warning("no workspace or keep-out zones in the export: %s", exc)
        return None


def stored_records(log: RunLog, task: StoredTask, *, lanes: bool = True) -> Iterator[Record]:
    """Every viewer record of ``task`` in store order (``lanes``: with its sub-agents')."""
    translator = Translator(images=log.image, profile=recorded_profile(log, task.session_id))
    ids = [task.id, *(lane.id for lane in log.lanes(task.id))] if lanes else [task.id]
    for _, event in log.events_with_pos(task_ids=ids):
        yield from translator.translate(event)
