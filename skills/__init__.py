"""Skills: markdown procedures the model can load into Resident context when it needs them.

A skill is a folder ``<name>/SKILL.md`` (YAML front matter with ``name``, ``description``,
optional ``tools`` and ``when_to_use``, then a markdown body) plus optional resource
files. :class:`SkillCatalog` discovers and validates them (the built-in library in
``skills/library`` plus configured folders), renders the catalog, and serves bodies and
bounded resources without ever reading outside a skill's folder.
"""

from skills.catalog import (
    BUILTIN_LIBRARY,
    InvalidResourceError,
    SkillCatalog,
    SkillValidationError,
    UnknownSkillError,
    discover_skills,
)
from skills.skill import Skill, SkillFrontMatter, SkillProblem, parse_skill

__all__ = [
    "BUILTIN_LIBRARY",
    "InvalidResourceError",
    "Skill",
    "SkillCatalog",
    "SkillFrontMatter",
    "SkillProblem",
    "SkillValidationError",
    "UnknownSkillError",
    "discover_skills",
    "parse_skill",
]
