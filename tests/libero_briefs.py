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
        ("wine_rack_1", "wine rack", FIX, (0.39, -0.35, 0.01), ""),
        ("wine_rack_1_top_region", "top of wine rack", SURF, (0.39, -0.35, 0.22), ""),
        ("main_table_table_center", "table area table center", SURF, (0.58, 0.0, 0.0), ""),
    ]
    return entries


def groceries(items: dict[str, tuple[str, tuple[float, float, float]]]) -> list[Entry]:
    """A libero_object-like floor scene: grocery items and a basket with its inside."""
    entries: list[Entry] = [
        (ref, label, OBJ, pos, "on floor") for ref, (label, pos) in items.items()
    ]
    entries += [
        ("floor", "floor", "surface, kind=fixture", (0.5, 0.0, 0.0), ""),
        ("basket_1", "basket", OBJ, (0.45, 0.28, 0.03), "on floor"),
        ("basket_1_contain_region", "inside of basket", CONT, (0.45, 0.28, 0.05), ""),
    ]
    return entries


GROCERIES = {
    "alphabet_soup_1": ("alphabet soup", (0.62, -0.10, 0.04)),
    "cream_cheese_1": ("cream cheese", (0.55, 0.05, 0.02)),
    "tomato_sauce_1": ("tomato sauce", (0.70, 0.10, 0.04)),
    "ketchup_1": ("ketchup", (0.48, -0.20, 0.05)),
    "butter_1": ("butter", (0.66, -0.24, 0.02)),
    "milk_1": ("milk", (0.40, -0.05, 0.05)),
    "orange_juice_1": ("orange juice", (0.75, -0.02, 0.05)),
    "bbq_sauce_1": ("bbq sauce", (0.58, 0.18, 0.05)),
    "salad_dressing_1": ("salad dressing", (0.80, 0.20, 0.05)),
    "chocolate_pudding_1": ("chocolate pudding", (0.52, -0.32, 0.02)),
}


def living_room(white: str = "porcelain mug", yellow: str = "white yellow mug") -> list[Entry]:
    """A libero_10-like living room: two plates (viewer's left at -y), three mugs (labelled
    by their make, or as the LIBERO world labels them: ``white``/``yellow`` give the
    labels), a pudding, marked table areas beside the plates."""
    return [
        ("plate_1", "plate", OBJ, (0.60, -0.30, 0.01), "on living_room_table"),
        ("plate_2", "plate", OBJ, (0.60, 0.30, 0.01), "on living_room_table"),
        ("porcelain_mug_1", white, OBJ, (0.45, -0.10, 0.05), "on living_room_table"),
        ("white_yellow_mug_1", yellow, OBJ, (0.45, 0.10, 0.05), "on living_room_table"),
        ("red_coffee_mug_1", "red coffee mug", OBJ, (0.70, 0.00, 0.05), "on living_room_table"),
        ("chocolate_pudding_1", "chocolate pudding", OBJ, (0.35, 0.20, 0.02), ""),
        ("living_room_table", "table", "surface, kind=fixture", (0.6, 0.0, -0.01), ""),
        (
            "living_room_table_plate_right_region",
            "table area plate right",
            SURF,
            (0.60, 0.40, 0.0),
            "",
        ),
        (
            "living_room_table_plate_left_region",
            "table area plate left",
            SURF,
            (0.6, -0.4, 0.0),
            "",
        ),
    ]


def kitchen_10() -> list[Entry]:
    """A libero_10-like kitchen: a microwave with its inside, a stove, two moka pots, a
    frying pan, a white and yellow mug, a desk caddy with two compartments."""
    return [
        ("microwave_1", "microwave", FIX + ", closed", (0.70, -0.30, 0.12), ""),
        ("microwave_1_heating_region", "inside of microwave", CONT, (0.70, -0.30, 0.10), ""),
        ("flat_stove_1", "stove", FIX + ", state=off", (0.55, 0.25, 0.02), ""),
        ("flat_stove_1_cook_region", "cooking area of stove", SURF, (0.55, 0.25, 0.04), ""),
        ("moka_pot_1", "moka pot", OBJ, (0.45, -0.05, 0.06), ""),
        ("moka_pot_2", "moka pot", OBJ, (0.45, 0.12, 0.06), ""),
        ("chefmate_8_frypan_1", "frypan", OBJ, (0.35, 0.30, 0.03), ""),
        ("white_yellow_mug_1", "white yellow mug", OBJ, (0.40, -0.30, 0.05), ""),
        ("desk_caddy_1", "desk caddy", FIX, (0.75, 0.10, 0.05), ""),
        (
            "desk_caddy_1_back_contain_region",
            "back compartment of desk caddy",
            CONT,
            (0.8, 0.1, 0.06),
            "",
        ),
        (
            "desk_caddy_1_front_contain_region",
            "front compartment of desk caddy",
            CONT,
            (0.7, 0.1, 0.06),
            "",
        ),
        ("black_book_1", "black book", OBJ, (0.50, 0.40, 0.02), ""),
        ("kitchen_table", "table", "surface, kind=fixture", (0.6, 0.0, -0.01), ""),
    ]
