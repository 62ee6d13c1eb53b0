"""The offline planner's instruction grammar.

Sentences it understands (case-insensitive; clauses may be chained with "then", "and
then", "and", ";" or ","):

    put|place|move|drop  [the] OBJECT  in|into|inside|on|onto  [the] TARGET
    pick up|lift|grab    [the] OBJECT  [up]              (grasp it and hold it up)
    stack                [the] OBJECT  on|onto [top of]          [the] TARGET
    put|place|move  all [the] [COLOUR] cubes|objects  in|into|on  [the] TARGET
    put|place|move  everything  in|into|on  [the] TARGET
    clear the table                       (every loose object on the table into the tray)
    find|locate|search for  [the] OBJECT  and put|place|move it  in|into|on  [the] TARGET

OBJECT and TARGET are a scene ref (``red_cube_1``, ``tray_1``) or a description:
``[COLOUR] cube``, ``tray``, ``box``, ``bin``, ``basket``, ``table``. Revisions use the
same grammar; "also ..." adds to the goal, "stop", "cancel" or "never mind" ends the
task. A search goal ("find the yellow cube and report ...", what a sub-agent is given)
names its OBJECT the same way (:func:`search_phrase`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["GRAMMAR_HELP", "Clause", "Goal", "Phrase", "parse_instruction", "search_phrase"]

GRAMMAR_HELP = (
    'I understand: "put the red cube in the tray", "stack the blue cube on the green cube", '
    '"pick up the red cube", '
    '"put all cubes in the tray", "put everything in the tray", "clear the table" (clauses '
    'can be chained with "then").'
)


@dataclass(frozen=True)
class Phrase:
    """A description of objects: a ref, or colour + kind, possibly "all"."""

    ref: str | None = None
    color: str | None = None
    kind: str | None = None
    every: bool = False

    def text(self) -> str:
        if self.ref:
            return self.ref
        words = [w for w in ("all" if self.every else "the", self.color, self.kind) if w]
        return " ".join(words) + ("s" if self.every and self.kind else "")


@dataclass(frozen=True)
class Clause:
    """Move what ``subject`` describes ``relation`` what ``target`` describes."""

    subject: Phrase
    target: Phrase
    relation: Literal["in", "on", "held"] | None
    """None: "in" for containers, "on" otherwise; "held": picked up and held (the target
    is then the gripper)."""
    clear_table: bool = False


@dataclass(frozen=True)
class Goal:
    clauses: tuple[Clause, ...] = ()
    stop: bool = False
    also: bool = False
    problem: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.clauses) or self.stop


_VERB = r"(?:please\s+)?(?:put|place|move|drop|set|stack|transfer)"
_THE = r"(?:the\s+|a\s+)?"
_REF = r"[a-z]+(?:_[a-z0-9]+)+"
_KINDS = {
    "cube": "cube",
    "cubes": "cube",
    "block": "cube",
    "blocks": "cube",
    "tray": "tray",
    "trays": "tray",
    "box": "box",
    "boxes": "box",
    "bin": "bin",
    "basket": "basket",
    "table": "table",
    "object": None,
    "objects": None,
    "thing": None,
    "things": None,
    "everything": None,
}
_RELATION = {"in": "in", "into": "in", "inside": "in", "on": "on", "onto": "on"}
_SEARCH = r"(?:please\s+)?(?:find|locate|search\s+for|look\s+for)"
_FIND_THEN = re.compile(
    rf"^{_SEARCH}\s+(?P<object>.+?)\s+and\s+(?:then\s+)?(?P<verb>{_VERB})\s+(?:it|them)\s+"
    r"(?P<rest>.+)$"
)
_PICK_UP = re.compile(
    r"^(?:please\s+)?(?:pick\s+up|pick|lift|grab|grasp)\s+(?P<subject>.+?)(?:\s+up)?$"
)
_FIND = re.compile(rf"^{_SEARCH}\s+(?P<object>.+?)(?:\s+and\s+.*|\s*[;,:].*)?$")
_CLAUSE = re.compile(
    rf"^(?P<verb>{_VERB})\s+(?P<subject>.+?)\s+(?P<relation>into|inside|in|onto|on)"
    rf"(?:\s+top\s+of)?\s+(?P<target>.+)$"
)


def parse_instruction(text: str) -> Goal:
    """Parse an instruction (or a revision) into a :class:`Goal`."""
    cleaned = text.strip().lower().rstrip(".!")
    cleaned = re.sub(r"\s+", " ", cleaned)
    if re.fullmatch(r"(?:please )?(?:stop|cancel|abort|never ?mind)(?: .*)?", cleaned):
        return Goal(stop=True)
    also = False
    if cleaned.startswith("also "):
        also, cleaned = True, cleaned[5:]
    if found := _FIND_THEN.match(cleaned):  # "find X and put it in Y" is "put X in Y"
        cleaned = f"{found['verb']} {found['object']} {found['rest']}"
    parts = re.split(
        r"\s*(?:;|,?\s+and then\s+|,?\s+then\s+|,\s+|\s+and\s+(?=" + _VERB + r"\b))\s*", cleaned
    )
    clauses: list[Clause] = []
    for part in parts:
        if not part:
            continue
        clause = _clause(part)
        if clause is None:
            return Goal(problem=f"I do not understand {part!r}. {GRAMMAR_HELP}")
        clauses.append(clause)
    if not clauses:
        return Goal(problem=f"Empty instruction. {GRAMMAR_HELP}")
    return Goal(clauses=tuple(clauses), also=also)


def _clause(text: str) -> Clause | None:
    if re.fullmatch(r"(?:please )?(?:clear|tidy|clean)(?: up)? (?:off )?the table", text):
        return Clause(
            subject=Phrase(every=True), target=Phrase(kind="tray"), relation="in", clear_table=True
        )
    match = _CLAUSE.match(text)
    if match is None:
        picked = _PICK_UP.match(text)
        subject = _phrase(picked.group("subject")) if picked else None
        if subject is None:
            return None
        return Clause(subject=subject, target=Phrase(kind="gripper"), relation="held")
    subject = _phrase(match.group("subject"))
    target = _phrase(match.group("target"))
    if subject is None or target is None or target.every:
        return None
    relation = _RELATION[match.group("relation")]
    if match.group("verb").endswith("stack"):
        relation = "on"
    return Clause(subject=subject, target=target, relation=relation)  # type: ignore[arg-type]


def _phrase(text: str) -> Phrase | None:
    text = text.strip()
    if re.fullmatch(_REF, text):
        return Phrase(ref=text)
    every = False
    if match := re.match(r"^(?:all(?: of)?|every|each)\s+(?:the\s+)?", text):
        every, text = True, text[match.end() :]
    elif text == "everything":
        return Phrase(every=True)
    text = re.sub(rf"^{_THE}", "", text)
    words = text.split()
    if not words or words[-1] not in _KINDS:
        return None
    kind = _KINDS[words[-1]]
    color = words[0] if len(words) == 2 else None
    if len(words) > 2:
        return None
    if words[-1].endswith("s") and words[-1] not in {"tray", "box"} and kind is not None:
        every = True
    if kind is None:
        every = True
    return Phrase(color=color, kind=kind, every=every)


def search_phrase(text: str) -> Phrase | None:
    """What a search goal looks for: "find the yellow cube and report its pose" -> the
    yellow cube; None when the text is not a search."""
    cleaned = re.sub(r"\s+", " ", text.strip().lower().rstrip(".!"))
    found = _FIND.match(cleaned)
    return _phrase(found["object"]) if found else None
