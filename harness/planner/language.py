"""Manipulation goals in everyday English, parsed into a typed goal before any grounding.

The pick-and-place grammar (:mod:`harness.planner.grammar`) knows cubes and trays. Kitchens and
living rooms need more: articulated fixtures ("open the middle drawer of the cabinet"),
switches ("turn the stove on"), pushes ("slide the plate toward the front of the stove"),
two-part tasks ("put the bowl in the bottom drawer and close it", "put both the soup and the
butter in the basket") and objects named by where they are ("the black bowl between the
plate and the ramekin", "the bowl on the cookie box", "the left plate"). This module turns
such a sentence into :class:`Task` (steps of :class:`Step`, each naming objects by
:class:`Mention`) using only general English (:mod:`harness.planner.lexicon`); which
objects the mentions mean is decided later, from the Brief (:mod:`harness.planner.grounding`).
A sentence it cannot read gives a :class:`Task` with ``problem`` set, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import replace

from harness.planner.lexicon import (
    BARE_POSITION,
    BARE_SIDE,
    normalise,
)
from harness.planner.noun_phrases import FILLER, phrase
from harness.planner.phrasing import as_command, plain_request
from harness.planner.reference import POINTING_BACK, antecedent, named_before
from harness.planner.task_types import Action, Mention, Qualifier, Relation, Step, Task
from harness.planner.verbs import (
    CLOSE,
    NEUTRAL_MOVES,
    OFF,
    ON,
    OPEN,
    PICK,
    PLACE,
    PUSH,
    TURN,
    VERB,
    verb_of_gerund,
)

__all__ = ["Action", "Mention", "Qualifier", "Relation", "Step", "Task", "parse_task"]

# ====================================================================== vocabulary

_SPLIT = re.compile(
    rf"\s*(?:;|,\s*(?:and\s+)?(?:then\s+)?|\s+and\s+then\s+|\s+then\s+|\s+and\s+"
    rf"(?=(?:then\s+)?{VERB}\b))\s*"
)
_AFTER = re.compile(r"^(?P<main>.+?)\s+(?:after|once)\s+(?P<first>[a-z]+ing)\s+(?P<rest>.+)$")
_BEFORE = re.compile(r"^(?P<main>.+?)\s+before\s+(?P<then>[a-z]+ing)\s+(?P<rest>.+)$")
"""The request said before another it comes before: "put the bowl in the drawer before
closing it" is "put the bowl in the drawer; close it"."""

_DESTINATIONS: tuple[tuple[str, Relation | None], ...] = (
    (
        r"to the right(?: hand)?(?: side)? of|on the right(?: hand)?(?: side)? of|right of",
        "right_of",
    ),
    (r"to the left(?: hand)?(?: side)? of|on the left(?: hand)?(?: side)? of|left of", "left_of"),
    (r"in front of|to the front of|toward the front of|towards the front of", "front_of"),
    (r"behind|to the back of|in back of", "behind"),
    (r"underneath|beneath|below|under", "under"),
    (r"on top of|on the top of|onto the top of|on to|onto|upon|atop|on|above|over", "on"),
    (r"into|inside of|inside|within|in", "in"),
    (r"toward|towards|to", None),
)
_DESTINATION = re.compile(
    r"\b(?P<rel>" + "|".join(p for p, _ in _DESTINATIONS) + r")\b(?:\s+(?P<rest>.*))?$"
)
_SIDES: dict[str, Relation] = {
    "front": "front_of",
    "back": "behind",
    "left": "left_of",
    "right": "right_of",
}
_ON_TOP = re.compile(r"^(?:on top of|on the top of|onto the top of|atop|above|over)\b")
_PRONOUNS = frozenset({"it", "them", "there", "that", "this", "one"})


# ====================================================================== parsing


def parse_task(text: str) -> Task:
    """The :class:`Task` an instruction asks for (``problem`` set when it cannot be read).
    A question, a polite form, a wish or a statement of where things go asks for the same
    ("can you put ...?", "i'd like the bowl put ...", "the bowl goes ...": :mod:`phrasing`)."""
    cleaned = as_command(plain_request(normalise(text)))
    if not cleaned:
        return Task(problem="the instruction is empty")
    if not re.match(rf"^(?:please\s+)?(?:now\s+)?{VERB}\b", cleaned):
        return Task(problem=f"I cannot find what to do in {text.strip()!r} (no action verb first)")
    steps: list[Step] = []
    for raw in _clauses(cleaned):
        step = _clause(raw, steps)
        if isinstance(step, str):
            return Task(problem=step)
        steps = _merge(steps, step)
    if not steps:
        return Task(problem=f"I cannot find what to do in {text.strip()!r}")
    return Task(steps=tuple(steps))


def _clauses(text: str) -> list[str]:
    """Clauses in the order to do them ("put the bowl in the drawer after opening it" is
    "open it; put the bowl in the drawer")."""
    text = re.sub(r"^(?:please\s+)?(?:now\s+)?", "", text)
    parts = [p for p in _SPLIT.split(text) if p]
    ordered: list[str] = []
    for part in parts:
        if match := _AFTER.match(part):
            verb = verb_of_gerund(match["first"])
            if verb is not None:
                what = match["rest"]
                found = _destination(re.sub(rf"^{VERB}\s+", "", match["main"]))
                if what in _PRONOUNS and found is not None and found[2]:
                    what = found[2]  # "put the bowl in the drawer after opening it"
                ordered += [f"{verb} {what}", match["main"]]
                continue
        if (match := _BEFORE.match(part)) and (verb := verb_of_gerund(match["then"])):
            ordered += [match["main"], f"{verb} {match['rest']}"]
            continue
        ordered.extend(_elided(part))
    return ordered


def _elided(clause: str) -> list[str]:
    """ "place the mug on the left plate and the cup on the right one" is two places (the
    verb is said once): split at an "and" with a destination on both sides. "put the soup
    in the basket and the cheese" is two too: one container or support with a second thing
    after it, never a place in two containers at once."""
    verb = re.match(rf"^{VERB}\b", clause)
    if verb is None or verb.group(0) in {"open", "close", "shut", "turn", "switch"}:
        return [clause]
    for match in re.finditer(r"\s+and\s+", clause):
        left, right = clause[: match.start()], clause[match.end() :]
        left_found = _destination(left[verb.end() :].strip())
        right_found = _destination(right)
        if left_found and right_found and left_found[0] and right_found[0]:
            return [left, *_elided(f"{verb.group(0)} {right}")]
    if re.fullmatch(PLACE, verb.group(0)):
        for match in re.finditer(r"\s+and\s+(?=(?:the|a|an)\s)", clause):
            left, right = clause[: match.start()], clause[match.end() :]
            found = _destination(left[verb.end() :].strip())
            if found and found[0] and found[1] in ("in", "on") and _destination(right) is None:
                return [left, right]  # the thing after "and" goes there too (_verbless)
    return [clause]


def _clause(text: str, before: list[Step]) -> Step | str:
    words = [w for w in text.split() if w not in FILLER]
    text = " ".join(words)
    if match := re.match(rf"^{ON}\s+(?P<rest>.+)$", text):
        return _switch("turn_on", match["rest"], before)
    if match := re.match(rf"^{OFF}\s+(?P<rest>.+)$", text):
        return _switch("turn_off", match["rest"], before)
    if match := re.match(rf"^{TURN}\s+(?P<rest>.+?)\s+(?P<state>on|off)$", text):
        return _switch("turn_on" if match["state"] == "on" else "turn_off", match["rest"], before)
    if match := re.match(rf"^{CLOSE}(?:\s+(?P<rest>.+))?$", text):
        return _articulate("close", match["rest"] or "it", before)
    if match := re.match(rf"^{OPEN}(?:\s+(?P<rest>.+))?$", text):
        return _articulate("open", match["rest"] or "it", before)
    if match := re.match(rf"^{PUSH}\s+(?P<rest>.+)$", text):
        step = _place(match["rest"], before, verb="push")
        return step
    if match := re.match(rf"^{PICK}\s+(?P<rest>.+)$", text):
        return _pick(match["rest"], before)
    if match := re.match(rf"^(?P<verb>{PLACE})(?:\s+(?P<rest>.+))?$", text):
        verb = "move" if match["verb"] in NEUTRAL_MOVES else "place"
        return _place(match["rest"] or "", before, verb=verb)
    if before and before[-1].action in ("place", "push") and re.match(r"(?:the|a|an)\s", text):
        return _verbless(text, before)
    return f"I do not understand {text!r}"


def _verbless(text: str, before: list[Step]) -> Step | str:
    """ "..., then the cup onto the right plate", "..., and the butter": the last place's
    verb said once, and its destination too when none is said."""
    last = before[-1]
    step = _place(text, before, verb="push" if last.action == "push" else "place")
    if isinstance(step, Step) and step.relation is None and step.target == last.target:
        step = replace(step, relation=last.relation)
    return step


def _switch(action: Action, rest: str, before: list[Step]) -> Step | str:
    mention = _mention(rest, before, role="target")
    return mention if isinstance(mention, str) else Step(action=action, subject=mention)


def _articulate(action: Action, rest: str, before: list[Step]) -> Step | str:
    if rest.split()[0] in _PRONOUNS:  # "close it door" is "close it"
        rest = re.sub(r"\s+(?:door|lid)$", "", rest)
    elif re.fullmatch(r"(?:its|their)\s+(?:door|lid)", rest):  # "close its door"
        rest = "it"
    mention = _mention(rest, before, role="target")
    return mention if isinstance(mention, str) else Step(action=action, subject=mention)


def _pick(rest: str, before: list[Step]) -> Step | str:
    """``pick X`` (a destination may follow: "take the bowl to the plate", "get the pudding
    into the basket": "to", "into" and "onto" say where it goes, "on" may say which it is)."""
    found = _destination(rest)
    if found is not None and (
        found[1] is None or re.search(rf"\b(?:into|onto)\s+{re.escape(found[2])}$", rest)
    ):
        return _place(rest, before, verb="place")
    mention = _mention(rest, before, role="subject")
    return mention if isinstance(mention, str) else Step(action="pick", subject=mention)


def _place(rest: str, before: list[Step], *, verb: str) -> Step | str:
    rest = re.sub(r"\s+(?:there|here)$", "", rest)
    found = _destination(rest)
    if found is None:  # "turn the stove on and place the moka pot": where is left to context
        subject = _mention(rest, before, role="subject") if rest else antecedent(before, "subject")
        if isinstance(subject, str):
            return subject
        target = antecedent(before, "target")
        if isinstance(target, str):
            return f"I do not know where to {verb} {subject.text()}"
        return Step(action=_action(verb, None), subject=subject, target=target)
    subject_text, relation, target_text = found
    bare_side = re.sub(r"^(?:the|its)\s+", "", target_text)
    if target_text.startswith("its ") or (bare_side in _SIDES and relation is None):
        # "the pudding to its right", "... and the pudding to the right": of the last place
        target_text = f"its {bare_side}"
        owner = antecedent(before, "target")
        if isinstance(owner, str):
            return owner
        side = target_text.removeprefix("its ").strip()
        if side in _SIDES and relation in (None, "on", "in"):
            relation = _SIDES[side]
        elif side not in _SIDES:
            return f"I cannot tell what {target_text!r} means"
        target_text, relation = "", relation or _SIDES[side]
        subject = _mention(subject_text, before, role="subject")
        if isinstance(subject, str):
            return subject
        return Step(
            action=_action(verb, relation), subject=subject, target=owner, relation=relation
        )
    subject = (
        _mention(subject_text, before, role="subject")
        if subject_text
        else antecedent(before, "subject")
    )
    if isinstance(subject, str):
        return subject
    said = rest[len(subject_text) :].split()
    if not target_text and relation is not None and (said[-1:] != ["inside"] or said[-2:-1]):
        # "place it in the", "put the pan on": cut short ("put the bowl inside" is "in it")
        return f"the instruction stops before saying where to {verb} {subject.text()}"
    if not target_text or (target_text.split()[0] in _PRONOUNS and len(target_text.split()) == 1):
        target: Mention | str = antecedent(before, "target")
    else:
        target = _mention(target_text, before, role="target")
    if isinstance(target, str):
        return target
    if relation in (None, "on") and len(target.part) == 1 and target.part[0] in _SIDES:
        # "move the plate to the stove's front": in front of the stove
        relation, target = _SIDES[target.part[0]], replace(target, part=())
    elif relation == "on" and _ON_TOP.match(rest[len(subject_text) :].strip()):
        bare = not target.words and len(target.part) == 1  # "on top of the drawer"
        if target.part[-1:] == ("drawer",):  # "close the top drawer ... put X on top of it":
            # a shut drawer has no top of its own; "on top of" it is on top of its furniture
            target = replace(target, part=("top",), has=() if target.words else ("drawer",))
        elif not target.part or bare:  # "on top of the cabinet": its top side
            target = replace(target, part=("top",), has=target.part if bare else target.has)
    if verb == "push" and relation is None:
        relation = "front_of"  # "push the plate forward to the stove"
    return Step(action=_action(verb, relation), subject=subject, target=target, relation=relation)


def _action(verb: str, relation: Relation | None) -> Action:
    """A push for "push", and for a neutral "move" to a side of something ("move the plate
    to the stove's front": along the table to the marked area there, as a person slides a
    plate); a place (carried, set down) otherwise."""
    if verb == "push" or (verb == "move" and relation in _SIDES.values()):
        return "push"
    return "place"


def _destination(rest: str) -> tuple[str, Relation | None, str] | None:
    """(subject text, relation, target text) at the last destination preposition of
    ``rest`` that leaves a subject before it, or None."""
    best = None
    for match in re.finditer(
        r"(?:^|\s)(?P<rel>" + "|".join(p for p, _ in _DESTINATIONS) + r")(?=\s|$)", rest
    ):
        subject = rest[: match.start()].strip()
        tail = rest[match.end() :].strip()
        if subject.endswith(("between", "from", "next", "of")):
            continue
        if subject.split() and subject.split()[-1] in {"and", "not", "is"}:
            continue
        if best is not None and (BARE_SIDE.fullmatch(tail) or BARE_POSITION.fullmatch(tail)):
            continue  # "onto the plate on the left", "on the bowl in the middle": the plate's
        best = (subject, _relation(match["rel"]), tail)
    if best is None:
        if rest.split() and rest.split()[-1] in {"in", "inside", "there", "on"}:
            return None
        return None
    if best[0].split()[-1:] in (["from"], ["between"]):
        return None
    return best


def _relation(word: str) -> Relation | None:
    for pattern, relation in _DESTINATIONS:
        if re.fullmatch(pattern, word):
            return relation
    return None


def _mention(text: str, before: list[Step], *, role: str) -> Mention | str:
    text = text.strip()
    words = text.split()
    if not words:
        return "an object is missing from the instruction"
    if len(words) == 1 and words[0] in _PRONOUNS:
        return antecedent(before, role, words[0])
    mention = phrase(text)
    if isinstance(mention, str):
        return mention
    if words[0] in POINTING_BACK and (earlier := named_before(mention, before)) is not None:
        return earlier  # "put the bowl in the bottom drawer, then close the/that drawer"
    if mention.words == ("one",):  # "the right one": one like the last thing named
        like = antecedent(before, role)
        if isinstance(like, str):
            return like
        mention = replace(mention, words=like.words)
    return mention


def _merge(steps: list[Step], step: Step) -> list[Step]:
    """ "pick X" followed by "place it on Y" is one place of X on Y."""
    if (
        steps
        and steps[-1].action == "pick"
        and step.action in ("place", "push")
        and step.subject == steps[-1].subject
    ):
        return [*steps[:-1], step]
    return [*steps, step]
