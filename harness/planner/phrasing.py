"""Requests said politely or not as commands, said again as the plain command they ask for.

A question or a courtesy asks for what the plain sentence asks for: "could you please put
the bowl on the plate?" is "put the bowl on the plate" (:func:`plain_request`).

People do not always start with a verb. "I'd like the bowl moved onto the plate" is a wish,
"the tomato sauce goes in the basket" a statement of where a thing belongs, "the drawer
should be closed" a passive with a modal; each asks for exactly what "move the bowl onto the
plate", "put the tomato sauce in the basket" and "close the drawer" ask for; "the plate
should get the bowl" names the receiver first and asks for "move the bowl to the plate". Two
such statements joined by "and" are two requests ("the mug goes on the left plate and the cup
goes on the right one"), and "too" or "as well" after a request adds nothing to it. Things
listed in order and then where they all go ("first the soup, then the cheese: both into the
basket") are one put each, in that order. The parser
(:mod:`harness.planner.language`) reads commands, so these forms are turned into one first,
keeping every word of the object and the destination. Only the sentence's shape changes:
which objects the words mean is still decided from the Brief, and a sentence of none of these
shapes is left as it was (the parser then says it found no verb).
"""

from __future__ import annotations

import re

from harness.planner.verbs import PLACE, VERB, verb_of_gerund

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
_WORDS = r"(?:(?!(?<!\bthat\s)(?<!\bwhich\s)\b(?:is|are|was|were)\b).)+?"
"""As few words as leave a verb after them, none a verb of being but in a relative clause
("the bowl that is next to the plate"): "the bowl is on the plate and the mug" is a
statement and a noun, never one thing to move."""
_NOUN_PHRASE = rf"(?P<what>(?:the|a|an|both|all|every|each)\s{_WORDS})"
"""The object said first: a determiner, then :data:`_WORDS`."""
_WISH = re.compile(
    r"^(?:i\s+would|i'd|we\s+would|we'd)\s+(?:like|love|prefer)\s+"
    r"|^(?:i|we)\s+(?:want|need)\s+"
)
_AFTER_WISH = re.compile(rf"^{_NOUN_PHRASE}\s+(?P<verb>{_PARTICIPLE})\b\s*(?P<rest>.*)$")
_MODAL = (
    r"(?:should|must|needs?\s+to|has\s+to|have\s+to|ought\s+to|is\s+to|are\s+to"
    r"|can|could|will|would)"
)
_PASSIVE = re.compile(
    rf"^{_NOUN_PHRASE}\s+{_MODAL}\s+be\s+(?P<verb>{_PARTICIPLE})\b\s*(?P<rest>.*)$"
)
_WHERE = (
    r"(?P<rest>(?:in|into|inside|on|onto|on top of|atop|upon|to|next to|beside|behind|"
    r"in front of)\b.*)"
)
"""Where a thing goes, as the put would say it."""
_BELONGS = re.compile(
    rf"^{_NOUN_PHRASE}\s+(?:(?:{_MODAL})\s+(?:go|end\s+up|be|sit|stand)|goes|go|belongs?)"
    rf"\s+{_WHERE}$"
)
"""Where a thing goes or should end up: "the sauce goes in the basket", "the bowl should
end up on the plate", "the bowl should be on the plate" (a modal asks; "the bowl is on the
plate" states)."""
_STATE = re.compile(rf"^{_NOUN_PHRASE}\s+{_MODAL}\s+be\s+(?P<state>on|off|open|closed|shut)$")
"""The state asked for: "the stove should be on" is "turn the stove on", "the drawer must be
closed" "close the drawer" (before :data:`_BELONGS`, which would read "on" as a place)."""
_STATE_VERBS = {"on": "turn {} on", "off": "turn {} off", "open": "open {}"}
_WISHED_WHERE = re.compile(rf"^{_NOUN_PHRASE}\s+{_WHERE}$")
"""A wish with where and no participle: "i want the dressing in the basket"."""
_QUESTION = re.compile(
    rf"^(?P<modal>can|could|would|will|should)\s+{_NOUN_PHRASE}\s+"
    rf"(?P<verb>go|end\s+up|be\s+(?:{_PARTICIPLE}))\s+(?P<tail>.*)$"
)
"""A question about the thing: "can the butter go into the basket", "could the bowl be
put on the plate" ask what "the butter can go ...", "the bowl could be put ..." ask."""
_QUANTIFIER_AFTER = re.compile(r"^(?P<what>.+?)\s+(?P<word>both|all)$")
"""The quantifier said after the things: "the soup and the cheese both go ..."."""
_RECEIVES = re.compile(
    rf"^(?P<where>(?:the|a|an)\s{_WORDS})\s+(?:{_MODAL}\s+(?:get|receive)|gets|receives)\s+"
    r"(?P<what>(?:the|a|an|both|all|every|each)\s.+)$"
)
"""The receiver said first: "the plate should get the bowl" (where it goes is left to the
receiver, as "move the bowl to the plate" leaves it)."""
_ENSURE = re.compile(
    rf"^(?:make\s+sure|ensure|see\s+to\s+it|be\s+sure)\s+(?:that\s+)?{_NOUN_PHRASE}\s+"
    r"(?P<how>is|are|ends?\s+up|goes|go)\s+(?P<rest>.+)$"
)
"""A wanted result: "make sure the ketchup is in the basket" asks what "the ketchup should
be in the basket" asks, "make sure the bowl ends up on the plate" what "the bowl should end
up on the plate" asks."""
_SO_THAT = re.compile(
    r"\s+so(?:\s+that)?\s+(?:it|they)\s+(?:is|are|ends?\s+up|sits?|stands?)\s+"
    rf"(?={_WHERE})"
)
"""Where the thing should end up said as a purpose: "push the plate so it is in front of
the stove" is "push the plate in front of the stove"."""
_ITEM = r"(?:the|a|an)\s(?:(?!\b(?:is|are|was|were|then)\b)[^,])+?"
"""One thing of a list: a determiner, then words up to the next comma or "then"."""
_LISTED = re.compile(
    rf"^(?P<items>(?:the|a|an)\s.+?)\s*,?\s+(?P<word>both|all|each)(?:\s+of\s+them)?\s+"
    rf"(?:(?:go|goes|belong)\s+)?{_WHERE}$"
)
"""Things listed in order, then where they all go: "first the soup, then the cheese: both
into the basket" (its colon a comma: :func:`lexicon.normalise`) is "put the soup into the
basket, then put the cheese into the basket". The quantifier is what makes it a list of
things going one place, never a statement of where one of them is."""
_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+)?(?:then\s+)?|\s+and\s+(?:then\s+)?|\s+then\s+")
"""Between two things of such a list: a comma, "and", "then", or any of them together."""
_FRONTED = re.compile(
    rf"^(?P<where>(?:on\s+top\s+of|onto|on|into|inside|in)\s+(?:the|a|an)\s{_WORDS})\s*,\s*"
    rf"(?P<verb>{PLACE})\s+(?P<what>(?:the|a|an|both|all|every|each)\s.+)$"
)
"""Where said first, and set off by a comma: "on the plate, place the bowl" is "place the
bowl on the plate". Without the comma the words could be a shuffle of a command's ("in the
bottle wine put the bowl", a benchmark's shuffle of "put the wine bottle in the bowl"),
which must be refused, never read as another command."""
_TOPIC = re.compile(
    rf"^{_NOUN_PHRASE}(?<!\band)(?<!\bthen)\s*,\s*(?P<verb>{VERB})\s+(?:it|them)\b\s*(?P<rest>.*)$"
)
"""The thing said first and pointed back to: "the bowl on the cookie box: move it onto the
plate" (its colon a comma) is "move the bowl on the cookie box onto the plate". The pause is
what makes it this shape: without it the words may be a shuffle of a command's ("the cream
pick it and place in the cheese basket", a benchmark's shuffle of "pick the cream cheese and
place it in the basket"), which must be refused, never read as another command."""
_ELLIPTIC = re.compile(rf"^{_NOUN_PHRASE}(?:\s*,\s*{_WHERE}|\s+(?P<toward>(?:into|onto)\b.*))$")
"""A thing and where it goes, the verb left out: "the cream cheese, into the basket" (a
comma, or a way into or onto: "the bowl on the plate" alone names a bowl)."""
_BEFORE_FIRST = re.compile(r"^before\s+(?P<then>[a-z]+ing\s+[^,;]+?)\s*[,;]\s*(?P<main>.+)$")
"""The later request said first: "before closing it, put the bowl in the drawer" is "put
the bowl in the drawer before closing it" (whose order the parser reads)."""
_NOUN_START = re.compile(r"^(?:the|a|an|both|all|every|each)\s")
_JOIN = re.compile(r"(?:\s*,\s*|\s+)(?:and\s+then|and|then)\s+")
_ADDITIVE = re.compile(r"\s+(?:too|as\s+well|also)(?=\s*(?:[,;]|$)|\s+(?:and|then)\s)")
_OVER_TO = re.compile(r"\s+over(?=\s+(?:to|onto|into)\b)")
"""The "over" of "move the bowl over to the plate": the way, not a place ("over the plate"
alone is on it)."""
_ALSO = re.compile(r"(?P<join>\band|\bthen|,)\s+also\s+")
"""A request's "too", "as well" or "also" ("and the sauce in the basket too", "and also
the sauce"): it says the request comes on top of another, which the clauses' order
already says."""


_POLITE = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|robot|now)\s*,?\s+)*"
    r"(?:(?:could|can|would|will)\s+you(?:\s+mind)?(?:\s+please|\s+kindly)?(?:\s+go\s+ahead\s+and)?"
    r"|please\s+(?:could|can|would|will)\s+you"
    r"|(?:i\s+would|i'd|i\s+should)\s+like\s+(?:you\s+)?to"
    r"|i\s+(?:want|need)\s+you\s+to|you\s+(?:should|need\s+to|must)"
    r"|do\s+you\s+mind"
    r"|(?:let's|let\s+us)|go\s+ahead\s+and|kindly|please)\s+"
)
_CALL = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|robot|now|please|first|first\s+of\s+all|just|simply|carefully"
    r"|gently|slowly|quickly|(?:(?:your|the|my|next)\s+)?(?:task|job|instruction|goal)"
    r"(?:\s+is(?:\s+to)?)?)\s*,?\s+)+"
)
"""Words that only call, soften, say how or label before the request ("please, put ...",
"okay, robot, ...", "carefully lift ...", "first open ...", "your task: put ..."): the
request is the same."""
_GERUND_FIRST = re.compile(r"^(?P<gerund>[a-z]+ing)\b")
"""A request said with its verb's "-ing" form, as after "would you mind": "putting the bowl
on the plate" asks what "put the bowl on the plate" asks."""
_POLITE_TAIL = re.compile(
    r"(?:\s*,?\s+(?:please|for\s+me|if\s+you\s+(?:can|could|would|will|please)"
    r"|(?:would|will|could|can)\s+you(?:\s+please)?|thanks|thank\s+you))+$"
)
"""Courtesy after the request: "..., please", "..., thanks", and a tag question ("put the
pudding in the basket, would you?": its question mark dropped by ``lexicon.normalise``)."""


def plain_request(text: str) -> str:
    """A request without its courtesy: "could you please put the bowl on the plate?",
    "I'd like you to open the drawer, please" are "put the bowl on the plate", "open the
    drawer" (``text`` already normalised)."""
    previous = None
    while previous != text:
        previous = text
        text = _CALL.sub("", _POLITE.sub("", text).strip()).strip()
        text = _POLITE_TAIL.sub("", text).strip().rstrip(",").strip()
        found = _GERUND_FIRST.match(text)
        if found and (verb := verb_of_gerund(found["gerund"])) is not None:
            text = verb + text[found.end() :]
    return text


def as_command(text: str) -> str:
    """``text`` (normalised, courtesy already stripped) as a command: "i would like the
    bowl moved onto the plate" is "move the bowl onto the plate", "the sauce goes in the
    basket" is "put the sauce in the basket", "the stove needs to be turned on" is "turn
    the stove on", "the plate should get the bowl" is "move the bowl to the plate"; each
    request of several joined by "and" or "then" is turned alone. A sentence of none of
    these shapes is returned unchanged."""
    text = _OVER_TO.sub("", _ALSO.sub(r"\g<join> ", _ADDITIVE.sub("", text)))
    text = _SO_THAT.sub(" ", text)
    if found := _BEFORE_FIRST.match(text):
        return f"{as_command(found['main'])} before {found['then']}"
    if (found := _LISTED.match(text)) and (items := _listed(found["items"])):
        if re.fullmatch(rf"{_ITEM}\s+and\s+{_ITEM}", found["items"]):  # no order said
            return f"put {_quantified(found['items'] + ' ' + found['word'])} {found['rest']}"
        return ", then ".join(f"put {item} {found['rest']}" for item in items)
    for join in _JOIN.finditer(text):
        if (split := _split_at(text, join)) is not None:
            before, rest = split
            return f"{as_command(before)}{join.group(0)}{as_command(rest)}"
    return _request(text) or _shorthand(text) or text


def _listed(text: str) -> list[str] | None:
    """The things of a list said in order ("the soup, the butter, then the milk"), or None
    when ``text`` is not two or more things, each said with its determiner."""
    items = _LIST_SEPARATOR.split(text)
    if len(items) < 2 or not all(re.fullmatch(_ITEM, item) for item in items):
        return None
    return items


def _split_at(text: str, join: re.Match[str]) -> tuple[str, str] | None:
    """``text`` cut at ``join`` when a request of a shape :func:`_request` turns starts
    after it and a whole request stands before it: a command, or one of those shapes.
    "both the soup and the cheese go in the basket" is one request: "both the soup"
    before its "and" is no request."""
    before, rest = text[: join.start()], text[join.end() :]
    if _request(_first_of(rest)) is None:
        return None
    if _NOUN_START.match(before) and _request(before) is None:
        return None
    return before, rest


def _first_of(text: str) -> str:
    """The first request of ``text``: up to the first join where :func:`_split_at` cuts
    (or the whole text)."""
    for join in _JOIN.finditer(text):
        if _split_at(text, join) is not None:
            return text[: join.start()]
    return text


def _request(text: str) -> str | None:
    """``text`` as a command when it is one request of a shape this module turns."""
    if found := _ENSURE.match(text):
        verb = "be" if found["how"] in {"is", "are"} else "end up"
        text = f"{found['what']} should {verb} {found['rest']}"
    if found := _QUESTION.match(text):
        text = f"{found['what']} {found['modal']} {found['verb']} {found['tail']}"
    wish = _WISH.match(text)
    if wish is not None:
        wished = text[wish.end() :]
        if found := _AFTER_WISH.match(wished):
            return _command(found["verb"], found["what"], found["rest"])
        found = _WISHED_WHERE.match(wished)
        return f"put {_quantified(found['what'])} {found['rest']}" if found else None
    if found := _STATE.match(text):
        return _STATE_VERBS.get(found["state"], "close {}").format(found["what"])
    if found := _PASSIVE.match(text):
        return _command(found["verb"], found["what"], found["rest"])
    if found := _BELONGS.match(text):
        return f"put {_quantified(found['what'])} {found['rest']}"
    if found := _RECEIVES.match(text):
        return f"move {found['what']} to {found['where']}"
    if found := _FRONTED.match(text):
        return f"{found['verb']} {found['what']} {found['where']}"
    return None


def _shorthand(text: str) -> str | None:
    """The whole of ``text`` as a command when it names the thing first and then what to
    do with it (:data:`_TOPIC`, :data:`_ELLIPTIC`). Only ever the whole sentence: after an
    "and" these shapes are part of a noun ("between the plate and the ramekin onto ...")."""
    if (found := _TOPIC.match(text)) and _verbless(found["what"]):
        return " ".join(w for w in (found["verb"], found["what"], found["rest"]) if w)
    if (found := _ELLIPTIC.match(text)) and _verbless(found["what"]):
        return f"put {found['what']} {found['rest'] or found['toward']}"
    return None


def _verbless(what: str) -> bool:
    """Whether ``what`` names things only: "the ramekin and put it" (of "... between the
    plate and the ramekin and put it onto the plate") is no thing said first."""
    return re.search(rf"\b{VERB}\b", what) is None


def _command(participle: str, what: str, rest: str) -> str:
    return " ".join(w for w in (_PARTICIPLES[participle], _quantified(what), rest) if w)


def _quantified(what: str) -> str:
    """``what`` with a quantifier said after the things said first, as a put says it."""
    found = _QUANTIFIER_AFTER.match(what)
    return f"{found['word']} {found['what']}" if found else what
