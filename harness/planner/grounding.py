"""Which things in the Brief an instruction's mentions mean.

A :class:`~harness.planner.language.Mention` is matched against the Brief's objects by the
words of their labels (:mod:`harness.planner.lexicon`: synonyms, package words, implied
colours) and, when several fit, by where they are: distances and the Brief's ``on`` /
``in`` relations decide "the bowl between the plate and the ramekin", "next to the cookie
box", "on the stove", "in the top drawer of the cabinet"; left and right are the viewer's
(:data:`VIEWER_LEFT`). Parts and areas ("the top drawer of the cabinet", "the front of the
stove", "the right of the plate") are the Brief's region entries: a ref that extends its
owner's ref, labelled "<part> of <owner>" or "table area <words>" ("floor area ...").

Grounding never guesses: a mention nothing fits, or that two things fit equally well, is a
:class:`Unresolved` with the reason, and the planner declines instead of moving.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from harness.planner.brief import BriefObject
from harness.planner.language import Mention, Qualifier
from harness.planner.lexicon import (
    COLOURS,
    DIRECTIONS,
    PACKAGE_WORDS,
    equivalent,
    implied_words,
    stem,
)
from harness.planner.positions import MARGIN_M, by_direction
from harness.planner.shelves import is_shelving, shelf_board, uncovered
from harness.planner.standins import (
    Unresolved,
    colour_compound,
    furniture,
    kind_of,
    note,
    stand_in,
)

__all__ = [
    "VIEWER_LEFT",
    "Scene",
    "Unresolved",
    "ground",
    "ground_part",
    "is_area",
    "is_region",
    "viewer_left",
]

VIEWER_LEFT = (0.0, -1.0)
"""The xy direction a person looking at the scene through the front camera calls "left",
when the profile does not say where that camera looks (:func:`viewer_left`): a camera in
front of the table facing the robot (x away from the robot) has its left at -y."""
_AREA = re.compile(r"^[a-z]+ area\b")
_CAMERA = re.compile(
    r"^Camera [a-z0-9_]+: at \((?P<at>[^)]*)\) looking at \((?P<to>[^)]*)\)", re.MULTILINE
)


def viewer_left(embodiment_text: str) -> tuple[float, float]:
    """ "Left" as seen through the first camera the embodiment profile lists (the scene
    as a person describes it from the picture); :data:`VIEWER_LEFT` without one."""
    found = _CAMERA.search(embodiment_text)
    if found is None:
        return VIEWER_LEFT
    try:
        at = [float(v) for v in found["at"].split(",")]
        to = [float(v) for v in found["to"].split(",")]
    except ValueError:
        return VIEWER_LEFT
    fx, fy = to[0] - at[0], to[1] - at[1]
    norm = math.hypot(fx, fy)
    if norm < 1e-6:  # looking straight down: no left of its own
        return VIEWER_LEFT
    return (-fy / norm, fx / norm)


RESTING_LIMIT_M = 0.10
"""How far (in the plane) something may be from what it is said to be on, in or at."""
NEAR_LIMIT_M = 0.35
"""How far (centre to centre, in the plane) the nearest of its kind may be from what it is
said to be next to; further, nothing is next to it. Measured over 700 published initial
states of "the bowl next to the plate / ramekin / cookie box" scenes: where the nearest bowl
is the one meant it lies at most 31.4 cm from the anchor (a 16 cm gap between a bowl and a
plate, in scenes whose objects were moved apart), and a limit of 30 cm refused 4 of them."""
BETWEEN_LIMIT_M = 0.10
"""How far something may be from the line between two things and still be between them."""


@dataclass
class Scene:
    """The Brief's objects, sorted into movable things, fixtures and regions."""

    items: dict[str, BriefObject]
    left: tuple[float, float] = VIEWER_LEFT
    """What the instruction's "left" means, as an xy direction (:func:`viewer_left`)."""
    answers: tuple[str, ...] = ()
    """The user's answers to the planner's questions, latest last: they settle a choice
    between things that fit a mention equally (:func:`settle`)."""
    notes: list[str] = field(default_factory=list)
    """Lines for the report: a thing taken for words it does not fit (:mod:`standins`)."""

    def regions_of(self, ref: str) -> list[BriefObject]:
        return [
            o for o in self.items.values() if o.ref.startswith(ref + "_") and is_region(o, self)
        ]

    def owner_of(self, region: BriefObject) -> BriefObject | None:
        owners = [o for o in self.items.values() if region.ref.startswith(o.ref + "_")]
        return max(owners, key=lambda o: len(o.ref)) if owners else None

    def things(self) -> list[BriefObject]:
        return [o for o in self.items.values() if not is_region(o, self)]

    def table_areas(self) -> list[BriefObject]:
        """Marked areas of the table or floor ("table area stove front")."""
        return [o for o in self.items.values() if is_area(o)]


def is_region(item: BriefObject, scene: Scene | None = None) -> bool:
    if any(tag == "kind=region" for tag in item.tags) or is_area(item):
        return True
    if " of " in f" {item.label} " and scene is not None:
        return any(item.ref.startswith(o.ref + "_") for o in scene.items.values() if o is not item)
    return False


def is_area(item: BriefObject) -> bool:
    """A marked area of a table or the floor ("table area stove front"; "cooking area of
    stove" is a part of the stove)."""
    return bool(_AREA.match(item.label)) and " of " not in f" {item.label} "


def is_movable(item: BriefObject) -> bool:
    if any(tag == "kind=object" for tag in item.tags):
        return True
    if any(tag in ("kind=fixture", "kind=region", "surface") for tag in item.tags):
        return False
    return item.kind not in {"table", "floor"}


# ====================================================================== words


def _label_words(item: BriefObject) -> list[str]:
    return item.label.lower().split()


def word_score(words: tuple[str, ...], item: BriefObject, *, strict: bool = False) -> float | None:
    """How well ``words`` describe ``item`` (None: they do not). Every word must be in
    the label (or a synonym, a colour the label implies, or a package word the label
    leaves out), the last word (the noun) among them, no colour the thing lacks; a
    modifier the label does not have ("akita") costs a point and may not outnumber the
    words that match; a colour the label has and the words do not say costs a little
    ("the white mug" is the porcelain one, not the white
    and yellow one)."""
    if not words:
        return None
    label = _label_words(item)
    implied = implied_words(label)
    matched = 0
    unknown = 0
    noun = kind_of(Mention(words=words))[0]
    for word in words:
        if any(equivalent(word, w) for w in label) or word in implied:
            matched += 1
        elif word in PACKAGE_WORDS or word.isdigit():
            continue
        elif word in COLOURS or word == noun:
            return None  # a colour the thing does not have, or another kind of thing
        elif strict:
            return None
        else:
            unknown += 1  # a make or a modifier the label leaves out ("akita")
    if not (any(equivalent(noun, w) for w in label) or noun in implied):
        return None
    if unknown and unknown >= matched:
        return None
    unsaid = [w for w in label if w in COLOURS and not any(equivalent(w, x) for x in words)]
    unsaid += [w for w in implied if w in COLOURS and w not in words and w not in label]
    extra = len([w for w in label if not any(equivalent(w, x) for x in words)])
    return matched - 0.5 * len(unsaid) - 1.0 * unknown - 0.01 * extra


# ====================================================================== grounding


def ground(mention: Mention, scene: Scene, *, movable: bool | None = None) -> list[str]:
    """The refs ``mention`` names (one, or ``count`` of them; two conjuncts give two).

    ``movable`` limits the candidates to things that can be picked (True) or to anything
    (None). Raises :class:`Unresolved` with the reason when it cannot decide."""
    if mention.conjuncts:
        try:  # "the yellow and white mug": one thing, if every word fits it
            whole = _ground_one(mention, scene, movable=movable, strict=True)
        except Unresolved:
            whole = None
        if whole is not None and not mention.both:
            return whole
        refs: list[str] = []
        compound = colour_compound(mention)  # "the yellow and white mug": one thing's words?
        try:  # two things ("the red and the white mug") only if each fits its words
            for conjunct in mention.conjuncts:
                found = _ground_one(conjunct, scene, movable=movable, strict=compound)
                refs.extend(r for r in found if r not in refs)
        except Unresolved:
            if not compound:
                raise
            return _ground_one(mention, scene, movable=movable)
        if len(refs) != len(mention.conjuncts):
            raise Unresolved(f"{mention.text()} does not name {len(mention.conjuncts)} things")
        return refs
    return _ground_one(mention, scene, movable=movable)


def _ground_one(
    mention: Mention, scene: Scene, *, movable: bool | None, strict: bool = False
) -> list[str]:
    if mention.part:
        return [ground_part(mention, scene).ref]
    pool = [o for o in scene.things() if movable is None or is_movable(o) == movable]
    scored = [
        (s, o) for o in pool if (s := word_score(mention.words, o, strict=strict)) is not None
    ]
    if not scored and not strict:  # the words fit nothing: a stand-in, a question or a refusal
        return stand_in(
            mention, pool, movable=movable, settle=lambda c: settle(c, scene), notes=scene.notes
        )
    if not scored:
        words = " ".join(mention.words)
        raise Unresolved(f"I see no {words} in the scene", missing=words)
    best = max(s for s, _ in scored)
    candidates = [o for s, o in scored if s >= best - 1e-9]
    for qualifier in mention.qualifiers:
        candidates = _qualify(candidates, qualifier, scene, mention)
    if mention.ordinal:
        candidates = by_direction(candidates, mention.ordinal, mention, scene.left)
    if len(candidates) == mention.count or (mention.every and candidates):
        return sorted(o.ref for o in candidates)
    if len(candidates) < mention.count:
        raise Unresolved(f"I see {len(candidates)} of the {mention.count} {mention.text()} named")
    chosen = settle(candidates, scene)
    if chosen is not None and mention.count == 1:
        return [chosen.ref]
    refs = ", ".join(sorted(o.ref for o in candidates))
    raise Unresolved(
        f"{mention.text()} could be any of {refs}; the instruction does not say which",
        candidates=tuple(sorted(o.ref for o in candidates)),
    )


def settle(candidates: list[BriefObject], scene: Scene) -> BriefObject | None:
    """The one candidate the user's latest answer that names exactly one picks: by its
    ref, by a direction word ("the left one": in the same frame as the instruction's), or
    by words of its label the others lack; None when no answer decides."""
    for answer in reversed(scene.answers):
        text = answer.lower()
        named = [c for c in candidates if c.ref in text]
        if len(named) == 1:
            return named[0]
        words = re.findall(r"[a-z]+", text)
        for direction in ("left", "right", "front", "back", "top", "bottom"):
            if direction in words:
                try:
                    return by_direction(candidates, direction, Mention(words=("one",)), scene.left)[
                        0
                    ]
                except Unresolved:
                    break
        own = [
            c
            for c in candidates
            if any(
                stem(w) in {stem(x) for x in _label_words(c)}
                and not all(stem(w) in {stem(x) for x in _label_words(o)} for o in candidates)
                for w in words
            )
        ]
        if len(own) == 1:
            return own[0]
    return None


def ground_part(mention: Mention, scene: Scene) -> BriefObject:
    """The region a part mention names ("the top drawer of the wooden cabinet", "the
    middle drawer": of whatever has one)."""
    owners = (
        [
            o
            for o in scene.things()
            if word_score(mention.words, o) is not None and not is_movable(o)
        ]
        + [o for o in scene.things() if word_score(mention.words, o) is not None and is_movable(o)]
        if mention.words
        else [
            o
            for o in scene.things()
            if (regions := scene.regions_of(o.ref))
            and all(any(h in r.label.split() for r in regions) for h in mention.has)
        ]
    )
    if mention.words and not owners:
        owners = furniture(mention, scene.things())  # "the cabinet": the only shelf unit
        if not owners:
            raise Unresolved(f"I see no {' '.join(mention.words)} in the scene")
        scene.notes.append(note(mention, owners, "storage furniture", answered=False))
    scored: list[tuple[float, BriefObject]] = []
    for owner in owners:
        for region in scene.regions_of(owner.ref):
            score = _part_score(mention.part, region)
            if score is not None:
                scored.append((score, region))
    if not scored:
        if mention.part == ("top",) and len(owners) == 1:
            return owners[0]  # "on top of the plate": the plate itself
        if mention.part == ("top",) and mention.words:
            # "on top of the black bowl in the middle": the one its words pick, itself
            return scene.items[ground(replace(mention, part=()), scene, movable=None)[0]]
        if len(mention.part) == 1 and not mention.words:
            # "on the shelf": no part of anything here, but a thing of that kind
            owners = [o for o in owners if is_shelving(o) and equivalent(o.kind, mention.part[0])]
        if len(mention.part) == 1 and len(owners) == 1 and is_shelving(owners[0]):
            # "the cabinet shelf", "the shelf of the bookcase": the unit's shelf board
            return shelf_board(owners[0], mention, scene)
        owner = " ".join(mention.words) or "anything here"
        raise Unresolved(f"I see no {' '.join(mention.part)} of {owner}")
    best = max(s for s, _ in scored)
    found = [r for s, r in scored if s >= best - 1e-9]
    if len(found) > 1 and mention.part[-1:] == ("top",):
        # "on top of the shelf": of a shelf unit's two surfaces called its top, the one
        # nothing of it covers (its roof), which a place lowered from above can reach,
        # rather than the board inside under that roof (:func:`uncovered`)
        found = uncovered(found, scene) or found
    if len(found) > 1:
        chosen = settle(found, scene)
        if chosen is not None:
            return chosen
        refs = ", ".join(sorted(r.ref for r in found))
        raise Unresolved(
            f"{mention.text()} could be any of {refs}",
            candidates=tuple(sorted(r.ref for r in found)),
        )
    return found[0]


def _part_score(part: tuple[str, ...], region: BriefObject) -> float | None:
    """How well the part words fit the region's own words (its label before " of ")."""
    label = region.label
    own = label.split(" of ")[0] if " of " in label else _AREA.sub("", label).strip()
    words = [stem(w) for w in own.split() if w not in {"inside", "area"}]
    if not words:
        words = ["inside"]
    matched = sum(1 for p in part if any(equivalent(p, w) for w in words))
    if matched < len(part):
        # a part's noun may be left out ("the top drawer" of a cabinet whose label says
        # "top drawer"; "compartment" for "slot"): every direction word must still match
        directions = [p for p in part if p in DIRECTIONS]
        if any(not any(equivalent(p, w) for w in words) for p in directions) or not directions:
            return None
    extra = len([w for w in words if not any(equivalent(w, p) for p in part)])
    return matched - 0.5 * extra


# ====================================================================== where things are


def _xy_distance(a: BriefObject, b: tuple[float, float, float]) -> float:
    return math.dist(a.position[:2], b[:2])


def _anchor_points(qualifier: Qualifier, scene: Scene) -> tuple[list[BriefObject], bool]:
    """(the things the qualifier is relative to, whether resting on one of them counts as
    fitting: not for "the center of the table", a point on what everything stands on)."""
    anchors: list[BriefObject] = []
    related = True
    for mention in qualifier.anchors:
        if mention.part and mention.part[-1] == "center" and not mention.part[:-1]:
            related = False  # "the center of the table": a marked area, or the table
            words = mention.words or ("table",)
            areas = [
                a
                for a in scene.table_areas()
                if "center" in a.label.split() and set(words) <= set(a.label.split())
            ]
            if len(areas) == 1:
                anchors.append(areas[0])
                continue
            anchors.append(scene.items[ground(Mention(words=words), scene)[0]])
            continue
        refs = ground(mention, scene, movable=None)
        anchors.extend(scene.items[r] for r in refs)
    return anchors, related


def _qualify(
    candidates: list[BriefObject], qualifier: Qualifier, scene: Scene, mention: Mention
) -> list[BriefObject]:
    """The candidates ``qualifier`` picks out (by score: 0 is a perfect fit)."""
    if len(candidates) <= 1 and not qualifier.negated:
        return candidates
    anchors, related_counts = _anchor_points(qualifier, scene)
    anchor_refs = {a.ref for a in anchors}
    candidates = [c for c in candidates if c.ref not in anchor_refs]

    def score(item: BriefObject) -> float:
        if qualifier.relation == "between":
            return _between(item, anchors[0], anchors[1])
        anchor = anchors[0]
        distance = _xy_distance(item, anchor.position)
        # a bowl in the cabinet's drawer is not "on the cabinet", nor one on its top "in" it
        on, inside = (
            r is not None and f"{r}_".startswith(anchor.ref + "_") for r in (item.on, item.inside)
        )
        fits, contrary = {
            "on": (on, inside),
            "in": (inside or item.on == anchor.ref, on and item.on != anchor.ref),
        }.get(qualifier.relation, (on or inside, False))
        if related_counts and qualifier.relation in ("on", "in", "from") and (fits or contrary):
            return 0.0 if fits else 1.0 + distance
        if qualifier.relation == "on" and item.position[2] < anchor.position[2] - 0.02:
            distance += 0.5  # below what it is said to be on
        return distance

    ranked = sorted(candidates, key=lambda c: (score(c), c.ref))
    if not ranked:
        raise Unresolved(f"nothing fits {mention.text()}")
    limit = {"near": NEAR_LIMIT_M, "between": BETWEEN_LIMIT_M}.get(
        qualifier.relation, RESTING_LIMIT_M
    )
    if not qualifier.negated and score(ranked[0]) > limit:
        raise Unresolved(f"I see nothing that is {mention.text()}")
    if qualifier.negated:
        if score(ranked[0]) > limit and len(ranked) > 1:  # nothing is there: all fit "not"
            chosen = settle(ranked, scene)
            if chosen is not None:
                return [chosen]
            raise Unresolved(
                f"nothing is {mention.text().split(' not ', 1)[-1]}, so every one of "
                f"{', '.join(c.ref for c in ranked)} fits {mention.text()}",
                candidates=tuple(sorted(c.ref for c in ranked)),
            )
        rest = ranked[1:]
        if len(ranked) >= 2 and score(ranked[1]) - score(ranked[0]) < MARGIN_M:
            raise Unresolved(f"I cannot tell which is meant by {mention.text()}")
        return rest
    if len(ranked) >= 2 and score(ranked[1]) - score(ranked[0]) < MARGIN_M:
        tied = [c for c in ranked if score(c) - score(ranked[0]) < MARGIN_M]
        chosen = settle(tied, scene)
        if chosen is not None:
            return [chosen]
        raise Unresolved(
            f"{ranked[0].ref} and {ranked[1].ref} fit {mention.text()} equally well",
            candidates=tuple(sorted(c.ref for c in tied)),
        )
    return ranked[: max(1, mention.count)]


def _between(item: BriefObject, a: BriefObject, b: BriefObject) -> float:
    """How far ``item`` is from lying between ``a`` and ``b`` (plane, metres): its distance
    from the segment joining them when it is alongside the segment's middle part, else that
    distance plus a metre (beyond either end is not between, however close to the line)."""
    ax, ay = a.position[:2]
    bx, by = b.position[:2]
    px, py = item.position[:2]
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    if length2 < 1e-9:
        return math.dist((px, py), (ax, ay)) + 1.0
    t = ((px - ax) * dx + (py - ay) * dy) / length2
    off = abs((px - ax) * dy - (py - ay) * dx) / math.sqrt(length2)
    return off if 0.15 <= t <= 0.85 else off + 1.0
