"""Data association: which known node a detection without a ref is.

Greedy global nearest neighbour: every (detection, node) pair with the same label, no
conflicting colour and a centre distance within the gate is a candidate; candidates are
taken shortest distance first, each detection and node at most once. Ties break by
detection index then ref, so the result never depends on dictionary order. This is the
association used by most tabletop trackers when objects move little between frames; a
detection that matches nothing becomes a new node.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = ["Candidate", "Query", "associate"]


class Query(NamedTuple):
    """A detection to associate: its base label, colour and world position."""

    label: str
    color: str | None
    position: tuple[float, float, float]


class Candidate(NamedTuple):
    """A known node it may be."""

    ref: str
    label: str
    color: str | None
    position: tuple[float, float, float]


def associate(
    queries: Sequence[Query], candidates: Iterable[Candidate], *, gate_m: float
) -> list[str | None]:
    """The ref each query is associated with (None for a new object)."""
    by_label: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        by_label[candidate.label].append(candidate)
    pairs: list[tuple[float, int, str]] = []
    for index, query in enumerate(queries):
        for candidate in by_label.get(query.label, ()):
            if query.color and candidate.color and query.color != candidate.color:
                continue
            distance = math.dist(query.position, candidate.position)
            if distance <= gate_m:
                pairs.append((distance, index, candidate.ref))
    pairs.sort()
    result: list[str | None] = [None] * len(queries)
    taken: set[str] = set()
    for _, index, ref in pairs:
        if result[index] is None and ref not in taken:
            result[index] = ref
            taken.add(ref)
    return result
