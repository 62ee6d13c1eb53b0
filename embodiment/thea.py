"""Import (and export) an Embodiment Profile written in the Thea Markdown format.

Thea's public format (EIT-HAI/Thea, ``examples/port-template/profile.md``) is a Markdown
file with seven items under three sections:

    # Embodiment Profile
    ## Operational Envelope
    ### Base Footprint / ### Base Mobility / ### Reachable Workspace
    ## Perception Configuration
    ### Sensor Modalities / ### Model-Visible Views
    ## Base-Relative Positions
    ### Camera Positions / ### Initial Gripper Positions

The items are free text for the model. The envelope needs numbers, so the importer keeps
each item's text (rendered back to the model as descriptions) and reads numbers written in
these simple forms, all relative to the base frame:

- Base Footprint: ``0.60 x 0.50 m`` (a box) or ``radius 0.30 m`` (a circle).
- Base Mobility: a keyword: fixed / stationary, holonomic / omnidirectional, differential,
  legged.
- Reachable Workspace: ``x 0.20..0.75, y -0.40..0.40, z 0.00..1.10`` (``to`` also works).
- Sensor Modalities: words such as RGB camera, depth, joint states, gripper, force-torque,
  lidar, clearance, IMU, odometry.
- Model-Visible Views: list items ``- front: what it shows``.
- Camera Positions: ``- front: (1.10, 0.00, 0.55) looking at (0.45, 0.00, 0.00)``.
- Initial Gripper Positions: ``- hand: (0.30, 0.00, 0.48)``.

A missing section or item, or an item whose numbers cannot be read, is an error that
names it. Thea profiles carry no payload, speed or force limits: unless a YAML profile
that points at the Markdown file (``thea: robot.md``) declares ``limits``, conservative
defaults apply and the rendered profile says so.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from embodiment.errors import ProfileError

if TYPE_CHECKING:
    from embodiment.profile import EmbodimentProfile

__all__ = ["CONSERVATIVE_LIMITS", "THEA_LAYOUT", "parse_thea_markdown", "to_thea_markdown"]

THEA_LAYOUT: dict[str, tuple[str, ...]] = {
    "Operational Envelope": ("Base Footprint", "Base Mobility", "Reachable Workspace"),
    "Perception Configuration": ("Sensor Modalities", "Model-Visible Views"),
    "Base-Relative Positions": ("Camera Positions", "Initial Gripper Positions"),
}

CONSERVATIVE_LIMITS: dict[str, float] = {
    "payload_kg": 0.5,
    "max_speed_m_s": 0.1,
    "max_force_n": 20.0,
    "max_step_m": 0.15,
}
"""Slow and gentle: what applies when a Thea profile declares no limits."""

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_TRIPLE = re.compile(rf"\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)")
_RANGE = re.compile(
    rf"\b([xyz])\s*(?:[:=]|from)?\s*\[?\s*({_NUMBER})\s*(?:\.\.|to|,|–|-(?=\s))\s*({_NUMBER})",
    re.IGNORECASE,
)
_MOBILITY = (
    ("holonomic", "holonomic"),
    ("omnidirectional", "holonomic"),
    ("omni", "holonomic"),
    ("differential", "differential"),
    ("legged", "legged"),
    ("legs", "legged"),
    ("fixed", "fixed"),
    ("stationary", "fixed"),
    ("static", "fixed"),
)
_SENSORS = (
    ("depth", "depth"),
    ("rgb", "rgb"),
    ("colour", "rgb"),
    ("color", "rgb"),
    ("camera", "rgb"),
    ("joint", "joint_state"),
    ("gripper", "gripper_state"),
    ("force", "force_torque"),
    ("torque", "force_torque"),
    ("tactile", "tactile"),
    ("lidar", "lidar"),
    ("laser", "lidar"),
    ("clearance", "clearance"),
    ("imu", "imu"),
    ("odometry", "odometry"),
    ("microphone", "audio"),
    ("audio", "audio"),
)


def _key(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


def _sections(text: str) -> dict[str, dict[str, str]]:
    """``{section: {item: text}}`` from ``##`` and ``###`` headings."""
    found: dict[str, dict[str, str]] = {}
    section: str | None = None
    item: str | None = None
    buffer: list[str] = []

    def flush() -> None:
        if section is not None and item is not None:
            found[section][item] = "\n".join(buffer).strip()

    for line in text.splitlines():
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if heading:
            level = len(heading.group(1))
            if level == 2:
                flush()
                section, item, buffer = heading.group(2), None, []
                found.setdefault(section, {})
                continue
            if level == 3 and section is not None:
                flush()
                item, buffer = heading.group(2), []
                continue
            if level == 1:
                continue
        buffer.append(line)
    flush()
    return found


def _named_lines(text: str) -> list[tuple[str, str]]:
    """``- name: rest`` list items (or ``name: rest`` lines)."""
    entries = []
    for line in text.splitlines():
        match = re.match(r"^\s*(?:[-*+]\s+)?`?([A-Za-z][\w\- ]*?)`?\s*:\s*(.*)$", line)
        if match:
            entries.append(
                (
                    re.sub(r"[^a-z0-9]+", "_", match.group(1).lower()).strip("_"),
                    match.group(2).strip(),
                )
            )
    return entries


def _residue(text: str, *patterns: re.Pattern[str] | str) -> str:
    """What the text says beyond the numbers/keywords already parsed (kept for the model)."""
    for pattern in patterns:
        compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, re.I)
        text = compiled.sub(" ", text)
    text = re.sub(r"\s+", " ", text).strip(" ,;.:-()")
    text = re.sub(r"^(m|metres|meters)\b\s*", "", text).strip(" ,;.:-()")
    return text if len(text.split()) >= 2 else ""


def parse_thea_markdown(text: str, *, source: str = "profile.md") -> dict[str, Any]:
    """Turn a Thea profile into the data of an :class:`EmbodimentProfile` (a dict that
    YAML keys may refine). Raises :class:`ProfileError` naming every missing or unreadable
    item."""
    sections = {_key(name): (name, items) for name, items in _sections(text).items()}
    problems: list[str] = []
    items: dict[str, str] = {}
    for section, expected in THEA_LAYOUT.items():
        found = sections.get(_key(section))
        if found is None:
            problems.append(f"section '## {section}' is missing (items: {', '.join(expected)})")
            continue
        by_key = {_key(name): body for name, body in found[1].items()}
        for name in expected:
            body = by_key.get(_key(name))
            if body is None:
                problems.append(f"{section} > {name}: item '### {name}' is missing")
            elif not body.strip():
                problems.append(f"{section} > {name}: item is empty")
            else:
                items[name] = body.strip()
    if problems:
        raise ProfileError(source, problems)

    data: dict[str, Any] = {}
    footprint_text = items["Base Footprint"]
    box = re.search(rf"({_NUMBER})\s*m?\s*[x×]\s*({_NUMBER})\s*m", footprint_text)
    radius = re.search(rf"radius\s*(?:of\s*)?({_NUMBER})\s*m", footprint_text, re.IGNORECASE)
    diameter = re.search(rf"diameter\s*(?:of\s*)?({_NUMBER})\s*m", footprint_text, re.IGNORECASE)
    footprint: dict[str, Any] = {
        "description": _residue(
            footprint_text,
            rf"{_NUMBER}\s*m?\s*[x×]\s*{_NUMBER}\s*m",
            rf"(radius|diameter)"
            rf"\s*(of\s*)?{_NUMBER}\s*m",
        )
    }
    if box:
        footprint.update(shape="box", size=[float(box.group(1)), float(box.group(2))])
    elif radius or diameter:
        value = float(radius.group(1)) if radius else float(diameter.group(1)) / 2  # type: ignore[union-attr]
        footprint.update(shape="circle", radius=value)
    else:
        problems.append(
            "Operational Envelope > Base Footprint: no dimensions found; write e.g. "
            "'0.60 x 0.50 m' or 'radius 0.30 m'"
        )

    mobility_text = items["Base Mobility"]
    lowered = mobility_text.lower()
    mobility = next((value for word, value in _MOBILITY if word in lowered), None)
    if mobility is None:
        problems.append(
            "Operational Envelope > Base Mobility: say fixed, holonomic, differential or legged"
        )
    base: dict[str, Any] = {
        "footprint": footprint,
        "description": mobility_text
        if _residue(mobility_text, *(rf"\b{word}\b" for word, _ in _MOBILITY))
        else "",
    }
    if mobility is not None:
        base["mobility"] = mobility
    data["base"] = base

    workspace_text = items["Reachable Workspace"]
    ranges = {
        m.group(1).lower(): (float(m.group(2)), float(m.group(3)))
        for m in _RANGE.finditer(workspace_text)
    }
    if set(ranges) != {"x", "y", "z"}:
        missing = ", ".join(axis for axis in "xyz" if axis not in ranges)
        problems.append(
            f"Operational Envelope > Reachable Workspace: no range for {missing}; write e.g. "
            "'x 0.20..0.75, y -0.40..0.40, z 0.00..1.10' (metres, base frame)"
        )
    else:
        data["workspace"] = {
            "frame": "base",
            "min": [ranges[a][0] for a in "xyz"],
            "max": [ranges[a][1] for a in "xyz"],
            "description": _residue(workspace_text, _RANGE, r"\(?base frame\)?", r"\bm\b"),
        }

    sensor_text = items["Sensor Modalities"].lower()
    sensors: list[str] = []
    for word, value in _SENSORS:
        if word in sensor_text and value not in sensors:
            sensors.append(value)
    if mobility not in (None, "fixed") and "clearance" not in sensors and "lidar" in sensors:
        sensors.append("clearance")
    data["sensors"] = sensors

    views = _named_lines(items["Model-Visible Views"])
    positions = {name: rest for name, rest in _named_lines(items["Camera Positions"])}
    cameras = []
    for name, description in views:
        where = positions.get(name)
        triples = _TRIPLE.findall(where or "")
        if not triples:
            problems.append(
                f"Base-Relative Positions > Camera Positions: no position for view {name!r}; "
                f"write '- {name}: (x, y, z)'"
            )
            continue
        camera: dict[str, Any] = {
            "name": name,
            "frame": "base",
            "position": [float(v) for v in triples[0]],
            "description": description,
        }
        if len(triples) > 1:
            camera["look_at"] = [float(v) for v in triples[1]]
        cameras.append(camera)
    if not views:
        problems.append(
            "Perception Configuration > Model-Visible Views: list each view as '- name: ...'"
        )
    data["cameras"] = cameras

    grippers = []
    for name, rest in _named_lines(items["Initial Gripper Positions"]):
        triple = _TRIPLE.search(rest)
        if triple:
            grippers.append(
                {
                    "name": name,
                    "frame": "base",
                    "initial_position": [float(v) for v in triple.groups()],
                    "description": _TRIPLE.sub("", rest).strip(" ,;.-"),
                }
            )
    if not grippers and "none" not in items["Initial Gripper Positions"].lower():
        problems.append(
            "Base-Relative Positions > Initial Gripper Positions: write '- name: (x, y, z)' "
            "per gripper (or 'none')"
        )
    data["grippers"] = grippers
    if problems:
        raise ProfileError(source, problems)

    if mobility in (None, "fixed"):
        data["kind"] = "arm" if grippers else "other"
    else:
        data["kind"] = "mobile_manipulator" if grippers else "mobile_base"
        step = CONSERVATIVE_LIMITS["max_step_m"]
        base.update(max_step_m=step, max_turn_rad=0.5)
    data["limits"] = dict(CONSERVATIVE_LIMITS)
    data["notes"] = [
        "Imported from a Thea profile; limits were not declared there, so conservative "
        "defaults apply (0.1 m/s, 20 N, 0.15 m per motion, 0.5 kg)."
    ]
    return data


def to_thea_markdown(profile: EmbodimentProfile) -> str:
    """Write a profile in the Thea layout (for tools that read that format)."""

    def xyz(point: tuple[float, float, float]) -> str:
        return "(" + ", ".join(f"{v:.3f}" for v in point) + ")"

    def in_base(point: tuple[float, float, float], frame: str) -> tuple[float, float, float]:
        return profile.from_world(profile.to_world(point, frame), "base")

    ws = profile.workspace
    corners = [in_base(ws.min, ws.frame), in_base(ws.max, ws.frame)]
    low = tuple(min(a, b) for a, b in zip(*corners, strict=True))
    high = tuple(max(a, b) for a, b in zip(*corners, strict=True))
    footprint = profile.base.footprint
    views = [c for c in profile.cameras if c.model_visible]
    lines = [
        "# Embodiment Profile",
        "",
        "## Operational Envelope",
        "",
        "### Base Footprint",
        "",
        (
            f"{footprint.size[0]:.3f} x {footprint.size[1]:.3f} m"
            if footprint.size
            else f"radius {footprint.radius:.3f} m"
        )
        + (f". {footprint.description}" if footprint.description else ""),
        "",
        "### Base Mobility",
        "",
        profile.base.mobility
        + (f". {profile.base.description}" if profile.base.description else ""),
        "",
        "### Reachable Workspace",
        "",
        ", ".join(f"{a} {lo:.3f}..{hi:.3f}" for a, lo, hi in zip("xyz", low, high, strict=True))
        + " m (base frame)",
        "",
        "## Perception Configuration",
        "",
        "### Sensor Modalities",
        "",
        *[f"- {sensor}" for sensor in profile.sensors],
        "",
        "### Model-Visible Views",
        "",
        *[f"- {c.name}: {c.description or f'{c.width}x{c.height} camera'}" for c in views],
        "",
        "## Base-Relative Positions",
        "",
        "### Camera Positions",
        "",
        *[
            f"- {c.name}: {xyz(in_base(c.position, c.frame))} looking at "
            f"{xyz(in_base(profile.camera_look_at(c), c.frame))}"
            for c in views
        ],
        "",
        "### Initial Gripper Positions",
        "",
        *(
            [f"- {g.name}: {xyz(in_base(g.initial_position, g.frame))}" for g in profile.grippers]
            or ["none"]
        ),
        "",
    ]
    return "\n".join(lines)
