"""The typed goal an instruction is parsed into (:mod:`harness.planner.language`) and
grounded from (:mod:`harness.planner.grounding`): steps, and mentions of objects with their
parts, directions, counts and spatial qualifiers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Action", "Mention", "Near", "Qualifier", "Relation", "Step", "Task"]

Action = Literal["place", "pick", "open", "close", "turn_on", "turn_off", "push"]
Relation = Literal["on", "in", "left_of", "right_of", "front_of", "behind", "under"]
"""Where a place puts its subject; "under" is onto the surface below the one the target
names ("under the shelf": the shelf unit's lower layer)."""
Near = Literal["between", "near", "on", "in", "from", "at"]


@dataclass(frozen=True)
class Qualifier:
    """Where a mentioned object is: ``near`` the anchors, ``between`` two of them..."""

    relation: Near
    anchors: tuple[Mention, ...]
    negated: bool = False


@dataclass(frozen=True)
class Mention:
    """An object as the instruction names it.

    ``words`` are the content words of its noun phrase ("black bowl"); ``part`` names a
    part of it ("top drawer" of the cabinet: words ``cabinet``, part ``("top", "drawer")``;
    an empty ``words`` with a part is "whatever has that part"); ``ordinal`` picks one of
    several alike by direction ("the left plate"); ``count`` is 2 for "both moka pots";
    ``pronoun`` marks "it"/"there" (resolved from the previous clause by the parser);
    ``conjuncts`` holds the parts of "X and Y" (the grounder decides whether it is one
    object, "the yellow and white mug", or two).
    """

    words: tuple[str, ...] = ()
    part: tuple[str, ...] = ()
    ordinal: str | None = None
    count: int = 1
    qualifiers: tuple[Qualifier, ...] = ()
    conjuncts: tuple[Mention, ...] = ()
    pronoun: bool = False
    both: bool = False
    every: bool = False
    """ "all", "each" or "every": every thing the words fit, however many the scene has."""
    has: tuple[str, ...] = ()
    """For a part of "whatever has" something ("the top of the drawer": the top of the
    thing that has drawers), what it has."""

    def text(self) -> str:
        if self.pronoun:
            return "it"
        words = [w for w in (self.ordinal,) if w] + list(self.words)
        head = " ".join(words)
        if self.part:
            head = (
                f"the {' '.join(self.part)} of the {head}" if head else f"the {' '.join(self.part)}"
            )
        else:
            head = f"the {head}" if head else "something"
        if self.count > 1:
            head = f"{'both' if self.both else self.count} {head.removeprefix('the ')}"
        elif self.every:
            head = f"every {head.removeprefix('the ')}"
        for qualifier in self.qualifiers:
            anchors = " and ".join(a.text() for a in qualifier.anchors)
            word = qualifier.relation.replace("near", "next to")
            head += f" {'not ' if qualifier.negated else ''}{word} {anchors}"
        return head


@dataclass(frozen=True)
class Step:
    """One thing to do: ``action`` on ``subject``, for a place ``relation`` ``target``."""

    action: Action
    subject: Mention
    target: Mention | None = None
    relation: Relation | None = None
    """None with a target: "in" for a container or a drawer, "on" otherwise."""


@dataclass(frozen=True)
class Task:
    steps: tuple[Step, ...] = ()
    problem: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.steps) and not self.problem
