"""Which LIBERO scene a free instruction is about (``harness demo --world libero "..."``).

An instruction that is no task's published language verbatim still names things and asks
for actions: "could you put the cream cheese box into the bowl?" names a cream cheese and a
bowl, "open the microwave" needs something that opens. This module picks the scene that has
them. A scene is what a task's BDDL file declares it holds, its ``:fixtures`` and
``:objects`` (their LIBERO categories, worded by :func:`~worlds.libero.scene.plain_label`)
and the regions those declare, and what LIBERO's object classes say each category does
(opens and closes, turns on and off). The goal, the ``:obj_of_interest`` list and the task's
language are never read: the choice is made from what is in the room, as a person would.

The rule, said in the demo's output: a scene fits when every thing-word of the instruction
names something in it and it affords every action asked for; among the fits the one whose
things take up most of the instruction's words wins, then the one with the fewest things the
instruction does not name. Tasks whose BDDL declares the same things are one scene (their
first task's layout is used). Equal best fits are a tie: the caller asks the user which one
where a user channel exists, else refuses naming the candidates.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from scene.nodes import singular
from worlds.libero.config import MAIN_SUITES, import_libero, suite_tasks
from worlds.libero.scene import SURFACES, plain_label

__all__ = [
    "SceneCandidate",
    "SceneChoice",
    "Thing",
    "abilities_of",
    "choose_scene",
    "fit_scene",
    "scene_of_bddl",
    "scenes_of",
    "words_of",
]

_COLOURS = frozenset(
    {"red", "green", "blue", "yellow", "white", "black", "orange", "brown", "grey", "gray"}
)
_FILLER = frozenset(
    {
        "a", "an", "the", "this", "that", "these", "those", "it", "its", "them", "they",
        "there", "here", "and", "or", "then", "of", "to", "in", "into", "on", "onto", "from",
        "at", "by", "with", "for", "please", "could", "can", "would", "you", "will", "me", "my",
        "i", "we", "up", "down", "out", "off", "over", "inside", "top", "bottom", "middle",
        "left", "right", "front", "back", "side", "behind", "near", "next", "between", "under",
        "above", "both", "all", "each", "one", "two", "some", "any", "not", "is", "are", "be",
        "do", "let", "put", "place", "set", "move", "pick", "take", "grab", "lift", "get",
        "bring", "pull", "push", "slide", "turn", "switch", "open", "close", "shut", "leave",
        "make", "sure", "kindly", "robot", "first", "after", "once", "now", "other", "another",
        "same", "rest", "thank", "thanks", "table", "floor", "center", "centre", "surface",
        "area", "edge", "corner", "spot"
    }
)  # fmt: skip
"""Words that name no thing (the thing-words of an instruction are the rest); the table
and its areas are where things are, in every scene."""
_OPEN = re.compile(r"\b(?:open|opens|opening|close|closes|closing|shut|shuts|shutting)\b")
_SWITCH = re.compile(
    r"\b(?:turn|switch|power)(?:s|ed|ing)?\s+(?:\w+\s+){0,4}?(?:on|off)\b|\b(?:ignite|"
    r"extinguish)\b"
)
_PARTS_OPEN = frozenset({"drawer", "door"})
"""Parts that only something that opens has (a word of such a :class:`Thing`)."""
_PACKAGES = frozenset({"box", "carton", "can", "tin", "jar", "pack", "packet", "bag", "bottle"})
"""What an item comes in: "the cream cheese box" names the cream cheese; optional."""
_VERBS = frozenset(
    {
        "put", "place", "set", "move", "pick", "take", "grab", "lift", "get", "bring", "pull",
        "push", "slide", "shove", "turn", "switch", "open", "close", "shut", "insert", "drop",
        "stack", "transfer", "lay", "load", "store", "return"
    }
)  # fmt: skip
"""Verbs of the things LIBERO's skills do: an instruction with none asks for something else."""


@dataclass(frozen=True)
class Thing:
    """One kind of thing a scene holds: its words, how many, what it does."""

    category: str
    label: str
    count: int
    opens: bool
    switches: bool
    regions: tuple[str, ...] = ()

    @property
    def words(self) -> frozenset[str]:
        words = {singular(w) for w in self.label.split()}
        words |= {singular(w) for w in self.category.split("_") if not w.isdigit()}
        if self.opens:  # drawers are regions one above another; else it opens by a door
            stacked = any(re.match(r"(?:top|middle|bottom)_region$", r) for r in self.regions)
            words.add("drawer" if stacked else "door")
        return frozenset(words)


@dataclass(frozen=True)
class SceneCandidate:
    """A scene (the tasks that declare the same things) and how well an instruction fits."""

    suite: str
    task: int
    task_name: str
    things: tuple[Thing, ...]
    tasks: tuple[int, ...]
    matched: int = 0
    unnamed: int = 0
    named: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def score(self) -> tuple[int, int]:
        return (self.matched, -self.unnamed)

    def describe(self) -> str:
        where = f"{self.suite} task {self.task}"
        if len(self.tasks) > 1:
            where += f" (the scene of tasks {', '.join(map(str, self.tasks))})"
        return f"{where}: {', '.join(t.label for t in self.things)}"


@dataclass(frozen=True)
class SceneChoice:
    """The chosen scene, or the tie, or why none fits."""

    chosen: SceneCandidate | None
    tied: tuple[SceneCandidate, ...] = ()
    problem: str = ""


# ------------------------------------------------------------------ reading a scene


def _blocks(text: str) -> dict[str, str]:
    """The top-level ``(:key ...)`` blocks of a BDDL problem, by key (bodies unparsed)."""
    blocks: dict[str, str] = {}
    depth = 0
    start = -1
    key = ""
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
            if depth == 2:
                found = re.match(r"\(:([a-z_]+)", text[i:])
                key = found.group(1) if found else ""
                start = i
        elif char == ")":
            if depth == 2 and key:
                blocks[key] = text[start + 1 : i]
            depth -= 1
    return blocks


def _declared(body: str) -> list[tuple[list[str], str]]:
    """``name_1 name_2 - category`` lines: (names, category)."""
    out = []
    for line in body.splitlines():
        if " - " in line:
            names, _, category = line.strip().rpartition(" - ")
            out.append((names.split(), category.strip()))
    return out


def _region_targets(body: str) -> dict[str, list[str]]:
    """Region names by the thing they belong to (``:target``), from a ``:regions`` block."""
    owners: dict[str, list[str]] = {}
    for name, target in re.findall(r"\(\s*([a-z0-9_]+)\s*\(:target\s+([a-z0-9_]+)\s*\)", body):
        owners.setdefault(target, []).append(name)
    return owners


@functools.cache
def abilities_of(category: str) -> tuple[bool, bool]:
    """(opens and closes, turns on and off), from LIBERO's own object class."""
    import_libero()  # MUJOCO_GL first, robosuite's import noise kept quiet
    from libero.libero.envs.objects import get_object_fn
    from libero.libero.envs.objects.articulated_objects import ArticulatedObject

    try:
        cls = get_object_fn(category)
    except KeyError:
        return False, False
    if not isinstance(cls, type) or not issubclass(cls, ArticulatedObject):
        return False, False
    opens = cls.is_open is not ArticulatedObject.is_open
    return opens, callable(getattr(cls, "turn_on", None))


def scene_of_bddl(path: str | Path, *, abilities: bool = True) -> tuple[Thing, ...]:
    """The things a BDDL problem declares (fixtures other than tables and floors, and
    objects), each with its regions and abilities. Reads ``:fixtures``, ``:objects`` and
    ``:regions`` only."""
    blocks = _blocks(Path(path).read_text(encoding="utf-8"))
    regions = _region_targets(blocks.get("regions", ""))
    things = []
    for key in ("fixtures", "objects"):
        for names, category in _declared(blocks.get(key, "")):
            if category in SURFACES or category == "table":
                continue
            opens, switches = abilities_of(category) if abilities else (False, False)
            owned = tuple(sorted({r for n in names for r in regions.get(n, [])}))
            things.append(
                Thing(category, plain_label(category), len(names), opens, switches, owned)
            )
    return tuple(things)


@functools.cache
def scenes_of(suites: tuple[str, ...]) -> tuple[SceneCandidate, ...]:
    """Every scene of ``suites``: tasks that declare the same things are one scene."""
    seen: dict[tuple[str, tuple[tuple[str, int], ...]], list[int]] = {}
    first: dict[tuple[str, tuple[tuple[str, int], ...]], SceneCandidate] = {}
    for suite in suites:
        for index, name, bddl in suite_tasks(suite):
            things = scene_of_bddl(bddl)
            key = (suite, tuple(sorted((t.category, t.count) for t in things)))
            seen.setdefault(key, []).append(index)
            first.setdefault(key, SceneCandidate(suite, index, name, things, ()))
    return tuple(
        SceneCandidate(c.suite, c.task, c.task_name, c.things, tuple(seen[k]))
        for k, c in first.items()
    )


# ------------------------------------------------------------------ fitting an instruction


def words_of(text: str) -> list[str]:
    return [singular(w) for w in re.findall(r"[a-z]+", text.lower())]


def _phrases(words: list[str], vocabulary: frozenset[str]) -> list[tuple[int, list[str]]]:
    """The noun phrases of an instruction: runs of thing-words and colours ("and" between
    two colours stays inside: "yellow and white mug"), each with where it ends."""
    phrases: list[tuple[int, list[str]]] = []
    run: list[str] = []
    for i, word in enumerate(words):
        thingy = (word in vocabulary or word in _COLOURS | _PACKAGES) and word not in _FILLER
        joins = (
            word == "and" and run and run[-1] in _COLOURS
            and i + 1 < len(words) and words[i + 1] in _COLOURS
        )  # fmt: skip
        if thingy or joins:
            run.append(word)
            continue
        if any(w not in _COLOURS and w != "and" for w in run):
            phrases.append((i, run))
        run = []
    if any(w not in _COLOURS and w != "and" for w in run):
        phrases.append((len(words), run))
    return phrases


def fit_scene(
    candidate: SceneCandidate, words: list[str], vocabulary: frozenset[str]
) -> SceneCandidate:
    """How ``words`` fit a scene: each noun phrase names the things of the scene that its
    words fit best (every colour said theirs; fewest colours they have left unsaid), and
    what a phrase says that none of them has is missing."""
    named: list[Thing] = []
    matched = 0
    missing: list[str] = []
    for end, phrase in _phrases(words, vocabulary):
        said = set(phrase) - {"and"}
        scored = []
        for thing in candidate.things:
            hits = said & thing.words
            if not hits - _COLOURS or not said & _COLOURS <= thing.words:
                continue  # not this kind of thing, or "the red mug" for the white one
            unsaid = (thing.words & _COLOURS) - said
            scored.append((len(hits) - 0.5 * len(unsaid), len(hits), thing))
        best = max((s for s, _, _ in scored), default=None)
        chosen = [(h, t) for s, h, t in scored if s == best]
        covered = set().union(*(t.words for _, t in chosen)) if chosen else set()
        lacking = [w for w in said if w not in covered and w not in _PACKAGES | _COLOURS]
        if lacking or not chosen:
            missing.append(" ".join(phrase))
            continue
        matched += max(h for h, _ in chosen)
        named.extend(t for _, t in chosen if t not in named)
        need = _count_before(words, end - len(phrase))
        after = words[end] if end < len(words) else ""
        if need > 1 and after != "and" and sum(t.count for _, t in chosen) < need:
            missing.append(f"{need} of the {' '.join(phrase)}")
    missing.extend(_unknown(words, vocabulary))
    text = " ".join(words)
    if _OPEN.search(text) and not any(t.opens for t in candidate.things):
        missing.append("something that opens")
    if _SWITCH.search(text) and not any(t.switches for t in candidate.things):
        missing.append("something that turns on and off")
    return SceneCandidate(
        candidate.suite,
        candidate.task,
        candidate.task_name,
        candidate.things,
        candidate.tasks,
        matched=matched,
        unnamed=sum(1 for t in candidate.things if t not in named),
        named=tuple(t.label for t in named),
        missing=tuple(dict.fromkeys(missing)),
    )


_ARTICLES = frozenset({"the", "a", "an"})


def _unknown(words: list[str], vocabulary: frozenset[str]) -> list[str]:
    """Noun phrases after an article with no word any scene knows ("the banana")."""
    out = []
    for i, word in enumerate(words):
        if word not in _ARTICLES:
            continue
        run = []
        for after in words[i + 1 :]:
            if after in _FILLER or after in _ARTICLES:
                break
            run.append(after)
        if run and not any(w in vocabulary or w in _COLOURS for w in run):
            out.append(" ".join(run))
    return out


_COUNTS = {"both": 2, "two": 2, "pair": 2, "three": 3}


def _count_before(words: list[str], start: int) -> int:
    """How many a phrase starting at ``start`` asks for ("both the moka pots": 2)."""
    for word in reversed(words[max(0, start - 2) : start]):
        if word in _COUNTS:
            return _COUNTS[word]
    return 1


def choose_scene(instruction: str, suites: tuple[str, ...] = MAIN_SUITES) -> SceneChoice:
    """The scene of ``suites`` that ``instruction`` is about (see the module docstring)."""
    scenes = scenes_of(tuple(suites))
    vocabulary = (
        frozenset(w for s in scenes for t in s.things for w in t.words if w not in _FILLER)
        | _PARTS_OPEN
    )
    words = words_of(instruction)
    fits = [fit_scene(s, words, vocabulary) for s in scenes]
    if not any(w in vocabulary and w not in _COLOURS for w in words):
        return SceneChoice(None, problem="it names nothing any LIBERO scene holds")
    if not any(w in _VERBS for w in words):
        return SceneChoice(None, problem="it asks for nothing LIBERO's skills do")
    good = [f for f in fits if not f.missing]
    if not good:
        near = max(fits, key=lambda f: (-len(f.missing), f.score))
        return SceneChoice(
            None,
            problem=f"no LIBERO scene has everything it names (the closest, {near.suite} "
            f"task {near.task}, lacks {', '.join(near.missing)})",
        )
    best = max(f.score for f in good)
    top = [f for f in good if f.score == best]
    if len(top) > 1:
        return SceneChoice(None, tied=tuple(top))
    return SceneChoice(top[0])
