"""Config files and overrides -> a validated :class:`~harness.config.HarnessConfig`.

``load_config`` reads a YAML file (refusing an embodiment profile handed over as a
config), ``apply_overrides`` merges ``key.path=value`` strings or a mapping, and
``validate_config`` turns pydantic's errors into one :class:`~harness.errors.ConfigError`
that names the key, the value and the source. Relative paths resolve against the file's
folder (``base_dir``). Re-exported by :mod:`harness.config`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness.config.schema import HarnessConfig
from harness.config.wording import format_validation_error
from harness.errors import ConfigError

__all__ = [
    "PROFILE_ONLY_KEYS",
    "apply_overrides",
    "load_config",
    "resolve_config",
    "validate_config",
    "with_overrides",
]


def _set_path(tree: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = tree
    for index, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = {}
            node[part] = child
        if not isinstance(child, dict):
            prefix = ".".join(parts[: index + 1])
            raise ConfigError(
                f"override {dotted!r}: {prefix} is {child!r}, not a mapping",
                key=dotted,
                value=value,
            )
        node = child
    node[parts[-1]] = value


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def apply_overrides(
    data: Mapping[str, Any], overrides: Iterable[str] | Mapping[str, Any]
) -> dict[str, Any]:
    """Merge ``key.path=value`` strings (values parsed as YAML) or a nested mapping.

    ``data`` is never changed (it is copied deeply first: module-level defaults are passed
    here, and an override must not leak into the next config built from them)."""
    result = _merge({}, copy.deepcopy(dict(data)))
    if isinstance(overrides, Mapping):
        return _merge(result, overrides)
    for override in overrides:
        if "=" not in override:
            raise ConfigError(
                f"override {override!r}: expected KEY.PATH=VALUE", key=override, value=None
            )
        key, raw = override.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"override {override!r}: empty key", key=key, value=raw)
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"override {key}: value {raw!r} is not YAML: {exc}") from exc
        _set_path(result, key, value)
    return result


PROFILE_ONLY_KEYS = frozenset(
    {"kind", "frames", "base", "workspace", "sensors", "cameras", "grippers", "limits"}
)
"""Top-level keys of an embodiment profile that a harness config never has."""


def _looks_like_profile(data: Mapping[str, Any]) -> bool:
    keys = set(data)
    return bool(keys & PROFILE_ONLY_KEYS) and not keys & set(HarnessConfig.model_fields)


def _profile_not_config(file: Path, what: str) -> str:
    return (
        f"{file} is {what}, not a harness config: set `embodiment:` to its path in a "
        f"harness config (relative to that config file's folder), or pass "
        f"--set embodiment={file.resolve()}"
    )


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Iterable[str] | Mapping[str, Any] = (),
) -> HarnessConfig:
    """Load and validate a config file (or the defaults when ``path`` is None).

    Raises :class:`ConfigError` naming the file, the key path, the value and the
    expectation.
    """
    data: dict[str, Any] = {}
    source = "config"
    base_dir: str | None = None
    if path is not None:
        file = Path(path)
        source = str(file)
        if file.is_dir():
            raise ConfigError(_folder_not_config(file), key=None, value=str(file))
        if not file.is_file():
            raise ConfigError(f"config file not found: {file}", key=None, value=str(file))
        if file.suffix.lower() in (".md", ".markdown"):
            raise ConfigError(_profile_not_config(file, "a Markdown (Thea) embodiment profile"))
        try:
            loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{file}: not valid YAML: {exc}") from exc
        if loaded is None:  # nothing but blank lines and comments: a mistake, not a config
            raise ConfigError(
                f"{file} is empty: a harness config names at least its model and robot "
                "(configs/default.yaml is an example; harness worlds lists the built-in "
                "deployments)",
                key=None,
                value=str(file),
            )
        if not isinstance(loaded, dict):
            raise ConfigError(
                f"{file}: the top level must be a mapping, got {type(loaded).__name__}"
            )
        if _looks_like_profile(loaded):
            raise ConfigError(_profile_not_config(file, "an embodiment profile"))
        data = loaded
        base_dir = str(file.resolve().parent)
    merged = apply_overrides(data, overrides)
    try:
        return validate_config(merged, source=source, base_dir=base_dir)
    except ConfigError as exc:
        if not overrides or merged == data:
            raise
        validate_config(data, source=source)  # the file's own error, when it has one
        # The file alone is valid: an override is what is wrong, so the error names it.
        return validate_config(
            merged, source=_override_source(overrides, exc.key), base_dir=base_dir
        )


def _override_source(overrides: Iterable[str] | Mapping[str, Any], key: str | None) -> str:
    """How an error names the overrides: ``--set KEY=VALUE``, the one whose key is (or
    holds, or lies under) the bad ``key`` when one does, else every one given."""
    if isinstance(overrides, Mapping):
        return "the overrides"
    given = list(overrides)

    def related(override: str) -> bool:
        name = override.partition("=")[0].strip()
        return bool(key) and (
            name == key or key.startswith(name + ".") or name.startswith(f"{key}.")
        )

    return " ".join(f"--set {o}" for o in ([o for o in given if related(o)] or given))


def _folder_not_config(folder: Path) -> str:
    """A folder given where a config file belongs, with the YAML files it holds."""
    found = sorted(p.name for p in folder.glob("*.y*ml") if p.is_file())
    hint = f" (YAML files in it: {', '.join(found[:5])})" if found else ""
    return f"{folder} is a folder, not a config file; give a YAML file{hint}"


def validate_config(
    data: Mapping[str, Any], *, source: str = "config", base_dir: str | None = None
) -> HarnessConfig:
    """Validate a config mapping; a :class:`ConfigError` names the key, value and source."""
    try:
        config = HarnessConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        raise ConfigError(
            format_validation_error(exc, source=source, schema=HarnessConfig),
            key=key,
            value=first.get("input"),
        ) from None
    if base_dir is not None:
        config.base_dir = base_dir
    return config


def with_overrides(
    config: HarnessConfig, overrides: Iterable[str] | Mapping[str, Any]
) -> HarnessConfig:
    """``config`` with dotted overrides merged in (relative paths keep their base)."""
    if not overrides:
        return config
    data = apply_overrides(config.model_dump(exclude={"base_dir"}), overrides)
    return validate_config(data, base_dir=config.base_dir)


def resolve_config(
    config: str | os.PathLike[str] | HarnessConfig | Mapping[str, Any] | None,
    *,
    overrides: Iterable[str] | Mapping[str, Any] = (),
) -> HarnessConfig:
    """Whatever a caller passed as a config (a file, a built config, a mapping such as
    the one a run store recorded, or None for the defaults), with overrides applied."""
    if isinstance(config, HarnessConfig):
        return with_overrides(config, overrides)
    if isinstance(config, Mapping):
        return validate_config(apply_overrides(dict(config), overrides))
    return load_config(config, overrides=overrides)
