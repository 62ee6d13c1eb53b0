"""Searching the scene graph: by label, by attribute, by proximity; and suggestions for a
ref that names nothing (what the model's query tools and error results use)."""

from __future__ import annotations

import math

from scene.geometry import box_gap
from scene.graph import SceneGraph
from scene.nodes import SceneNode, label_matches

__all__ = ["find_objects", "has_attribute", "label_matches", "suggest_refs"]


def has_attribute(node: SceneNode, term: str, held: set[str]) -> bool:
    """One attribute term: a colour, a category, ``open``/``closed``, ``held``,
    ``stale``/``fresh``, an attribute name (truthy), an attribute value, or ``name=value``."""
    term = term.strip().lower()
    if "=" in term:
        key, _, value = (part.strip() for part in term.partition("="))
        if key in ("color", "colour"):
            return (node.color or "").lower() == value
        if key == "category":
            return node.category == value
        have = node.attributes.get(key)
        return have is not None and str(have).lower() == value
    if term in ("open", "closed"):
        return node.is_open is (term == "open")
    if term == "held":
        return node.ref in held
    if term in ("stale", "fresh"):
        return node.stale is (term == "stale")
    if term in (node.category, (node.color or "").lower()):
        return True
    if node.attributes.get(term) not in (None, False, 0, ""):
        return True
    return any(str(value).lower() == term for value in node.attributes.values())


def find_objects(
    graph: SceneGraph,
    *,
    label: str | None = None,
    attribute: str | None = None,
    near: str | None = None,
    within_m: float | None = None,
    include_stale: bool = True,
) -> list[tuple[SceneNode, float | None]]:
    """Objects matching every filter given, as ``(node, gap to near)`` pairs.

    ``attribute`` holds comma-separated terms (see :func:`has_attribute`), all required.
    ``near`` is a ref: objects (not surfaces, which everything on them touches) whose box
    is within ``within_m`` (default: the near tolerance) of its box, closest first.
    Otherwise results are sorted by distance from the gripper, then ref. An unknown
    ``near`` raises :class:`scene.graph.UnknownRefError`.
    """
    anchor = graph.body(graph.node(near)) if near is not None else None
    limit = graph.tolerances.near_m if within_m is None else within_m
    terms = [t for t in (attribute or "").split(",") if t.strip()]
    held = set(graph.held())
    results: list[tuple[SceneNode, float | None]] = []
    for node in graph.objects():
        if not include_stale and node.stale:
            continue
        if label and not label_matches(label, node):
            continue
        if terms and not all(has_attribute(node, term, held) for term in terms):
            continue
        gap: float | None = None
        if anchor is not None:
            if node.ref == anchor.ref or node.category == "surface":
                continue
            gap = box_gap(anchor, graph.body(node))
            if gap > limit:
                continue
        results.append((node, gap))
    gripper = graph.robot().gripper
    if anchor is not None:
        results.sort(key=lambda pair: (pair[1], pair[0].ref))
    elif gripper is not None:
        results.sort(key=lambda pair: (math.dist(pair[0].position, gripper), pair[0].ref))
    else:
        results.sort(key=lambda pair: pair[0].ref)
    return results


def suggest_refs(graph: SceneGraph, text: str, *, n: int = 5) -> list[str]:
    """Refs that ``text`` probably meant (see :meth:`SceneGraph.suggest`)."""
    return graph.suggest(text, n=n)
