"""Episodes: the structure of the work, as the model marks it.

An **exploration** gathers information (look around, find the mug, check the drawer) and
must end with a concise conclusion; an **action** changes the world (pick, place, open)
and names the completed explorations it depends on. Items recorded while an episode is
active carry its name (``Item.episode``), so eviction (:mod:`harness.context.eviction.by_structure`)
can archive a finished episode to its conclusion and addresses, keep an exploration while
an action that depends on it is still in the working set, and never touch an active one.

One episode is active per task at a time: a robot does one thing at a time, and the rule
keeps every turn in at most one episode. :class:`EpisodeBook` enforces the rules and
refuses with a sentence a model can act on (:class:`EpisodeError`); it is the only place
the rules live. A task that ends with its episode still open closes it as ``abandoned``.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

__all__ = [
    "CONCLUSION_MAX_CHARS",
    "Episode",
    "EpisodeBook",
    "EpisodeError",
    "EpisodeKind",
    "EpisodeState",
]

EpisodeKind = Literal["exploration", "action"]
EpisodeState = Literal["active", "completed", "abandoned"]
CONCLUSION_MAX_CHARS = 600
"""A conclusion is what survives of an exploration in the working set: a few sentences."""
EPISODES_KEPT = 512
"""Ended episodes the book remembers (the run store keeps every ``episode`` event)."""
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
RENDER_COMPLETED = 1
"""Newest ended episodes listed in the status line the model sees each turn. The line is
Refreshed context, sent uncached with every request, so it names only what the next
decision needs (the active episode, the one just ended, for ``depends_on``); every ended
episode's conclusion is in its record or the checkpoint."""


class EpisodeError(ValueError):
    """A refused ``begin_episode`` / ``end_episode``: the message says why and what to do."""


@dataclass(frozen=True)
class Episode:
    name: str
    kind: EpisodeKind
    task_id: str
    begun_turn: int
    depends_on: tuple[str, ...] = ()
    state: EpisodeState = "active"
    conclusion: str = ""
    ended_turn: int | None = None

    @property
    def active(self) -> bool:
        return self.state == "active"

    def describe(self) -> str:
        depends = f" (depends on {', '.join(self.depends_on)})" if self.depends_on else ""
        ended = f": {self.conclusion}" if self.conclusion else ""
        return f"{self.kind} {self.name}{depends}{ended}"


@dataclass
class EpisodeBook:
    """Every episode of one context, by name (see the module docstring)."""

    episodes: OrderedDict[str, Episode] = field(default_factory=OrderedDict)

    # ------------------------------------------------------------------ queries

    def get(self, name: str) -> Episode | None:
        return self.episodes.get(name)

    def active(self, task_id: str | None = None) -> list[Episode]:
        return [e for e in self.episodes.values() if e.active and task_id in (None, e.task_id)]

    def active_names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.episodes.values() if e.active)

    def current(self, task_id: str) -> str:
        """The name every item this task records now carries ("" outside an episode)."""
        for episode in reversed(self.episodes.values()):
            if episode.active and episode.task_id == task_id:
                return episode.name
        return ""

    def dependants(self, name: str) -> list[Episode]:
        return [e for e in self.episodes.values() if name in e.depends_on]

    def __len__(self) -> int:
        return len(self.episodes)

    # ------------------------------------------------------------------ changes

    def begin(
        self,
        *,
        task_id: str,
        turn: int,
        kind: EpisodeKind,
        name: str,
        depends_on: Iterable[str] = (),
    ) -> Episode:
        """Start an episode, or raise :class:`EpisodeError` saying why not."""
        depends = tuple(dict.fromkeys(depends_on))
        if not NAME_PATTERN.match(name):
            raise EpisodeError(
                f"episode name {name!r} is not usable: use 1-64 letters, digits, '-', '_', "
                "'.' or ':', starting with a letter or digit"
            )
        open_ = self.active(task_id)
        if open_:
            raise EpisodeError(
                f"episode {open_[0].name!r} ({open_[0].kind}) is still active: end it with "
                "end_episode before beginning another"
            )
        if name in self.episodes:
            raise EpisodeError(
                f"an episode named {name!r} already exists ({self.episodes[name].state}); "
                "choose a new name"
            )
        if kind == "exploration" and depends:
            raise EpisodeError(
                "an exploration depends on nothing: only an action names the explorations "
                "it depends on (drop depends_on, or begin an action)"
            )
        if kind == "action":
            if not depends:
                raise EpisodeError(
                    "an action names the completed exploration(s) it depends on in "
                    "depends_on; explore first (begin_episode kind=exploration)"
                )
            for dependency in depends:
                problem = self._not_a_dependency(dependency)
                if problem:
                    raise EpisodeError(f"depends_on {dependency!r}: {problem}")
        episode = Episode(
            name=name, kind=kind, task_id=task_id, begun_turn=turn, depends_on=depends
        )
        self.episodes[name] = episode
        return episode

    def _not_a_dependency(self, name: str) -> str:
        episode = self.episodes.get(name)
        if episode is None:
            known = [e.name for e in self.episodes.values() if e.kind == "exploration"]
            hint = f" (completed explorations: {', '.join(known[-5:])})" if known else ""
            return f"no such episode{hint}"
        if episode.kind != "exploration":
            return "is an action; an action depends on explorations"
        if episode.active:
            return "is still active; end it with its conclusion first"
        if episode.state != "completed":
            return f"was {episode.state} without a conclusion"
        return ""

    def end(self, *, task_id: str, turn: int, name: str, conclusion: str) -> Episode:
        """End the task's active episode ``name``, or raise :class:`EpisodeError`."""
        episode = self.episodes.get(name)
        conclusion = conclusion.strip()
        if episode is None or episode.task_id != task_id:
            active = self.active(task_id)
            hint = f"; the active one is {active[0].name!r}" if active else "; none is active"
            raise EpisodeError(f"no episode named {name!r} in this task{hint}")
        if not episode.active:
            raise EpisodeError(f"episode {name!r} already ended ({episode.state})")
        if episode.kind == "exploration" and not conclusion:
            raise EpisodeError(
                "an exploration ends with its conclusion: what it found that later actions "
                "rely on (one or two sentences)"
            )
        if len(conclusion) > CONCLUSION_MAX_CHARS:
            raise EpisodeError(
                f"the conclusion has {len(conclusion)} characters; keep it under "
                f"{CONCLUSION_MAX_CHARS} (details stay reachable by their archive:// "
                "addresses)"
            )
        ended = replace(episode, state="completed", conclusion=conclusion, ended_turn=turn)
        self.episodes[name] = ended
        self._forget_old()
        return ended

    def close_task(self, task_id: str, *, turn: int) -> list[Episode]:
        """The task ended: its open episodes are ``abandoned`` (and may be evicted)."""
        closed = []
        for episode in self.active(task_id):
            abandoned = replace(
                episode,
                state="abandoned",
                conclusion="(the task ended before end_episode)",
                ended_turn=turn,
            )
            self.episodes[episode.name] = abandoned
            closed.append(abandoned)
        return closed

    def restore(self, episode: Episode) -> None:
        """Put back an episode read from the run store (resume)."""
        self.episodes[episode.name] = episode

    def _forget_old(self) -> None:
        ended = [name for name, e in self.episodes.items() if not e.active]
        for name in ended[: max(0, len(ended) - EPISODES_KEPT)]:
            del self.episodes[name]

    # ------------------------------------------------------------------ the model's view

    def render(self, task_id: str) -> str:
        """The status line shown with the observation each turn ("" without episodes):
        the active episode, and the newest ended ones with their conclusions."""
        mine = [e for e in self.episodes.values() if e.task_id == task_id]
        if not mine:
            return ""
        lines = ["Episodes:"]
        for episode in mine:
            if episode.active:
                lines.append(f"- active {episode.describe()}")
        ended = [e for e in mine if not e.active]
        for episode in ended[-RENDER_COMPLETED:]:
            lines.append(f"- {episode.state} {episode.describe()}")
        if len(ended) > RENDER_COMPLETED:
            lines.append(f"- ({len(ended) - RENDER_COMPLETED} earlier episodes ended)")
        return "\n".join(lines)
