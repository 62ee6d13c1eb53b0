"""Loading a profile: a built-in name, a YAML or Thea Markdown file, or a mapping, with
one error line per bad field, each naming the dotted key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from embodiment.errors import ProfileError
from embodiment.profile.model import EmbodimentProfile
from embodiment.profile.parts import SNAKE_CASE
from embodiment.thea import parse_thea_markdown

__all__ = ["PACKAGE_DATA", "PYBULLET_DATA", "builtin_profiles", "load_profile"]

PYBULLET_DATA = "pybullet_data:"
PACKAGE_DATA = "package:"
"""``package:<module>/<path>``: a file inside an installed Python package, found when the
model is loaded (so a profile naming one loads without the package, and its kinematics
fail closed until the package is installed)."""
"""Prefix of a URDF path inside PyBullet's data package (``pybullet_data:xarm/...``)."""


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped inside the package (``embodiment/profiles/``)."""
    folder = resources.files("embodiment") / "profiles"
    return sorted(
        entry.name.rsplit(".", 1)[0] for entry in folder.iterdir() if entry.name.endswith(".yaml")
    )


def load_profile(
    source: str | Path | Mapping[str, Any], *, base_dir: str | Path | None = None
) -> EmbodimentProfile:
    """A profile from a built-in name, a YAML or Thea Markdown file, or a mapping.

    A YAML profile may name a Thea Markdown file under ``thea:``; its seven items are read
    first and the YAML keys refine them (typically ``name``, ``kind`` and ``limits``).
    Raises :class:`ProfileError` naming every bad field.
    """
    if isinstance(source, Mapping):
        return _validate(dict(source), "(inline mapping)", base_dir=base_dir)
    text = str(source)
    if isinstance(source, str) and SNAKE_CASE.match(text) and text in builtin_profiles():
        resource = resources.files("embodiment") / "profiles" / f"{text}.yaml"
        return _validate(_read_yaml(resource.read_text("utf-8"), text), text, base_dir=None)
    path = Path(text).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not path.is_file():
        raise ProfileError(
            text,
            [
                f"not found: {path} is not a file and {text!r} is not a built-in profile "
                f"(built-in: {', '.join(builtin_profiles())})"
            ],
        )
    if path.suffix.lower() in {".md", ".markdown"}:
        data = parse_thea_markdown(path.read_text("utf-8"), source=str(path))
        data.setdefault("name", _snake(path.stem))
        return _validate(data, str(path), base_dir=path.parent)
    return _validate(
        _read_yaml(path.read_text("utf-8"), str(path)), str(path), base_dir=path.parent
    )


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it: a profile is read at every harness
start, and the pure-Python parser takes about 4 ms for the Panda's (libyaml: 0.5 ms)."""


def _read_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise ProfileError(source, [f"not valid YAML: {exc}"]) from None
    if not isinstance(data, dict):
        raise ProfileError(source, [f"the top level must be a mapping, got {type(data).__name__}"])
    return data


def _validate(
    data: dict[str, Any], source: str, *, base_dir: str | Path | None
) -> EmbodimentProfile:
    thea = data.pop("thea", None)
    if thea is not None:
        path = Path(str(thea)).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        if not path.is_file():
            raise ProfileError(source, [f"thea: file not found: {path}"])
        data = _merge(parse_thea_markdown(path.read_text("utf-8"), source=str(path)), data)
    kinematics = data.get("kinematics")
    if isinstance(kinematics, Mapping) and isinstance(kinematics.get("urdf"), str):
        data["kinematics"] = {
            **kinematics,
            "urdf": _resolve_urdf(kinematics["urdf"], source, base_dir),
        }
    try:
        return EmbodimentProfile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(source, _problems(exc)) from None


def _resolve_urdf(urdf: str, source: str, base_dir: str | Path | None) -> str:
    """A relative URDF path is relative to the profile file; it must exist."""
    if urdf.startswith((PYBULLET_DATA, PACKAGE_DATA)):
        return urdf
    path = Path(urdf).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not path.is_file():
        raise ProfileError(source, [f"kinematics.urdf: file not found: {path} (got {urdf!r})"])
    return str(path)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _problems(error: ValidationError) -> list[str]:
    """One line per problem, each starting with the dotted field it is about."""
    lines: list[str] = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        if problem["type"] == "missing":
            lines.append(f"{where}: required field is missing")
        elif problem["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown field; check the spelling")
        elif not where:
            lines.extend(message.splitlines())
        else:
            shown = repr(problem.get("input"))
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            lines.append(f"{where}: {message} (got {shown})")
    return lines


def _snake(text: str) -> str:
    value = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return value if value and value[0].isalpha() else f"robot_{value}"
