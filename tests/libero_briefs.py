"""Scene Briefs in the LIBERO world's format (docs/libero.md) for the planner's tests:
movable objects, fixtures, and regions (a ref extending its owner's, labelled "<part> of
<owner>" or "table area <words>"), in the robot-base frame. Positions are made up here,
laid out the way the published scenes lay them out; nothing is read from a benchmark."""

from __future__ import annotations

Entry = tuple[str, str, str, tuple[float, float, float], str]
"""(ref, label, tags, position, trailing clauses)."""


def brief(entries: list[Entry], holding: str = "nothing") -> str:
    lines = [
        "Scene (world frame, metres; t=0.000)",
        f"robot: gripper at (0.000, 0.000, 0.400), open, holding {holding}",
        f"objects ({len(entries)} of {len(entries)} shown, most relevant first):",
    ]
    for ref, label, tags, (x, y, z), rest in entries:
        tag_text = f" [{tags}]" if tags else ""
        tail = f"; {rest}" if rest else ""
        at = f"({x:.3f}, {y:.3f}, {z:.3f})"
        lines.append(f"- {ref}: {label}{tag_text} at {at}{tail}; conf 1.00; seen 0.0s ago")
    return "\n".join(lines)


OBJ = "kind=object"
FIX = "surface, kind=fixture"
CONT = "container, kind=region"
SURF = "surface, kind=region"


def kitchen(
    bowls: dict[str, tuple[float, float, float]], bowl_rest: dict[str, str] | None = None
) -> list[Entry]:
    """A libero_spatial-like kitchen: bowls where given, a plate, a ramekin, a cookie box,
    a wooden cabinet with drawers, a stove."""
    bowl_rest = bowl_rest or {}
    entries: list[Entry] = [
        (ref, "black bowl", OBJ, pos, bowl_rest.get(ref, "on main_table"))
        for ref, pos in bowls.items()
    ]
    entries += [
        ("plate_1", "plate", OBJ, (0.62, 0.14, 0.01), "on main_table"),
        ("glazed_rim_porcelain_ramekin_1", "ramekin", OBJ, (0.46, 0.20, 0.02), "on main_table"),
        ("cookies_1", "cookies", OBJ, (0.73, 0.03, 0.02), "on main_table"),
        ("main_table", "table", "surface, kind=fixture", (0.66, 0.0, -0.01), ""),
        ("wooden_cabinet_1", "wooden cabinet", FIX, (0.69, -0.27, 0.10), "on main_table"),
        (
            "wooden_cabinet_1_top_region",
            "top drawer of wooden cabinet",
            CONT + ", closed",
            (0.62, -0.27, 0.16),
            "",
        ),
        (
            "wooden_cabinet_1_middle_region",
            "middle drawer of wooden cabinet",
            CONT + ", closed",
            (0.62, -0.27, 0.10),
            "",
        ),
        (
            "wooden_cabinet_1_bottom_region",
            "bottom drawer of wooden cabinet",
            CONT + ", closed",
            (0.62, -0.27, 0.04),
            "",
        ),
        ("wooden_cabinet_1_top_side", "top of wooden cabinet", SURF, (0.69, -0.27, 0.22), ""),
        ("flat_stove_1", "stove", FIX + ", state=off", (0.25, -0.14, 0.02), "on main_table"),
        ("flat_stove_1_cook_region", "cooking area of stove", SURF, (0.25, -0.14, 0.04), ""),
        ("main_table_stove_front_region", "table area stove front", SURF, (0.38, -0.14, 0.0), ""),
        ("main_table_table_center", "table area table center", SURF, (0.58, 0.0, 0.0), ""),
    ]
    return entries
