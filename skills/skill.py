"""One skill: a folder ``<name>/SKILL.md`` (YAML front matter + markdown body) and resources.

Parsing is strict because a skill is instructions the model will follow on a robot: a typo
in a key, a body that is empty or a name that does not match its folder is far more likely
a mistake than an intention, so it fails at startup with the file and the problem instead
of silently producing a skill that says nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "SKILL_FILE",
    "SKILL_NAME_PATTERN",
    "Skill",
    "SkillFrontMatter",
    "SkillProblem",
    "parse_skill",
]

SKILL_FILE = "SKILL.md"
SKILL_NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")
"""Lowercase letters and digits separated by single hyphens or underscores (no dots or
slashes, so a name can never address anything but its own folder)."""
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
"""The catalog is Resident in every request: descriptions are a line, not a manual."""
MAX_WHEN_TO_USE_CHARS = 512
MAX_LISTED_RESOURCES = 40


class SkillProblem(ValueError):
    """A skill file is invalid. ``path`` names the file, ``problem`` says what is wrong."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class SkillFrontMatter(BaseModel):
    """The YAML front matter of ``SKILL.md``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    """Must equal the folder name."""
    description: str = Field(min_length=1, max_length=MAX_DESCRIPTION_CHARS)
    """What the skill does, shown in the Skill Catalog."""
    tools: list[str] = Field(default_factory=list)
    """Tools the skill's instructions use (informational, shown with the body)."""
    when_to_use: str = Field("", max_length=MAX_WHEN_TO_USE_CHARS)
    """When the model should load it, shown in the Skill Catalog."""
    license: str | None = None
    """Accepted for compatibility with skills written for other agents."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form extra data (ignored by the harness)."""

    @field_validator("name")
    @classmethod
    def _name_pattern(cls, value: str) -> str:
        if not SKILL_NAME_PATTERN.match(value):
            raise ValueError(
                f"must be lowercase letters and digits separated by '-' or '_' (got {value!r})"
            )
        return value

    @field_validator("description", "when_to_use")
    @classmethod
    def _one_paragraph(cls, value: str) -> str:
        return " ".join(value.split())

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.strip():
                raise ValueError("tool names must be non-empty strings")
        return [name.strip() for name in value]


class Skill(BaseModel):
    """A validated skill: its front matter, body and the resource files next to it."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    when_to_use: str = ""
    tools: list[str] = Field(default_factory=list)
    body: str
    folder: Path
    """The skill's folder, resolved (symlinks followed)."""
    resources: list[str] = Field(default_factory=list)
    """Other text files in the folder, as POSIX paths relative to it."""
    builtin: bool = False

    @property
    def file(self) -> Path:
        return self.folder / SKILL_FILE

    def catalog_line(self) -> str:
        line = f"- {self.name}: {self.description}"
        if self.when_to_use:
            line += f" Use when: {self.when_to_use}"
        return line

    def loaded_text(self) -> str:
        """What ``load_skill`` puts in Resident: the body, then what it uses and offers."""
        parts = [self.body]
        if self.tools:
            parts.append("Tools this skill uses: " + ", ".join(self.tools) + ".")
        if self.resources:
            shown = self.resources[:MAX_LISTED_RESOURCES]
            more = len(self.resources) - len(shown)
            listing = ", ".join(shown) + (f" (+{more} more)" if more else "")
            parts.append(f"Resources (read one with load_skill_resource): {listing}.")
        return "\n\n".join(parts)


def _split_front_matter(path: Path, text: str) -> tuple[str, str]:
    """(front matter YAML, body) of a SKILL.md; the file must start with a ``---`` line."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillProblem(
            path,
            "missing front matter: the file must start with a '---' line, then YAML "
            "with name and description, then '---'",
        )
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise SkillProblem(path, "front matter is not closed: no second '---' line")


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(front matter)"
        if item["type"] == "extra_forbidden":
            known = ", ".join(SkillFrontMatter.model_fields)
            problems.append(f"unknown front matter key {key!r} (known keys: {known})")
        elif item["type"] == "missing":
            problems.append(f"front matter key {key!r} is required")
        else:
            problems.append(f"front matter key {key!r}: {item['msg']}")
    return "; ".join(problems)


def parse_skill(folder: Path, *, resources: list[str], builtin: bool = False) -> Skill:
    """Parse and validate ``folder/SKILL.md``. Raises :class:`SkillProblem`."""
    path = folder / SKILL_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SkillProblem(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise SkillProblem(path, f"cannot be read: {exc.strerror or exc}") from None
    header, body = _split_front_matter(path, text.lstrip("\ufeff"))
    try:
        data = yaml.safe_load(header)
    except yaml.YAMLError as exc:
        raise SkillProblem(path, f"front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise SkillProblem(path, f"front matter must be a YAML mapping, got {kind}")
    try:
        meta = SkillFrontMatter.model_validate(data)
    except ValidationError as exc:
        raise SkillProblem(path, _describe(exc)) from None
    if meta.name != folder.name:
        raise SkillProblem(path, f"name {meta.name!r} does not match its folder {folder.name!r}")
    body = body.strip()
    if not body:
        raise SkillProblem(
            path, "empty body: write the skill's instructions after the front matter"
        )
    return Skill(
        name=meta.name,
        description=meta.description,
        when_to_use=meta.when_to_use,
        tools=meta.tools,
        body=body,
        folder=folder.resolve(),
        resources=resources,
        builtin=builtin,
    )
