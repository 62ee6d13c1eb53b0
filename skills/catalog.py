"""The skill library of a session: discovery, validation, the catalog, bodies and resources.

Skill folders come from the built-in library shipped in this package (``skills/library``)
and from configured paths. Every problem found at startup is collected and raised together
(:class:`SkillValidationError`), each naming its file, so one run shows everything to fix.

Nothing here can be made to read outside a skill's folder, or anything in it that the
catalog does not list: names are matched against the catalog, never joined onto a path;
resource paths are refused when they are absolute, contain ``..`` or resolve (through
symlinks) outside the folder; and only files listed as resources when the catalog was
built (or last reloaded) are read, never a hidden file (``.env``, ``.git/config``) or one
added later. The checks run again on every read, because files can change after startup,
and a read takes at most what was asked for from disk, however large the file.
"""

from __future__ import annotations

import codecs
import difflib
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath

from skills.skill import MAX_LISTED_RESOURCES, SKILL_FILE, Skill, SkillProblem, parse_skill

__all__ = [
    "BUILTIN_LIBRARY",
    "InvalidResourceError",
    "SkillCatalog",
    "SkillValidationError",
    "UnknownSkillError",
    "discover_skills",
]

BUILTIN_LIBRARY = Path(__file__).resolve().parent / "library"
"""The skills shipped with the package (useful for the built-in demo task)."""

_IGNORED_NAMES = frozenset({"__pycache__"})

RESOURCE_READ_MIN_BYTES = 65_536
"""A resource read takes at most ``max(this, 4 * (max_chars + 1))`` bytes from disk (the
most ``max_chars`` UTF-8 characters and one more can take): a file that fits is read
whole, so its length is known exactly; a larger one is never read past that."""

CATALOG_HEADER = (
    "Skill Catalog: tested procedures for recurring situations. When one fits the task, "
    "call load_skill(name) and follow it; it stays available for the rest of the task."
)


class SkillValidationError(ValueError):
    """One or more skills are invalid; ``problems`` names each file and what is wrong."""

    def __init__(self, problems: Sequence[SkillProblem]) -> None:
        self.problems = list(problems)
        lines = [f"{len(self.problems)} invalid skill(s):"]
        lines.extend(f"  {problem}" for problem in self.problems)
        super().__init__("\n".join(lines))


class UnknownSkillError(KeyError):
    """A skill or resource name that is not in the catalog; the message lists close matches."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidResourceError(ValueError):
    """A resource path that would leave the skill's folder, or a file that is not text."""


def _hidden(name: str) -> bool:
    return name.startswith(".") or name in _IGNORED_NAMES


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _scan_resources(folder: Path, problems: list[SkillProblem]) -> list[str]:
    """Text resources of a skill (every non-hidden file but SKILL.md), symlinks checked."""
    root = folder.resolve()
    found: list[str] = []
    for current, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        here = Path(current)
        for entry in [*dirs]:
            target = (here / entry).resolve()
            if (here / entry).is_symlink() and not _inside(target, root):
                problems.append(
                    SkillProblem(
                        here / entry, f"symlink points outside its skill folder (to {target})"
                    )
                )
                dirs.remove(entry)
        for name in sorted(files):
            if _hidden(name):
                continue
            path = here / name
            relative = path.relative_to(folder).as_posix()
            if relative == SKILL_FILE:
                continue
            target = path.resolve()
            if not _inside(target, root):
                problems.append(
                    SkillProblem(path, f"symlink points outside its skill folder (to {target})")
                )
                continue
            found.append(relative)
    return sorted(found)


def _skill_folders(root: Path, problems: list[SkillProblem]) -> Iterator[Path]:
    """The skill folders under one configured path (or the path itself if it is one)."""
    if not root.exists():
        problems.append(SkillProblem(root, "skills path does not exist"))
        return
    if not root.is_dir():
        problems.append(SkillProblem(root, "skills path is not a folder"))
        return
    if (root / SKILL_FILE).exists():
        yield root
        return
    resolved_root = root.resolve()
    for child in sorted(root.iterdir()):
        if _hidden(child.name) or not child.is_dir():
            continue
        if child.is_symlink() and not _inside(child.resolve(), resolved_root):
            problems.append(
                SkillProblem(
                    child, f"skill folder is a symlink outside {root} (to {child.resolve()})"
                )
            )
            continue
        if not (child / SKILL_FILE).exists():
            problems.append(
                SkillProblem(
                    child / SKILL_FILE,
                    "missing: every folder in a skills path must hold a SKILL.md",
                )
            )
            continue
        yield child


def discover_skills(paths: Iterable[Path | str], *, include_builtin: bool = True) -> list[Skill]:
    """Find, parse and validate every skill; raise :class:`SkillValidationError` listing
    every problem (missing or bad front matter, empty bodies, duplicate names, escapes)."""
    problems: list[SkillProblem] = []
    roots: list[tuple[Path, bool]] = []
    if include_builtin:
        roots.append((BUILTIN_LIBRARY, True))
    roots.extend((Path(path), False) for path in paths)
    skills: dict[str, Skill] = {}
    for root, builtin in roots:
        for folder in _skill_folders(root, problems):
            file = folder / SKILL_FILE
            if not _inside(file.resolve(), folder.resolve()):
                target = file.resolve()
                problems.append(
                    SkillProblem(file, f"symlink points outside its skill folder (to {target})")
                )
                continue
            if not file.is_file():
                problems.append(SkillProblem(file, "is not a regular file"))
                continue
            resources = _scan_resources(folder, problems)
            try:
                skill = parse_skill(folder, resources=resources, builtin=builtin)
            except SkillProblem as problem:
                problems.append(problem)
                continue
            existing = skills.get(skill.name)
            if existing is not None:
                hint = (
                    " (set skills.builtin: false to replace the built-in library)"
                    if existing.builtin
                    else ""
                )
                problems.append(
                    SkillProblem(
                        file,
                        f"duplicate skill name {skill.name!r}, already defined in "
                        f"{existing.file}{hint}",
                    )
                )
                continue
            skills[skill.name] = skill
    if problems:
        raise SkillValidationError(problems)
    return sorted(skills.values(), key=lambda s: s.name)


class SkillCatalog:
    """The session's skills (implements the harness's ``SkillLibrary`` protocol).

    Built once when the session is created; the catalog text is therefore byte-identical
    across tasks, which keeps the Resident prefix cacheable.
    """

    def __init__(self, skills: Iterable[Skill]) -> None:
        self._skills: dict[str, Skill] = {}
        self._sources: tuple[list[Path | str], bool] | None = None
        for skill in skills:
            if skill.name in self._skills:
                raise SkillValidationError(
                    [SkillProblem(skill.file, f"duplicate skill name {skill.name!r}")]
                )
            self._skills[skill.name] = skill

    @classmethod
    def from_paths(
        cls, paths: Iterable[Path | str] = (), *, include_builtin: bool = True
    ) -> SkillCatalog:
        paths = list(paths)
        catalog = cls(discover_skills(paths, include_builtin=include_builtin))
        catalog._sources = (paths, include_builtin)
        return catalog

    def reload(self) -> None:
        """Discover the skills again from the same paths: files added since become
        readable resources, removed ones stop being. Raises :class:`SkillValidationError`
        (leaving the catalog as it was) when a skill became invalid. The catalog text can
        change, so do it between sessions' tasks, not in the middle of one."""
        if self._sources is None:
            raise RuntimeError("only a catalog built with SkillCatalog.from_paths can reload")
        paths, include_builtin = self._sources
        fresh = discover_skills(paths, include_builtin=include_builtin)
        self._skills = {skill.name: skill for skill in fresh}

    # ------------------------------------------------------------------ lookup

    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self._skills[name] for name in self.names())

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def names(self) -> list[str]:
        return sorted(self._skills)

    def get(self, name: str) -> Skill:
        """The skill called ``name``; :class:`UnknownSkillError` (a KeyError) with close
        matches otherwise."""
        skill = self._skills.get(name)
        if skill is None:
            raise UnknownSkillError(_unknown("skill", name, self.names()))
        return skill

    # ------------------------------------------------------------------ the protocol

    def catalog_text(self) -> str:
        if not self._skills:
            return ""
        return "\n".join([CATALOG_HEADER, *(skill.catalog_line() for skill in self)])

    def body(self, name: str) -> str:
        """The text a loaded skill adds to Resident: its body, the tools it uses and the
        resources it offers."""
        return self.get(name).loaded_text()

    def resource(self, name: str, resource: str, *, max_chars: int) -> str:
        """A text resource of a skill, at most ``max_chars`` characters (a longer file is
        cut with a marker saying how much is missing, never silently).

        Only a file the catalog lists as one of the skill's resources is read, at most
        :data:`RESOURCE_READ_MIN_BYTES` or ``4 * (max_chars + 1)`` bytes of it."""
        skill = self.get(name)
        path = self._resource_path(skill, resource)
        limit = max(RESOURCE_READ_MIN_BYTES, 4 * (max_chars + 1))
        try:
            data, size = _read_at_most(path, limit)
        except OSError as exc:
            raise InvalidResourceError(
                f"resource {resource!r} of skill {name!r} cannot be read as a regular file "
                f"({exc.strerror or exc})"
            ) from None
        whole = len(data) >= size
        try:
            text = codecs.getincrementaldecoder("utf-8")().decode(data, final=whole)
        except UnicodeDecodeError:
            raise InvalidResourceError(
                f"resource {resource!r} of skill {name!r} is not a UTF-8 text file"
            ) from None
        if len(text) <= max_chars and whole:
            return text
        if whole:
            missing = f"{max_chars} of {len(text)} characters shown"
        else:
            missing = f"{max_chars} characters shown of a {size}-byte file"
        return text[:max_chars] + f"\n[... resource cut: {missing} ...]"

    def _resource_path(self, skill: Skill, resource: str) -> Path:
        if "\0" in resource or "\\" in resource:
            raise InvalidResourceError(
                f"resource path {resource!r} is not a plain relative path (use '/' separators)"
            )
        relative = PurePosixPath(resource)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise InvalidResourceError(
                f"resource path {resource!r} must be relative to the skill's folder and may "
                "not contain '..'"
            )
        path = skill.folder.joinpath(*relative.parts)
        target = path.resolve()
        if not _inside(target, skill.folder):
            raise InvalidResourceError(
                f"resource {resource!r} of skill {skill.name!r} resolves outside the skill's "
                "folder (symlink); refused"
            )
        # Listed, and (through a symlink inside the folder) landing on a listed file: a
        # hidden file, one added after start-up or a link to one reads as unknown.
        listed = set(skill.resources)
        if (
            relative.as_posix() not in listed
            or target.relative_to(skill.folder).as_posix() not in listed
            or not target.is_file()
        ):
            raise UnknownSkillError(
                _unknown(f"resource of skill {skill.name!r}", resource, skill.resources)
            )
        return target


def _read_at_most(path: Path, limit: int) -> tuple[bytes, int]:
    """The first ``limit`` bytes of a regular file and its size. The final component is
    opened without following a symlink (one swapped in after the checks is refused), and
    without blocking (a FIFO swapped in is refused, not waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return handle.read(limit), info.st_size


def _unknown(what: str, name: str, known: Sequence[str]) -> str:
    matches = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)
    message = f"unknown {what} {name!r}"
    if matches:
        message += f"; did you mean {', '.join(matches)}?"
    elif known:
        shown = list(known)[:MAX_LISTED_RESOURCES]
        message += f"; available: {', '.join(shown)}"
    else:
        message += "; there are none"
    return message
