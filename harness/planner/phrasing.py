"""Requests said politely or not as commands, said again as the plain command they ask for.

A question or a courtesy asks for what the plain sentence asks for: "could you please put
the bowl on the plate?" is "put the bowl on the plate" (:func:`plain_request`).

People do not always start with a verb. "I'd like the bowl moved onto the plate" is a wish,
"the tomato sauce goes in the basket" a statement of where a thing belongs, "the drawer
should be closed" a passive with a modal; each asks for exactly what "move the bowl onto the
plate", "put the tomato sauce in the basket" and "close the drawer" ask for. The parser
(:mod:`harness.planner.language`) reads commands, so these forms are turned into one first,
keeping every word of the object and the destination. Only the sentence's shape changes:
which objects the words mean is still decided from the Brief, and a sentence of none of these
shapes is left as it was (the parser then says it found no verb).
"""

from __future__ import annotations

import re

__all__ = ["as_command", "plain_request"]

_PARTICIPLES = {
    "moved": "move",
    "put": "put",
    "placed": "place",
    "set": "set",
    "dropped": "drop",
    "brought": "bring",
    "carried": "carry",
    "stacked": "stack",
    "returned": "return",
    "inserted": "insert",
    "stored": "store",
    "opened": "open",
    "closed": "close",
    "shut": "shut",
    "pushed": "push",
    "slid": "slide",
    "turned": "turn",
    "switched": "switch",
    "picked up": "pick up",
    "lifted": "lift",
}
"""A past participle and the verb it is of ("moved" is "move")."""
_PARTICIPLE = "|".join(sorted((re.escape(p) for p in _PARTICIPLES), key=len, reverse=True))
_NOUN_PHRASE = r"(?P<what>(?:the|a|an|both|all|every|each)\s.+?)"
"""The object said first: a determiner, then as few words as leave a verb after them."""
_WISH = re.compile(
    r"^(?:i\s+would|i'd|we\s+would|we'd)\s+(?:like|love|prefer)\s+"
    r"|^(?:i|we)\s+(?:want|need)\s+"
)
_AFTER_WISH = re.compile(rf"^{_NOUN_PHRASE}\s+(?P<verb>{_PARTICIPLE})\b\s*(?P<rest>.*)$")
_MODAL = r"(?:should|must|needs?\s+to|has\s+to|have\s+to|ought\s+to|is\s+to|are\s+to|can|will)"
_PASSIVE = re.compile(
    rf"^{_NOUN_PHRASE}\s+{_MODAL}\s+be\s+(?P<verb>{_PARTICIPLE})\b\s*(?P<rest>.*)$"
)
_BELONGS = re.compile(
    rf"^{_NOUN_PHRASE}\s+(?:(?:{_MODAL})\s+go|goes|go|belongs?)\s+"
    r"(?P<rest>(?:in|into|inside|on|onto|on top of|atop|upon|to|next to|beside|behind|"
    r"in front of)\b.*)$"
)


_POLITE = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|robot|now)\s*,?\s+)*"
    r"(?:(?:could|can|would|will)\s+you(?:\s+please|\s+kindly)?(?:\s+go\s+ahead\s+and)?"
    r"|please\s+(?:could|can|would|will)\s+you"
    r"|(?:i\s+would|i'd|i\s+should)\s+like\s+(?:you\s+)?to"
    r"|i\s+(?:want|need)\s+you\s+to|you\s+(?:should|need\s+to|must)"
    r"|(?:let's|let\s+us)|go\s+ahead\s+and|kindly|please)\s+"
)
_CALL = re.compile(r"^(?:(?:hey|hi|ok|okay|so|robot|now|please)\s*,?\s+)+")
"""Words that only call or soften before the request ("please, put ...", "okay, robot, ...")."""
_POLITE_TAIL = re.compile(r"(?:\s*,?\s+(?:please|for\s+me|if\s+you\s+can|thanks|thank\s+you))+$")


def plain_request(text: str) -> str:
    """A request without its courtesy: "could you please put the bowl on the plate?",
    "I'd like you to open the drawer, please" are "put the bowl on the plate", "open the
    drawer" (``text`` already normalised)."""
    previous = None
    while previous != text:
        previous = text
        text = _CALL.sub("", _POLITE.sub("", text).strip()).strip()
        text = _POLITE_TAIL.sub("", text).strip().rstrip(",").strip()
    return text


def as_command(text: str) -> str:
    """``text`` (normalised, courtesy already stripped) as a command: "i would like the
    bowl moved onto the plate" is "move the bowl onto the plate", "the sauce goes in the
    basket" is "put the sauce in the basket", "the stove needs to be turned on" is "turn
    the stove on"; any other sentence is returned unchanged."""
    wish = _WISH.match(text)
    if wish is not None:
        found = _AFTER_WISH.match(text[wish.end() :])
        return _command(found["verb"], found["what"], found["rest"]) if found else text
    if found := _PASSIVE.match(text):
        return _command(found["verb"], found["what"], found["rest"])
    if found := _BELONGS.match(text):
        return f"put {found['what']} {found['rest']}"
    return text


def _command(participle: str, what: str, rest: str) -> str:
    return " ".join(w for w in (_PARTICIPLES[participle], what, rest) if w)
