"""The profile as the model reads it in Resident context (compact, 3 decimals)."""

from __future__ import annotations

from embodiment.profile.model import EmbodimentProfile
from embodiment.profile.parts import Vec3

__all__ = ["render_profile"]


def _xyz(point: Vec3) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in point) + ")"


def render_profile(profile: EmbodimentProfile) -> str:
    """The profile as the model reads it in Resident context: compact, numbers to 3
    decimals, world-frame positions where that helps the model act."""
    lines = [f"Embodiment: {profile.name} ({profile.kind.replace('_', ' ')})"]
    if profile.description:
        lines.append(profile.description.strip())
    base_origin, base_yaw = profile.frame_pose_in_world("base")
    lines.append(
        f"Frames: world (all tool coordinates, metres); base at {_xyz(base_origin)} "
        f"yaw {base_yaw:.3f} rad" + (" (moves with the robot)" if profile.mobile else "")
    )
    base = profile.base
    base_text = f"Base: {base.mobility}, footprint {base.footprint.text()}"
    if base.footprint.description:
        base_text += f" ({base.footprint.description.strip()})"
    if profile.mobile:
        base_text += (
            f"; per call at most {base.max_step_m:.3f} m / {base.max_turn_rad:.3f} rad; moves "
            f"are clamped to measured clearance minus {base.clearance_margin_m:.3f} m"
        )
    if base.description:
        base_text += f". {base.description.strip()}"
    lines.append(base_text)
    ws = profile.workspace
    lines.append(
        f"Reachable workspace ({ws.frame} frame): {ws.span()}"
        + (f". {ws.description.strip()}" if ws.description else "")
    )
    if profile.sensors:
        lines.append("Sensors: " + ", ".join(profile.sensors))
    for camera in profile.cameras:
        world = profile.to_world(camera.position, camera.frame)
        look = profile.to_world(profile.camera_look_at(camera), camera.frame)
        visibility = "every turn" if camera.model_visible else "on request (look)"
        text = (
            f"Camera {camera.name}: at {_xyz(world)} looking at {_xyz(look)}, "
            f"{camera.width}x{camera.height}, {visibility}"
        )
        if camera.description:
            text += f". {camera.description.strip()}"
        lines.append(text)
    for gripper in profile.grippers:
        start = profile.to_world(gripper.initial_position, gripper.frame)
        text = f"Gripper {gripper.name}: {gripper.kind}"
        if gripper.max_opening_m is not None:
            text += f", opens to {gripper.max_opening_m:.3f} m"
        text += f", starts at {_xyz(start)}"
        if gripper.description:
            text += f". {gripper.description.strip()}"
        lines.append(text)
    limits = profile.limits
    lines.append(
        f"Limits: payload {limits.payload_kg:g} kg, speed {limits.min_speed_m_s:g}.."
        f"{limits.max_speed_m_s:g} m/s, force {limits.min_force_n:g}..{limits.max_force_n:g} "
        f"N, at most {limits.max_step_m:.3f} m per motion"
    )
    margin = profile.safety.keep_out_margin_m
    for zone in profile.keep_out:
        text = f"Keep out {zone.name} ({zone.frame} frame): {zone.span()}"
        if margin:
            text += f", paths stay {margin:.3f} m clear"
        if zone.description:
            text += f". {zone.description.strip()}"
        lines.append(text)
    lines.append(
        "Safety: every segment of a physical call's motion is checked against these limits "
        "before it runs; small overshoots are clamped, anything else is blocked, and the "
        "result says which limit applied."
    )
    lines.extend(f"Note: {note.strip()}" for note in profile.notes if note.strip())
    return "\n".join(lines)
