"""The HTML report's view of episodes and context pressure.

An *Episodes* section lists the task's episodes (kind, state, turns, dependencies and
conclusion), and the timeline marks each episode change and each pressure nudge.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from harness.events import ContextPressureEvent, EpisodeEvent

if TYPE_CHECKING:
    from harness.events import Event
    from harness.store.reader import RunLog

__all__ = ["episode_event_html", "episodes_html"]


def episodes_html(log: RunLog, task_id: str) -> str:
    """The *Episodes* section ("" when the task marked none)."""
    episodes = log.episodes(task_id)
    if not episodes:
        return ""
    rows = "".join(
        f"<tr><td>{escape(e.name)}</td><td>{escape(e.kind)}</td><td>{escape(e.state)}</td>"
        f"<td>{e.begun_turn}-{e.ended_turn if e.ended_turn is not None else ''}</td>"
        f"<td>{escape(', '.join(e.depends_on))}</td><td>{escape(e.conclusion)}</td></tr>"
        for e in episodes
    )
    return (
        f"<h2>Episodes</h2><table><tr><th>episode</th><th>kind</th><th>state</th>"
        f"<th>turns</th><th>depends on</th><th>conclusion</th></tr>{rows}</table>"
    )


def episode_event_html(event: Event) -> tuple[str, str, str] | None:
    """(css class, label, escaped text) of an episode or pressure event, else None."""
    if isinstance(event, EpisodeEvent):
        depends = f" depending on {', '.join(event.depends_on)}" if event.depends_on else ""
        ended = f": {event.conclusion}" if event.conclusion else ""
        text = f"{event.kind} {event.name} {event.status}{depends}{ended}"
        return "note", "episode", escape(text)
    if isinstance(event, ContextPressureEvent):
        return "compaction", "pressure", escape(event.message)
    return None
