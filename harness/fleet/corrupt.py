"""Corrupted instructions: seeded damage that leaves no goal a robot should act on.

An evaluation of refusals needs instructions that cannot be carried out *correctly*:
each corruption removes or garbles the part that says what to move or where, so the only
right answer is to decline (an instruction that is merely reworded is a rephrasing, not a
corruption; a benchmark's rephrased-language suites are those). Kinds, chosen by the seed:

- ``nonsense_object``: the thing to move becomes a made-up word ("pick the vorblat and
  place it in the basket");
- ``nonsense_target``: the destination does ("... place it in the glimmick");
- ``truncated``: the sentence stops before its destination ("pick the butter and place
  it in the");
- ``shuffled``: the words in a random order, the verb not first;
- ``no_verb``: only the noun phrases are left ("the butter the basket").
"""

from __future__ import annotations

import random
import re

__all__ = ["KINDS", "corrupt"]

KINDS = ("nonsense_object", "nonsense_target", "truncated", "shuffled", "no_verb")
_SYLLABLES = ("vor", "blat", "glim", "mick", "zun", "trel", "quax", "fip", "dro", "snel")
_PLACE = re.compile(r"\s(?:in|into|on|onto|inside|to)\s(?:the\s)?", re.IGNORECASE)
_VERBS = re.compile(
    r"\b(?:pick up|pick|place|put|open|close|shut|turn on|turn off|turn|switch on|switch off|"
    r"switch|ignite|push|slide|lift|take|grab|set|move|insert|add|drop|pull)\b",
    re.IGNORECASE,
)


def _nonsense(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(2))


def corrupt(instruction: str, *, seed: int, kind: str | None = None) -> str:
    """``instruction`` damaged by ``kind`` (default: the seed's kind, see module docstring)."""
    rng = random.Random(seed)
    kind = kind or KINDS[seed % len(KINDS)]
    words = instruction.split()
    if kind == "nonsense_object":
        places = [m for m in re.finditer(r"\bthe\s+(\S+)", instruction)]
        if places:
            first = places[0]
            end = _noun_end(instruction, first.start(1))
            return instruction[: first.start(1)] + _nonsense(rng) + instruction[end:]
        kind = "shuffled"
    if kind == "nonsense_target":
        matches = list(_PLACE.finditer(instruction))
        if matches:
            return instruction[: matches[-1].end()] + _nonsense(rng)
        kind = "shuffled"
    if kind == "truncated":
        matches = list(_PLACE.finditer(instruction))
        if matches:
            return instruction[: matches[-1].end()].rstrip()
        kind = "no_verb"
    if kind == "no_verb":  # the noun phrases only: from the first article on, no verbs
        start = re.search(r"\b(?:the|a)\b", instruction, re.IGNORECASE)
        left = instruction[start.start() :] if start else " ".join(words[1:])
        left = _VERBS.sub(" ", left)
        left = re.sub(r"\b(?:and|it|up|then|on|off)\b(?=\s+(?:the\b|$))", " ", left)
        return re.sub(r"\s+", " ", left).strip()
    shuffled = words[:]
    for _ in range(20):
        rng.shuffle(shuffled)
        if not _VERBS.match(shuffled[0]) and shuffled != words:
            break
    return " ".join(shuffled)


def _noun_end(text: str, start: int) -> int:
    """Where the noun phrase starting at ``start`` ends (before "and", a preposition, or
    the end)."""
    stop = re.compile(
        r"\s(?:and|in|into|on|onto|from|next|between|to|inside|at|beside|near)\b", re.I
    )
    found = stop.search(text, start)
    return found.start() if found else len(text)
