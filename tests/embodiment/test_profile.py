"""Embodiment profiles: built-ins, validation errors that name the field, Thea import."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from embodiment.profile import (
    EmbodimentProfile,
    ProfileError,
    builtin_profiles,
    load_profile,
    render_profile,
)
from embodiment.thea import parse_thea_markdown, to_thea_markdown
from harness import Harness, HarnessConfig
from harness.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "embodiments"


def panda_data() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "embodiment" / "profiles" / "panda_tabletop.yaml").read_text())


def problems_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ProfileError) as info:
        load_profile(data)
    return info.value.problems


def test_builtin_profile_loads_by_name_and_renders_compactly() -> None:
    assert "panda_tabletop" in builtin_profiles()
    profile = load_profile("panda_tabletop")
    assert profile.kind == "arm" and not profile.mobile
    text = render_profile(profile)
    assert "Reachable workspace (world frame): x 0.200..0.780" in text
    assert "Camera front" in text and "every turn" in text
    assert "Keep out robot_base" in text
    assert "starts at (0.307, 0.000, 1.110)" in text  # base frame -> world frame
    assert len(text) < 2500


WORLD_PROFILES = sorted((ROOT / "worlds").glob("*/*.yaml"))
"""Profiles the worlds ship (their folders' YAML files other than eval configs)."""


@pytest.mark.parametrize(
    "path",
    [*sorted(EXAMPLES.iterdir()), *(p for p in WORLD_PROFILES if p.name != "eval.yaml")],
    ids=lambda p: p.name,
)
def test_every_example_profile_validates(path: Path) -> None:
    profile = load_profile(path)
    assert render_profile(profile)


def test_missing_items_are_named() -> None:
    data = panda_data()
    del data["limits"]
    del data["workspace"]
    problems = problems_of(data)
    assert "limits: required field is missing" in problems
    assert "workspace: required field is missing" in problems


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["cameras"][0].update(frame="wrist"), "cameras.0.frame: unknown frame 'wrist'"),
        (
            lambda d: d["base"].update(mobility="holonomic"),
            "base.mobility: an arm has a fixed base",
        ),
        (
            lambda d: d["grippers"][0].update(initial_position=[2.0, 0.0, 0.4]),
            "grippers.0.initial_position",
        ),
        (lambda d: d.update(sensors=["rgb", "sonar"]), "sensors: unknown modality 'sonar'"),
        (lambda d: d["workspace"].update(min=[0.9, -0.4, 0.7]), "min.x (0.9) must be below max.x"),
        (lambda d: d["limits"].update(default_speed_m_s=2.0), "default_speed_m_s (2.0) exceeds"),
        (lambda d: d["cameras"].append(dict(d["cameras"][0])), "cameras.2.name: duplicate camera"),
        (lambda d: d.update(sensors=["joint_state"]), "sensors: cameras are declared but no 'rgb'"),
        (lambda d: d["frames"]["base"].update(parent="table"), "frames.base.parent: unknown frame"),
        (lambda d: d.update(grippers=[]), "grippers: a arm needs at least one gripper"),
        (lambda d: d.update(colour="red"), "colour: unknown field"),
    ],
)
def test_inconsistent_profiles_name_the_field(change: Any, expected: str) -> None:
    data = panda_data()
    change(data)
    problems = problems_of(data)
    assert any(expected in problem for problem in problems), problems


def test_mobile_base_needs_step_limits_and_clearance() -> None:
    data = yaml.safe_load((ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml").read_text())
    del data["base"]["max_step_m"]
    data["sensors"] = ["rgb", "joint_state"]
    problems = problems_of(data)
    assert any(p.startswith("base.max_step_m: required for a mobile base") for p in problems)
    assert any("needs clearance readings" in p for p in problems)


def test_unknown_file_lists_builtins(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile(str(tmp_path / "nope.yaml"))
    assert re.search(r"built-in: [a-z_, ]*panda_tabletop", str(info.value))


def test_frames_transform_between_base_and_world() -> None:
    profile = load_profile(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml")
    pose = (1.0, 2.0, 1.5707963267948966)
    world = profile.to_world((0.5, 0.0, 1.0), "base", base_pose=pose)
    assert world == pytest.approx((1.0, 2.5, 1.0))
    assert profile.from_world(world, "base", base_pose=pose) == pytest.approx((0.5, 0.0, 1.0))


# --------------------------------------------------------------------------- Thea Markdown


def test_thea_markdown_imports_all_seven_items() -> None:
    profile = load_profile(EXAMPLES / "thea_example.md")
    assert profile.name == "thea_example"
    assert profile.kind == "mobile_manipulator"
    assert profile.base.mobility == "holonomic"
    assert profile.base.footprint.size == (0.60, 0.50)
    assert profile.workspace.frame == "base"
    assert profile.workspace.min == (0.20, -0.45, 0.30)
    assert {"rgb", "joint_state", "gripper_state", "lidar", "clearance"} <= set(profile.sensors)
    assert [c.name for c in profile.cameras] == ["head"]
    assert profile.cameras[0].look_at == (0.70, 0.0, 0.70)
    assert profile.grippers[0].initial_position == (0.40, 0.0, 0.90)
    assert profile.limits.max_speed_m_s == 0.1  # conservative default, and said so
    assert "conservative defaults" in render_profile(profile)


def test_thea_missing_section_and_item_are_named() -> None:
    text = (EXAMPLES / "thea_example.md").read_text()
    text = text.replace("### Base Mobility", "### Wheels")
    text = text.split("## Base-Relative Positions")[0]
    with pytest.raises(ProfileError) as info:
        parse_thea_markdown(text)
    problems = info.value.problems
    assert "Operational Envelope > Base Mobility: item '### Base Mobility' is missing" in problems
    assert any(p.startswith("section '## Base-Relative Positions' is missing") for p in problems)


def test_thea_unreadable_numbers_are_named() -> None:
    text = (EXAMPLES / "thea_example.md").read_text()
    text = text.replace("x 0.20..0.85, y -0.45..0.45, z 0.30..1.40 m", "about an arm's length")
    with pytest.raises(ProfileError) as info:
        parse_thea_markdown(text)
    assert any("Reachable Workspace: no range for x, y, z" in p for p in info.value.problems)


def test_yaml_profile_refines_a_thea_file(tmp_path: Path) -> None:
    (tmp_path / "robot.md").write_text((EXAMPLES / "thea_example.md").read_text())
    (tmp_path / "robot.yaml").write_text(
        "thea: robot.md\nname: rover\nlimits: {payload_kg: 2, max_speed_m_s: 0.5, "
        "max_force_n: 50, max_step_m: 0.4}\nnotes: []\n"
    )
    profile = load_profile(tmp_path / "robot.yaml")
    assert profile.name == "rover"
    assert profile.limits.max_speed_m_s == 0.5
    assert profile.base.mobility == "holonomic"


def test_thea_export_round_trips_the_seven_items() -> None:
    original = load_profile("panda_tabletop")
    data = parse_thea_markdown(to_thea_markdown(original))
    data["name"] = "copy"
    copy = EmbodimentProfile.model_validate(data)
    to_world = original.to_world
    assert copy.workspace.min == pytest.approx((*original.workspace.min[:2], 0.01))
    assert copy.grippers[0].initial_position == pytest.approx(
        original.from_world(to_world((0.307, 0.0, 0.485), "base"), "base")
    )
    assert [c.name for c in copy.cameras] == ["front"]
    assert copy.base.footprint.size == original.base.footprint.size


# --------------------------------------------------------------------------- config


def test_config_names_the_key_for_a_bad_profile(tmp_path: Path) -> None:
    config = HarnessConfig.model_validate(
        {"embodiment": str(tmp_path / "missing.yaml"), "driver": None, "run": {"store": None}}
    )
    from harness.providers import ScriptedModel

    with pytest.raises(ConfigError) as info:
        Harness.from_config(config, model=ScriptedModel([]))
    assert info.value.key == "embodiment"


def test_inline_profile_is_rendered_into_resident() -> None:
    data = panda_data()
    config = HarnessConfig.model_validate(
        {"embodiment": data, "driver": None, "run": {"store": None}, "memory": {"enabled": False}}
    )
    from harness.providers import ScriptedModel, reply

    with Harness.from_config(config, model=ScriptedModel([reply("done")])) as h:
        h.run("nothing to do")
        system = h.model.requests[0].system
    embodiment = [block.text for block in system if block.name == "embodiment"]
    assert embodiment and embodiment[0].startswith("Embodiment: panda_tabletop (arm)")
