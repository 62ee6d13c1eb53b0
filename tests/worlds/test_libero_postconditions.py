"""The LIBERO place's post-condition on a fake simulator: what it judges, not the physics."""

from __future__ import annotations

from typing import Any

from worlds.libero.postconditions import LiberoPostConditions
from worlds.libero.scene import CatalogItem, SceneCatalog


class _Geometry:
    """Just what the place's check reads: the catalog, what the fingers hold, LIBERO's
    predicates (every one holds)."""

    def __init__(self, held: str | None) -> None:
        self.catalog = SceneCatalog()
        for item in (
            CatalogItem("cream_cheese_1", "object", "cream cheese", "object", "cream_cheese"),
            CatalogItem("basket_1", "object", "basket", "object", "basket"),
            CatalogItem(
                "basket_1_contain_region",
                "region",
                "inside of basket",
                "container",
                parent="basket_1",
                tags=("contain",),
            ),
        ):
            self.catalog.items[item.ref] = item
        self.held = held

    def held_ref(self) -> str | None:
        return self.held

    def predicate(self, name: str, *refs: str) -> bool:
        return True


class _Sim:
    def __init__(self, held: str | None) -> None:
        self.geometry: Any = _Geometry(held)


ARGS = {"ref": "cream_cheese_1", "target": "basket_1_contain_region", "relation": "in"}


def test_a_place_that_leaves_the_container_in_the_fingers_fails_though_the_thing_is_in() -> None:
    """LIBERO-PRO libero_10_with_mug task 1: the fingers opened on the basket's walls and the
    retreat took the basket up; LIBERO's In held for the cream cheese (in the basket, in the
    air), the place was judged a success, and the next pick was refused ("the gripper holds
    basket_1"). A place whose fingers come away holding anything has failed."""
    verdict = LiberoPostConditions(_Sim("basket_1")).check("place", ARGS, {})  # type: ignore[arg-type]
    assert verdict is not None and verdict.status == "failure"
    assert "basket_1" in verdict.evidence
    clean = LiberoPostConditions(_Sim(None)).check("place", ARGS, {})  # type: ignore[arg-type]
    assert clean is not None and clean.status == "success"
