"""Ground truth of the LIBERO world and LIBERO's own verdict on the task's goal.

:func:`scene_detections` reads every catalogued thing, the gripper and the robot from
privileged simulator state (base frame) as :class:`~scene.perception.Detection` objects,
and :class:`scene.perception.GroundTruthPerception` serves them as Perception.
:func:`goal_predicate_results` evaluates the task's BDDL goal predicates with the env's
own functions, each with its evidence (:class:`PredicateResult`). Kept apart from
:mod:`.driver` so what the world *is* (as opposed to how the arm is driven) reads in one
place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from embodiment.geometry import point_text, rounded_point
from scene.perception import Detection
from worlds.libero.geometry import LiberoGeometry
from worlds.libero.holding import resting_on
from worlds.libero.scene import SceneCatalog

if TYPE_CHECKING:
    pass

__all__ = ["PredicateResult", "goal_predicate_results", "scene_detections"]


class PredicateResult(tuple):  # type: ignore[type-arg]
    """(predicate as BDDL writes it, held now, evidence)."""

    __slots__ = ()

    def __new__(cls, text: str, held: bool, evidence: str) -> PredicateResult:
        return super().__new__(cls, (text, held, evidence))

    @property
    def text(self) -> str:
        return str(self[0])

    @property
    def held(self) -> bool:
        return bool(self[1])

    @property
    def evidence(self) -> str:
        return str(self[2])


def goal_predicate_results(
    inner: Any, geo: LiberoGeometry | None, catalog: SceneCatalog
) -> list[PredicateResult]:
    """Every BDDL goal predicate of the task in ``inner`` (the env's inner robosuite env),
    evaluated by LIBERO on the current state (the caller holds the driver's lock)."""
    results = []
    for state in inner.parsed_problem["goal_state"]:
        name, *refs = (str(s) for s in state)
        held = bool(inner._eval_predicate(state))
        text = f"({name.capitalize()} {' '.join(refs)})"
        where = ""
        if refs and geo is not None and refs[0] in catalog.items:
            box = geo.box(refs[0])
            if box is not None and catalog.items[refs[0]].kind == "object":
                where = f"; {refs[0]} at {point_text(box.centre)}"
        results.append(
            PredicateResult(
                text,
                held,
                f"LIBERO {name.capitalize()}({', '.join(refs)}) = "
                f"{'true' if held else 'false'}{where}",
            )
        )
    return results


def scene_detections(
    geo: LiberoGeometry,
    catalog: SceneCatalog,
    ee: tuple[float, float, float],
    width: float,
) -> list[Detection]:
    """Ground truth of every catalogued thing, the gripper (at ``ee``, opened ``width``) and
    the robot (base frame)."""
    held = geo.held_ref()
    found: list[Detection] = []
    for ref, item in catalog.items.items():
        box = geo.box(ref)
        if box is None:
            continue
        attributes: dict[str, Any] = {"kind": item.kind}
        if item.libero_category:
            attributes["libero_category"] = item.libero_category
        if item.parent:
            attributes["region_of"] = item.parent
        if item.tags:
            attributes["tags"] = list(item.tags)
        is_open: bool | None = None
        if item.drawer:
            # LIBERO's Open and Close leave a gap between them: a drawer pulled part way is
            # neither, and the scene must not call it closed when LIBERO would not
            if geo.predicate("open", ref):
                is_open = True
            elif geo.predicate("close", ref):
                is_open = False
            else:
                attributes["state"] = "ajar"
            attributes["open"] = is_open
        if item.kind == "fixture" and geo.articulation.knob(ref) is not None:
            # likewise TurnOn and TurnOff (a knob at exactly 0 is neither: TurnOff needs < 0)
            attributes["state"] = (
                "on"
                if geo.predicate("turnon", ref)
                else "off"
                if geo.predicate("turnoff", ref)
                else "neither"
            )
        relations: list[tuple[str, str]] = []
        if item.kind == "object" and ref != held:
            support = geo.support_of(ref)
            if support is not None:
                relations.append(support)
            if support is not None and support[0] == "inside":
                # and what it rests on in there: a bowl stacked on another and carried
                # into the tray with it is in the tray and still on that bowl
                below = resting_on(geo, ref)
                if below is not None:
                    relations.append(("on", below))
        found.append(
            Detection(
                ref=ref,
                label=item.label,
                category=item.category,  # type: ignore[arg-type]
                position=rounded_point(box.centre),
                size=tuple(round(v, 3) for v in box.size) if any(box.size) else None,  # type: ignore[arg-type]
                confidence=1.0,
                is_open=is_open,
                provenance="ground_truth",
                relations=relations,
                # LIBERO's In / On name every support a movable thing has (none: leaning,
                # tipped, in the air); the scene's boxes must not add one LIBERO denies
                supports_stated=item.kind == "object",
                attributes=attributes,
            )
        )
    found.append(
        Detection(
            ref="gripper",
            label="gripper",
            category="robot_part",
            position=rounded_point(ee),
            size=(0.02, 0.2, 0.05),
            provenance="ground_truth",
            attributes={
                "state": "open" if width > 0.07 else "closed",
                "opening_m": round(width, 4),
                "holding": held,
            },
            relations=[("holding", held)] if held else [],
        )
    )
    found.append(
        Detection(
            ref="robot",
            label="panda arm",
            category="robot",
            position=(0.0, 0.0, 0.0),
            size=(0.25, 0.25, 0.9),
            provenance="ground_truth",
        )
    )
    return found
