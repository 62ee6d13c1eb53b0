"""Typed nodes and edges of the scene graph, and the small text rules they share.

Nodes are pydantic models kept as the ``node`` attribute of each networkx node; edges are
networkx edges keyed by their relation, exposed as :class:`SceneEdge` records. Positions
are the centre of the object's axis-aligned bounding box, in metres, in ``frame``
(``"world"`` unless perception reported a frame the graph could not transform).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scene.perception import NodeCategory, Provenance

__all__ = [
    "GRIPPER_REF",
    "REF_PATTERN",
    "ROBOT_CATEGORIES",
    "ROBOT_REF",
    "EdgeOrigin",
    "Quaternion",
    "RelationName",
    "SceneEdge",
    "SceneNode",
    "Vec3",
    "display_label",
    "label_matches",
    "label_words",
    "plural",
    "singular",
    "slug",
]

Vec3 = tuple[float, float, float]
Quaternion = tuple[float, float, float, float]

RelationName = Literal["on", "inside", "holding", "near", "part_of"]
"""``a on b``, ``a inside b``, ``gripper holding a``, ``a near b`` (stored both ways),
``gripper part_of robot``. Containment seen from the container (``contains``) and support
seen from below (``supports``) are the same edges read backwards."""

EdgeOrigin = Literal["geometry", "perception", "evaluator", "state", "user"]
"""Who asserted a relation. Everything but ``geometry`` overrides the geometric rule for
that relation of that object until the object is observed again."""

REF_PATTERN = re.compile(r"^[a-z0-9_]+$")
ROBOT_REF = "robot"
GRIPPER_REF = "gripper"
ROBOT_CATEGORIES: frozenset[str] = frozenset({"robot", "robot_part"})


class SceneNode(BaseModel):
    """One thing in the scene: an object, a container, a surface, the robot or a part.

    Mutable on purpose: the graph updates nodes in place every turn, and copying a
    pydantic model per object per turn would dominate the cost of large scenes.
    """

    model_config = ConfigDict(extra="forbid")

    ref: str = Field(pattern=REF_PATTERN.pattern)
    """Stable id, never reused within a graph (``red_cube_1``)."""
    label: str
    """Lower-case words without the colour (``cube``, ``coffee mug``)."""
    category: NodeCategory = "object"
    color: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    position: Vec3
    orientation: Quaternion | None = None
    """Quaternion (x, y, z, w)."""
    frame: str = "world"
    size: Vec3 | None = None
    """Axis-aligned extents (dx, dy, dz); None when perception does not know them."""
    is_open: bool | None = None
    """Container (or gripper) state, when it has one."""
    confidence: float = Field(1.0, ge=0.0, le=1.0)
    provenance: Provenance = "detector"
    first_seen: float = 0.0
    last_seen: float = 0.0
    changed_at: float = 0.0
    """When a field (or an on/inside/holding relation) last changed: drives "recent"."""
    stale: bool = False
    """Not observed for longer than the graph's ``stale_after_s``; kept, never deleted."""

    @property
    def is_robot(self) -> bool:
        return self.category in ROBOT_CATEGORIES

    @property
    def display_label(self) -> str:
        return display_label(self.label, self.color)


class SceneEdge(BaseModel):
    """One relation ``source --relation--> target`` as a record (snapshots, queries)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    relation: RelationName
    target: str
    origin: EdgeOrigin = "geometry"
    since: float = 0.0
    distance_m: float | None = None
    """Gap between the two bounding boxes (``near``) or centre distance (``holding``)."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.relation, self.target)


# --------------------------------------------------------------------------- text rules

_WORD = re.compile(r"[^\W_]+")
_SLUG = re.compile(r"[^a-z0-9]+")


def label_words(text: str) -> list[str]:
    """Lower-case words of a label (letters and digits; punctuation dropped)."""
    return _WORD.findall(text.lower())


def display_label(label: str, color: str | None) -> str:
    """``red cube``: the colour first when known, never twice."""
    words = label_words(label)
    colour = label_words(color or "")
    if colour and words[: len(colour)] != colour:
        words = colour + words
    return " ".join(words) or "thing"


def slug(text: str) -> str:
    """A ref-safe form (``[a-z0-9_]+``) of any text; empty text becomes ``thing``."""
    return _SLUG.sub("_", text.lower()).strip("_") or "thing"


def singular(word: str) -> str:
    """Naive English singular, enough to match "cubes" to "cube" and "boxes" to "box"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if len(word) > 2 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def plural(word: str) -> str:
    """Naive English plural of the last word of a label (for the Brief's summary line)."""
    head, _, last = word.rpartition(" ")
    if last.endswith("y") and len(last) > 1 and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last = last + "es"
    else:
        last = last + "s"
    return f"{head} {last}" if head else last


def label_matches(query: str, node: SceneNode) -> bool:
    """True when every word of ``query`` (plurals folded) is in the node's label with its
    colour ("cube", "red cubes"), or ``query`` is the node's ref."""
    wanted = {singular(word) for word in label_words(query)}
    if not wanted:
        return False
    if query.strip().lower() == node.ref:
        return True
    return wanted <= {singular(word) for word in label_words(node.display_label)}
