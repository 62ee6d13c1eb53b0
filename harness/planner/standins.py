"""What a mention means when nothing in the scene fits every one of its words.

A benchmark that replaces objects keeps the task's words ("the wine bottle" where the
scene's only bottle is a white one, "the book" where a black bowl stands instead), and a
user may misremember a colour. The rule, as a
careful operator would follow it:

- The things of the kind the noun names, whose labels contradict no colour the words say,
  are taken when there are exactly as many as the mention names ("the wine bottle": the
  only bottle, a white one). The report says which thing stood in for the words
  (:func:`note`).
- Otherwise the words name nothing here, and the planner does not guess: the things of the
  named kind (two mugs, neither yellow and white; or the only mug, red, where "the yellow
  mug" was asked), else, for a thing to be moved, every movable thing (no book: a black
  bowl and a mug) are the candidates. A user's answer that names one of them settles it
  (the report says so); without one the planner asks where it can and refuses otherwise,
  naming what it sees. A colour said is often the very word that tells two things apart,
  and a thing of another kind is not what the words name: either is a question, not a guess.

Pure functions over the Brief's objects; :mod:`harness.planner.grounding` applies them.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.planner.brief import BriefObject
from harness.planner.language import Mention
from harness.planner.lexicon import (
    COLOURS,
    FURNITURE,
    GENERAL_FURNITURE,
    PACKAGE_WORDS,
    equivalent,
)

__all__ = [
    "Unresolved",
    "colour_compound",
    "furniture",
    "kind_of",
    "listing",
    "note",
    "said_text",
    "stand_in",
    "stand_ins",
]


class Unresolved(Exception):
    """A mention that names nothing, or several things equally. ``missing`` holds the
    words of a thing the scene does not show (worth a ``find_objects`` when the Brief left
    objects out)."""

    def __init__(
        self, message: str, *, missing: str = "", candidates: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.missing = missing
        self.candidates = candidates
        """The refs that fit equally (an ambiguity the user may settle), else ()."""


def _label_words(item: BriefObject) -> list[str]:
    return item.label.lower().split()


def kind_of(mention: Mention) -> tuple[str, ...]:
    """The words that may name the mention's kind: its noun (the last word that is no
    package word nor a colour: "the red bottle" is a bottle, not something red), else the
    package word that ends the phrase ("wine bottle": no wine here, but a bottle)."""
    words = mention.words
    nouns = (w for w in reversed(words) if w not in PACKAGE_WORDS and w not in COLOURS)
    noun = next(nouns, words[-1])
    return tuple(dict.fromkeys((noun, words[-1])))


def stand_ins(
    mention: Mention, pool: list[BriefObject], *, movable: bool | None
) -> tuple[list[BriefObject], list[BriefObject], str]:
    """(the things taken for ``mention``, else the candidates to settle or ask about, and
    the kind they are of: "bottle" for "the wine bottle", "" when nothing here is of it).

    ``pool`` is what the mention may name (movable things for a subject). The first list
    is non-empty only when the things of the named kind that contradict no colour said
    are exactly ``mention.count``; the second then is empty."""
    if not mention.words:
        return [], [], ""
    said = [w for w in mention.words if w in COLOURS]
    for kind in kind_of(mention):
        of_kind = [o for o in pool if any(equivalent(kind, w) for w in _label_words(o))]
        if not of_kind:
            continue
        fits = [
            o for o in of_kind if all(any(equivalent(c, w) for w in _label_words(o)) for c in said)
        ]
        if len(mention.words) >= 2 and len(fits) == mention.count:
            return fits, [], kind
        return [], of_kind, kind
    if not movable and (pieces := furniture(mention, pool)):
        return pieces, [], "storage furniture"
    return [], (list(pool) if movable else []), ""


def furniture(mention: Mention, pool: list[BriefObject]) -> list[BriefObject]:
    """The piece of storage furniture a furniture word stands for when the scene has no
    piece of that kind: "the cabinet" in a kitchen whose only such piece is a wooden two
    layer shelf. People call an open shelving unit a cabinet or a cupboard
    (:data:`~harness.planner.lexicon.GENERAL_FURNITURE`), and a careful person told "put
    the pan on top of the cabinet" there would take the shelf unit, because it is the only
    thing the word could mean, and say so; "the shelf" is not said of a cabinet of drawers,
    which has none. Taken only when (1) the mention's noun is a general furniture word,
    (2) nothing in ``pool`` is of the named kind or its synonyms (a scene with a cabinet
    keeps "cabinet" for it), (3) exactly one fixture (no movable object) in ``pool`` is
    storage furniture by its own label's noun, and (4) the mention says no colour; else
    []. The report notes the stand-in (:func:`note`)."""
    if not mention.words or any(w in COLOURS for w in mention.words):
        return []
    noun = kind_of(mention)[0]
    if noun not in GENERAL_FURNITURE:
        return []
    if any(any(equivalent(noun, w) for w in _label_words(o)) for o in pool):
        return []
    pieces = [
        o
        for o in pool
        if "kind=object" not in o.tags
        and o.label
        and any(equivalent(_label_words(o)[-1], w) for w in FURNITURE)
    ]
    return pieces if len(pieces) == 1 else []


def stand_in(
    mention: Mention,
    pool: list[BriefObject],
    *,
    movable: bool | None,
    settle: Callable[[list[BriefObject]], BriefObject | None],
    notes: list[str],
) -> list[str]:
    """The refs ``mention`` stands for when nothing fits all its words: the thing(s) of its
    kind (:func:`stand_ins`), else the candidate the user's answer names (``settle``), each
    with a line for the report appended to ``notes``; else :class:`Unresolved` naming the
    candidates (the planner asks where it can, and refuses otherwise)."""
    taken, candidates, kind = stand_ins(mention, pool, movable=movable)
    chosen = settle(candidates) if candidates and mention.count == 1 else None
    if chosen is not None:
        taken = [chosen]
    if taken:
        notes.append(note(mention, taken, kind, answered=chosen is not None))
        return sorted(o.ref for o in taken)
    labels = ", ".join(f"the {o.label}" for o in sorted(candidates, key=lambda o: o.ref))
    what = f"the {kind}s here" if kind else "the things here I could move"
    seen = f"; {what}: {labels}" if candidates else ""
    raise Unresolved(
        f"I see no {said_text(mention)} in the scene{seen}",
        missing=" ".join(mention.words),
        candidates=tuple(sorted(o.ref for o in candidates)),
    )


def colour_compound(mention: Mention) -> bool:
    """Whether a mention's conjuncts split one thing's colours ("the yellow and white
    mug": every conjunct but the last is colours only), not two things."""
    if len(mention.conjuncts) < 2 or mention.both:
        return False
    return all(all(w in COLOURS for w in c.words) for c in mention.conjuncts[:-1])


def said_text(mention: Mention) -> str:
    """The mention's words as said ("yellow and white mug")."""
    if colour_compound(mention):
        return " and ".join(" ".join(c.words) for c in mention.conjuncts)
    return " ".join(mention.words)


def listing(items: list[BriefObject]) -> str:
    """ "black_bowl_1 (black bowl), white_yellow_mug_1 (yellow and white mug)"."""
    return ", ".join(f"{o.ref} ({o.label})" for o in sorted(items, key=lambda o: o.ref))


def note(mention: Mention, chosen: list[BriefObject], kind: str, *, answered: bool) -> str:
    """The report's plain line on a thing taken for words it does not fit."""
    words = said_text(mention)
    if answered:
        return f"Note: nothing here is the {words}; you chose {listing(chosen)}."
    only = "the only one" if len(chosen) == 1 else "the only ones"
    return (
        f"Note: nothing here is exactly the {words}; I took {listing(chosen)}, "
        f"{only} of the kind '{kind}' here, for it."
    )
