"""What the offline planner knows about English words, as any language model would.

General vocabulary only: verbs of manipulation, prepositions of place, words that name the
same kind of thing, words for the package an item comes in, and the colour a material
implies. Nothing here names a benchmark's task, scene or object list: an instruction is
understood from these words and grounded in what the Brief shows (:mod:`grounding`).
"""

from __future__ import annotations

import functools
import re

from scene.nodes import singular

__all__ = [
    "ARTICLES",
    "BARE_POSITION",
    "BARE_SIDE",
    "COLOURS",
    "DIRECTIONS",
    "DIRECTION_ALIASES",
    "FURNITURE",
    "GENERAL_FURNITURE",
    "PACKAGE_WORDS",
    "PARTS",
    "equivalent",
    "implied_words",
    "normalise",
    "side_first",
    "stem",
]

ARTICLES = frozenset({"the", "a", "an", "that", "this"})

COLOURS = frozenset(
    {
        "red", "green", "blue", "yellow", "white", "black", "orange", "purple", "pink",
        "brown", "grey", "gray", "silver", "gold", "golden", "beige", "cyan", "magenta",
    }
)  # fmt: skip

PACKAGE_WORDS = frozenset(
    {"box", "carton", "can", "tin", "jar", "pack", "packet", "bag", "bottle", "container"}
)
"""Words for what an item comes in: "the cream cheese box" is the cream cheese. Optional
when the object's label does not say them."""

DIRECTIONS = frozenset({"left", "right", "front", "back", "top", "middle", "bottom", "center"})

DIRECTION_ALIASES = {
    "lower": "bottom",
    "lowest": "bottom",
    "upper": "top",
    "uppermost": "top",
    "rear": "back",
    "centre": "center",
    "central": "center",
    "leftmost": "left",
    "rightmost": "right",
    "frontmost": "front",
    "backmost": "back",
    "rearmost": "back",
    "hindmost": "back",
    "middlemost": "middle",
    "centermost": "center",
    "centremost": "center",
}

PARTS = frozenset(
    {"drawer", "layer", "shelf", "compartment", "door", "top", "side", "front", "back", "lid"}
)
"""Nouns that name a part of a fixture ("the top drawer of the cabinet", "the back
compartment of the caddy")."""

_SYNONYMS: tuple[frozenset[str], ...] = (
    frozenset({"mug", "cup"}),
    frozenset({"pan", "frypan", "skillet", "fryingpan"}),
    frozenset({"stove", "cooktop", "burner", "hob", "range"}),
    frozenset({"cabinet", "cupboard", "dresser"}),
    frozenset({"basket", "bin", "hamper"}),
    frozenset({"plate", "dish"}),
    frozenset({"bowl"}),
    frozenset({"book", "notebook"}),
    frozenset({"caddy", "organizer", "organiser"}),
    frozenset({"rack", "stand"}),
    frozenset({"cookie", "biscuit"}),
    frozenset({"ketchup", "catsup"}),
    frozenset({"sauce"}),
    frozenset({"table", "desk", "counter"}),
    frozenset({"microwave", "oven"}),
    frozenset({"center", "centre", "middle"}),
    frozenset({"drawer", "layer"}),
    frozenset({"bottom", "lower", "lowest"}),
    frozenset({"top", "upper", "uppermost"}),
)
FURNITURE = frozenset(
    {
        "cabinet", "cupboard", "dresser", "shelf", "shelving", "bookcase", "bookshelf",
        "sideboard", "wardrobe", "closet",
    }
)  # fmt: skip
"""Label nouns of storage furniture: a piece that stands on the floor or the table and
holds things on shelves or in drawers."""
GENERAL_FURNITURE = frozenset({"cabinet", "cupboard", "closet", "sideboard", "wardrobe"})
"""Furniture words people use for any such piece ("the cabinet" for an open two-layer
shelf, "the cabinet shelf" for its board). A word for one feature ("shelf", "dresser":
boards, drawers) is not used for a piece that lacks it, so only these may stand for
another piece, and only where the scene has no piece of the named kind and exactly one of
the family (:func:`harness.planner.standins.furniture`)."""

_CLASS = {word: group for group in _SYNONYMS for word in group}

_IMPLIES: dict[str, tuple[str, ...]] = {
    "porcelain": ("white",),
    "ceramic": ("white",),
    "wine": ("glass",),
    "chocolate": ("brown",),
}
"""Material and make words and the colour they bring to mind ("the white mug" is the
porcelain one)."""


@functools.lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """The word's singular, lower case ("cubes" -> "cube"; "cookies" -> "cookie", whose
    other reading, "berries" -> "berry", :func:`equivalent` also tries)."""
    word = word.lower()
    if word in {"glass", "grass", "this"}:
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-1]
    return singular(word)


@functools.lru_cache(maxsize=16384)
def _forms(word: str) -> frozenset[str]:
    word = word.lower()
    forms = {word, stem(word), singular(word)}
    if word.endswith("s") and len(word) > 3:
        forms.add(word[:-1])
    forms |= {f[:-2] + "y" for f in list(forms) if f.endswith("ie") and len(f) > 3}
    return frozenset(forms)


@functools.lru_cache(maxsize=65536)
def equivalent(a: str, b: str) -> bool:
    """The two words name the same thing (same singular, or synonyms).

    Kept per pair, like :func:`stem` and the forms: grounding compares every word of an
    instruction with every word of every label in the Brief, on every turn, and the
    vocabulary of a scene is small (the household planner tests take 0.72 of the CPU they
    took before these were kept)."""
    left, right = _forms(a), _forms(b)
    if left & right:
        return True
    return any(r in _CLASS.get(x, frozenset()) for x in left for r in right)


def implied_words(words: list[str]) -> set[str]:
    """The colours and materials ``words`` bring to mind besides themselves."""
    implied: set[str] = set()
    for word in words:
        implied.update(_IMPLIES.get(stem(word), ()))
    return implied


_SPELT_OUT = {
    "isn't": "is not",
    "aren't": "are not",
    "that's": "that is",
    "which's": "which is",
    "doesn't": "does not",
    "don't": "do not",
    "let's": "let us",
}
_CONTRACTIONS = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in _SPELT_OUT) + r")(?=\s|$)")


def normalise(text: str) -> str:
    """Lower case, curly quotes straight, contractions spelt out ("isn't" is "is not"),
    hyphens as spaces ("yellow-white mug" is "yellow white mug"), a sentence's end inside
    the text a clause's ("grab the milk. drop it in the basket"), "&" the word "and", a
    colon a comma (a pause), punctuation dropped but for the possessive ``'s`` and clause
    commas."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"[\"!?.]+$", "", text.strip())
    text = re.sub(r"(\w)-(\w)", r"\1 \2", text)  # "yellow-white mug"
    text = re.sub(r"[!?.]+\s+(?=[a-z])", "; ", text)  # "grab the milk. drop it in ...": two
    text = re.sub(r"\s*&\s*", " and ", text)  # "pick up the juice & place it ..."
    text = re.sub(r"\s*:\s*", ", ", text)  # "the bowl on the box: move it ...": a pause
    text = re.sub(r"[^a-z0-9' ,;]+", " ", text)
    text = _CONTRACTIONS.sub(lambda m: _SPELT_OUT[m.group(0)], text)
    return re.sub(r"\s+", " ", text).strip()


BARE_SIDE = re.compile(r"(?:the\s+)?(?:left|right)(?:(?:\s+|-)hand)?(?:\s+side)?")
"""A side alone ("the left", "the right-hand side"): after a noun, the noun's side."""
BARE_POSITION = re.compile(
    r"(?:the\s+)?(?:very\s+)?(?:front|back|rear|middle|center|centre)(?:\s+(?:row|one))?"
)
"""A position alone ("the back", "the middle"): after a noun and its destination, the
noun's position among its like ("on the black bowl in the middle")."""
_SIDE_AFTER = re.compile(
    r"^(?P<article>(?:the|a|an)\s+)?(?P<head>.+?)"
    r"(?:\s+(?:that|which)\s+(?:is|are|sits|stands))?\s+(?:on|at|to|towards?)\s+(?:the\s+)?"
    r"(?P<side>left|right)(?:\s+hand)?(?:\s+side)?$"
)
_POSITION_AFTER = re.compile(
    r"^(?P<article>(?:the|a|an)\s+)?(?P<head>.+?)"
    r"(?:\s+(?:that|which)\s+(?:is|are|sits|stands|lies))?\s+(?:at|in|towards?)\s+"
    r"(?:the\s+)?(?:very\s+)?(?P<side>front|back|rear|middle|center|centre)(?:\s+row)?$"
)


def side_first(text: str) -> str:
    """A noun phrase with its side or position put first: "the plate on the left", "the
    mug that is at the right-hand side", "the left-hand plate", "the butter at the back",
    "the book in the middle" become "the left plate", "the right mug", "the left plate",
    "the back butter", "the middle book" (the planner reads a leading direction as which
    of several alike, in its stated frame: :func:`harness.planner.positions.by_direction`).
    A position with an owner ("the bowl at the front of the stove") is a qualifier, not
    this: the pattern must end the phrase."""
    text = re.sub(r"\b(left|right)(?:\s+|-)hand\b", r"\1", text.strip())
    for pattern in (_SIDE_AFTER, _POSITION_AFTER):
        after = pattern.match(text)
        if after is not None and after["head"].split()[0] not in DIRECTIONS:
            return f"{after['article'] or ''}{after['side']} {after['head']}"
    return text
