"""What a word that points back means: "it", "there", and a bare "the drawer" said after
"the bottom drawer of the cabinet".

A request of several steps names a thing once and then points back to it. The parser
(:mod:`harness.planner.language`) hands each clause the steps read so far; these decide
which earlier mention a pronoun or a repeated bare noun stands for, before any grounding.
"""

from __future__ import annotations

from harness.planner.task_types import Mention, Step

__all__ = ["POINTING_BACK", "antecedent", "named_before"]

POINTING_BACK = frozenset({"the", "that", "this"})
"""Determiners that, before a bare noun, point back to what was just named ("close that
drawer" after "the bottom drawer of the cabinet", as "close the drawer" does)."""


def antecedent(before: list[Step], role: str, word: str = "it") -> Mention | str:
    """What "it" means: as a subject, the last thing picked or moved ("them" after a place
    on something: the stack, carried by its bottom, "stack the left bowl on the right bowl
    and place them in the tray"); as a target, the last place (or the last thing acted on,
    "turn on the stove and put the pot on it")."""
    if not before:
        return f"I do not know what {'it' if role == 'subject' else 'there'} refers to"
    last = before[-1]
    if role == "subject":
        stacked = word == "them" and last.relation == "on" and last.target is not None
        return last.target if stacked and last.target is not None else last.subject
    return last.target or last.subject


def named_before(mention: Mention, before: list[Step]) -> Mention | None:
    """The thing an earlier step named whose head noun a bare definite mention repeats
    ("the drawer" after "the bottom drawer of the cabinet", the latest such), or None.
    "The" with nothing else to tell which points back to what was just talked about, as
    a pronoun does; a mention with any word of its own ("the top drawer", "the other
    drawer") is read afresh."""
    bare = (
        not mention.qualifiers
        and not mention.conjuncts
        and mention.ordinal is None
        and mention.count == 1
        and not mention.has
        and len(mention.words) + len(mention.part) == 1
    )
    if not bare:
        return None
    head = (mention.part or mention.words)[-1]
    for step in reversed(before):
        for earlier in (step.target, step.subject):
            if earlier is not None and (earlier.part or earlier.words)[-1:] == (head,):
                return earlier
    return None
