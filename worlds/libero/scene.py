"""What a LIBERO scene holds, in the harness's words: refs, labels, categories, regions.

The catalogue is read once per task from the env's own tables (the BDDL's objects, fixtures
and regions, by name; never its goal) and turned into ground-truth detections of the
current state on demand. Positions are in the robot-base frame (see
:class:`~worlds.libero.control.Frame`). An object's support relation ("on" /
"inside") is LIBERO's own ``On``/``In`` predicate evaluated on the current state, so the
scene graph and the task check never disagree about where something is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["SURFACES", "CatalogItem", "SceneCatalog", "plain_label"]

HINGE = 3
"""MuJoCo's mjJNT_HINGE."""
SURFACES = frozenset({"main_table", "floor", "kitchen_table", "living_room_table", "study_table"})
"""LIBERO's table and floor fixtures: the support everything starts on (not in the graph)."""

_LABELS = {
    "akita_black_bowl": "black bowl",
    "glazed_rim_porcelain_ramekin": "ramekin",
    "porcelain_mug": "white mug",
    "white_yellow_mug": "yellow and white mug",
    "red_coffee_mug": "red coffee mug",
    "chefmate_8_frypan": "frying pan",
    "flat_stove": "stove",
    "cookies": "cookie box",
    "desk_caddy": "desk caddy",
    "bowl_drainer": "bowl drainer",
}
"""LIBERO category names whose words are not what a person calls the thing."""

Kind = Literal["object", "fixture", "region"]


def plain_label(category: str) -> str:
    """``akita_black_bowl`` -> ``black bowl``; otherwise the words of the category."""
    if category in _LABELS:
        return _LABELS[category]
    words = [w for w in category.split("_") if not w.isdigit()]
    return " ".join(words) or category


@dataclass(frozen=True)
class CatalogItem:
    """One thing of the scene graph (see docs/libero.md, "Scene graph and Brief")."""

    ref: str
    kind: Kind
    label: str
    category: str
    """The scene graph's node category: object, surface or container."""
    libero_category: str = ""
    parent: str | None = None
    tags: tuple[str, ...] = ()
    drawer: bool = False


@dataclass
class SceneCatalog:
    """The refs of one task's scene and how to read their state from the env."""

    items: dict[str, CatalogItem] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: Any) -> SceneCatalog:
        """Read the objects, fixtures and regions of a LIBERO problem env (``env.env``)."""
        catalog = cls()
        init_regions = {
            str(state[2])
            for state in env.parsed_problem.get("initial_state", [])
            if len(state) == 3
        }
        for name, obj in env.objects_dict.items():
            category = str(obj.category_name)
            catalog.items[name] = CatalogItem(
                ref=name,
                kind="object",
                label=plain_label(category),
                category="object",
                libero_category=category,
            )
        for name, obj in env.fixtures_dict.items():
            if name in SURFACES:
                continue
            category = str(obj.category_name)
            catalog.items[name] = CatalogItem(
                ref=name,
                kind="fixture",
                label=plain_label(category),
                category="surface",
                libero_category=category,
                drawer=_hinged(env, obj),
            )
        for name, site in env.object_sites_dict.items():
            catalog.items[name] = _region(name, site, catalog, name in init_regions)
        return catalog

    def refs(self, kind: Kind | None = None) -> list[str]:
        return [r for r, item in self.items.items() if kind is None or item.kind == kind]

    def get(self, ref: str) -> CatalogItem | None:
        return self.items.get(ref)


def _hinged(env: Any, obj: Any) -> bool:
    """Whether a fixture has a door on one hinge (the microwave): LIBERO's Open and Close
    judge it, and nothing turns it on (a knob is a hinge too)."""
    if hasattr(obj, "turn_on") or not hasattr(obj, "is_close"):
        return False
    model = env.sim.model
    hinges = 0
    for joint in getattr(obj, "joints", None) or []:
        try:
            hinges += int(model.jnt_type[model.joint_name2id(joint)]) == HINGE
        except ValueError:
            return False
    return hinges == 1


def _region(name: str, site: Any, catalog: SceneCatalog, init: bool) -> CatalogItem:
    parent = getattr(site, "parent_name", None)
    joints = list(getattr(site, "joints", None) or [])
    if parent is None or parent in SURFACES or parent not in catalog.items:
        surface = next(
            (s for s in sorted(SURFACES, key=len, reverse=True) if name.startswith(s)), ""
        )
        words = name[len(surface) :].strip("_") if surface else name
        words = re.sub(r"_?region$", "", words).replace("_", " ").strip() or words
        tags = ("table_area", "init") if init else ("table_area",)
        where = "floor" if surface == "floor" else "table"
        return CatalogItem(
            ref=name,
            kind="region",
            label=f"{where} area: {words}",
            category="surface",
            parent=surface or None,
            tags=tags,
        )
    owner = catalog.items[parent].label
    suffix = name[len(parent) :].strip("_")
    if joints:
        label, tags, category = (
            f"{suffix.removesuffix('_region')} drawer of {owner}",
            ("drawer", "contain"),
            "container",
        )
    elif suffix == "contain_region":
        label, tags, category = f"inside of {owner}", ("contain",), "container"
    elif suffix.endswith("_contain_region"):
        part = suffix.removesuffix("_contain_region").replace("_", " ")
        label, tags, category = f"{part} compartment of {owner}", ("contain",), "container"
    elif suffix == "heating_region":
        label, tags, category = f"inside of {owner}", ("contain",), "container"
    elif suffix == "cook_region":
        label, tags, category = f"cooking area of {owner}", ("cook", "top"), "surface"
    elif suffix in {"top_side", "top_region"}:
        label, tags, category = f"top of {owner}", ("top",), "surface"
    else:
        words = suffix.removesuffix("_region").replace("_", " ")
        label, tags, category = f"{words} of {owner}", ("top",), "surface"
    if init:
        tags = (*tags, "init")
    return CatalogItem(
        ref=name,
        kind="region",
        label=label,
        category=category,
        parent=parent,
        tags=tags,
        drawer=bool(joints),
    )


def site_box(env: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(centre, half extents along the world axes) of a region site, LIBERO world frame."""
    site = env.object_sites_dict[name]
    centre = np.array(env.sim.data.get_site_xpos(name), dtype=float)
    matrix = np.array(env.sim.data.get_site_xmat(name), dtype=float).reshape(3, 3)
    size = np.asarray(site.size, dtype=float) if site.size is not None else np.zeros(3)
    return centre, np.abs(matrix @ size)


def resolve_target(catalog: SceneCatalog, target: str, relation: str | None) -> tuple[str, str]:
    """Where ``place`` really puts things for ``target`` and ``relation``: an object or
    fixture named as a container stands for its contain region ("in basket_1" is "in
    basket_1_contain_region"), and a fixture named as a support for its top or cooking
    region ("on flat_stove_1" is "on flat_stove_1_cook_region"). A fixture that holds
    things in one place only, with no inside and no drawer (a wine rack), stands for that
    place whichever word is used: a bottle put "into the rack" goes where the rack holds
    it. Returns (ref, relation)."""
    item = catalog.get(target)
    if item is None or item.kind == "region":
        wanted = relation or ("in" if item is not None and "contain" in item.tags else "on")
        return target, wanted
    children = [
        i
        for i in catalog.items.values()
        if i.kind == "region" and i.parent == target and not i.drawer
    ]
    contain = [c for c in children if "contain" in c.tags]
    tops = [c for c in children if "cook" in c.tags] + [c for c in children if "top" in c.tags]
    if relation == "in" or (relation is None and contain and item.kind == "object"):
        if contain:
            return contain[0].ref, "in"
        drawers = any(
            i.kind == "region" and i.parent == target and i.drawer for i in catalog.items.values()
        )
        if item.kind == "fixture" and len(children) == 1 and not drawers:
            return children[0].ref, "on"
        return target, relation or "in"
    if item.kind == "fixture" and tops:
        return tops[0].ref, "on"
    return target, relation or "on"
