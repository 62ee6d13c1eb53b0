"""Noun phrases of an instruction ("the black bowl between the plate and the ramekin",
"both the soup and the butter", "the top drawer of the cabinet") read into :class:`Mention`.

:mod:`harness.planner.language` splits a sentence into clauses and finds each clause's verb
and destination; what is left of a clause names things, and this module reads those names:
articles and counts, an ordinal ("the left plate"), a part and its owner, and qualifiers
saying where the thing is, negated or not ("the bowl not between ..."). Which objects a
mention means is decided later, from the Brief (:mod:`harness.planner.grounding`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from harness.planner.lexicon import ARTICLES, DIRECTION_ALIASES, DIRECTIONS, PARTS, side_first, stem
from harness.planner.task_types import Mention, Near, Qualifier

__all__ = ["FILLER", "content_words", "phrase"]

_QUALIFIERS: tuple[tuple[str, Near], ...] = (
    (r"between", "between"),
    (r"next to|beside|near|by|close to|adjacent to|alongside", "near"),
    (r"resting on|sitting on|placed on|lying on|on top of|on the top of|on|atop|off", "on"),
    (r"inside of|inside|in|within", "in"),
    (r"from|out of", "from"),
    (r"at", "at"),
)
_NEGATION = (
    r"(?:(?:that|which)\s+(?:is|are)\s+not|not|other\s+than|except(?:\s+for)?|but\s+not)\s+"
    r"(?:(?:the\s+)?ones?\s+)?"
)
"""A qualifier's negation: "not between", "that is not next to", "other than the one on",
"except the one in" (contractions are spelt out first: :func:`lexicon.normalise`)."""
_POSTURE = (
    r"(?:sits?|sitting|stands?|standing|rests?|resting|lies|lie|lying|located|placed|found|kept)"
)
"""How a thing is where it is ("the bowl that sits between ...", "the bowl standing next to
...", "the bowl which is located on ..."): said or not, the qualifier is the same."""
_QUALIFIER = re.compile(
    rf"\s+(?P<neg>{_NEGATION})?(?:(?:that|which)\s+(?:is\s+|are\s+)?)?(?:{_POSTURE}\s+)?"
    r"(?P<rel>" + "|".join(p for p, _ in _QUALIFIERS) + r")\s+(?P<rest>.+)$"
)
_ON_TOP_OF = re.compile(r"^(?:on top of|on the top of|atop)$")
"""A qualifier naming the top of its anchor ("the bowl on top of the cabinet": on the
cabinet's top, not in its drawer)."""
FILLER = frozenset({"down", "up", "away", "carefully", "gently", "please", "forward"})
_NUMBERS = {"two": 2, "both": 2, "three": 3}
_EVERY = frozenset({"all", "each", "every"})


_UNENDING = frozenset(
    {"the", "a", "an", "and", "or", "but", "of", "in", "into", "on", "onto", "to", "from", "with"}
    | {"at", "by", "between"}
)
"""Words no name ends with: an article, a conjunction or a preposition last says the words
were cut short or shuffled ("the cream the in cheese place basket and", a benchmark's
shuffle of "pick the cream cheese and place it in the basket"), never which thing is meant."""


def phrase(text: str) -> Mention | str:
    """A noun phrase with its qualifiers and parts (see :class:`Mention`)."""
    text = re.sub(r"^(both|two|three|all|each|every)\s+of\s+(?:the\s+)?", r"\1 ", text.strip())
    if (cut := _cut_short(text)) is not None:
        return cut
    text = side_first(text)  # "the plate on the left": "the left plate"
    qualifiers: list[Qualifier] = []
    match = _QUALIFIER.search(" " + text)
    head = text
    if match is not None:
        head = (" " + text)[: match.start()].strip()
        relation = _near(match["rel"])
        rest = match["rest"]
        anchors_text = re.split(r"\s+(?:and|&)\s+", rest) if relation == "between" else [rest]
        if relation == "from" and rest.startswith("between "):
            relation = "between"
            anchors_text = re.split(r"\s+(?:and|&)\s+", rest.removeprefix("between "))
        anchors = []
        for anchor_text in anchors_text:
            anchor = phrase(anchor_text)
            if isinstance(anchor, str):
                return anchor
            if _ON_TOP_OF.match(match["rel"]) and anchor.words and not anchor.part:
                anchor = replace(anchor, part=("top",))  # its top side, or itself
            anchors.append(anchor)
        if relation == "between" and len(anchors) != 2:
            return f"'between' needs two things, got {rest!r}"
        qualifiers.append(Qualifier(relation, tuple(anchors), negated=bool(match["neg"])))
    if not head:
        return f"I cannot tell which object {text!r} names"
    if (cut := _cut_short(head)) is not None:
        return cut
    if re.search(r"\s(?:and|with|&)\s", f" {head} "):
        parts = [p for p in re.split(r"\s+(?:and|with|&)\s+", head) if p]
        both = head.startswith("both ")
        conjuncts = []
        for part in parts:
            if (stray := _stray_article(part)) is not None:
                return stray
            one = _noun(re.sub(r"^both\s+", "", part))
            if isinstance(one, str):
                return one
            conjuncts.append(one)
        whole = _noun(re.sub(r"\s+(?:and|with|&)\s+", " ", head))
        base = whole if not isinstance(whole, str) else conjuncts[-1]
        return replace(base, conjuncts=tuple(conjuncts), qualifiers=tuple(qualifiers), both=both)
    noun = _stray_article(head) or _noun(head)
    if isinstance(noun, str):
        return noun
    return replace(noun, qualifiers=tuple(qualifiers))


def _cut_short(text: str) -> str | None:
    """Why ``text`` names nothing when it ends with a word no name ends with, else None."""
    words = text.split()
    if words and words[-1] in _UNENDING:
        return f"I cannot tell which object {text!r} names: it ends with {words[-1]!r}"
    return None


def _stray_article(text: str) -> str | None:
    """Why ``text`` names nothing when an article stands inside one of its nouns ("the box
    the ketchup", "the the butter": a shuffle's words, not a name), else None. A noun's
    own article comes first, after a count ("both the soup"); "of" and "'s" start another
    noun ("the top drawer of the cabinet")."""
    for noun in re.split(r"\s+of\s+|'s\s+", text):
        words = noun.split()
        while words and (words[0] in _NUMBERS or words[0] in _EVERY):
            words.pop(0)
        if any(w in {"the", "a", "an"} for w in words[1:]):
            return f"I cannot tell which object {text!r} names"
    return None


def _near(word: str) -> Near:
    for pattern, relation in _QUALIFIERS:
        if re.fullmatch(pattern, word):
            return relation
    return "near"


def _noun(text: str) -> Mention | str:
    """A bare noun phrase: articles, counts, an ordinal, a part ("the X's top drawer",
    "the top drawer of the X", "the X top")."""
    text = text.strip()
    owner_text = ""
    if " of " in f" {text} ":
        part_text, _, owner_text = text.partition(" of ")
        if part_text in {"the center", "the centre", "the middle", "center", "middle"}:
            part_text = "the center"
    elif "'s " in text:
        owner_text, _, part_text = text.partition("'s ")
    else:
        part_text = ""
    if owner_text:
        owner = _noun(owner_text)
        if isinstance(owner, str):
            return owner
        part_words = content_words(part_text)
        if not part_words:
            return f"I cannot tell which part of {owner_text!r} is meant"
        part_words, owner = _part_of(part_words, owner)
        return replace(owner, part=tuple(part_words))
    words = content_words(text)
    count = 1
    both = False
    while words and words[0] in _NUMBERS:
        both = words[0] == "both"
        count = _NUMBERS[words.pop(0)]
    every = bool(words) and words[0] in _EVERY
    if every:
        words.pop(0)
    if not words:
        return f"I cannot tell which object {text!r} names"
    if (
        len(words) > 1
        and words[-1] in PARTS | {"center", "centre", "middle"}
        and not (len(words) == 2 and words[0] in DIRECTIONS)
    ):
        # "the cabinet top", "the cabinet top drawer", "table center"
        tail = [words.pop()]
        if words and words[-1] in DIRECTIONS and tail[0] in PARTS:
            tail.insert(0, words.pop())
        part, owner = _part_of(tail, Mention(words=tuple(stem(w) for w in words)))
        return replace(owner, part=tuple(part), count=count, both=both, every=every)
    ordinal = None
    if len(words) > 1 and words[0] in DIRECTIONS:
        ordinal = words.pop(0)
    if words[-1] in PARTS and words[-1] not in {"top", "front", "back", "side"}:
        # "the top drawer", "the middle layer": a part of whatever has it
        return Mention(part=(*([ordinal] if ordinal else []), stem(words[-1])), count=count)
    if count > 1 and words[-1].endswith("s"):
        words[-1] = stem(words[-1])
    return Mention(
        words=tuple(stem(w) for w in words), ordinal=ordinal, count=count, both=both, every=every
    )


def _part_of(part: list[str], owner: Mention) -> tuple[list[str], Mention]:
    """A part whose "owner" is itself a part noun ("the top of the drawer", "the middle
    layer of the drawer") belongs to whatever has drawers."""
    part = [stem(w) if w not in DIRECTIONS else w for w in part]
    named = owner.words[-1:] if owner.words and not owner.part else owner.part[-1:]
    if named and named[0] in {"drawer", "layer", "shelf"} and not (owner.words and owner.part):
        owner = replace(owner, words=(), part=(), has=("drawer",))
        if part[-1] in {"layer", "drawer"}:
            part = [*part[:-1], "drawer"]
    if part and part[-1] == "layer":
        part = [*part[:-1], "drawer"]
    return part, owner


def content_words(text: str) -> list[str]:
    words = [w for w in text.split() if w not in ARTICLES and w not in FILLER]
    return [DIRECTION_ALIASES.get(w, w) for w in words]
