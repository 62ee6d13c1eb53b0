"""Skill discovery, strict validation, the catalog, bodies and resources (no escapes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skills import (
    BUILTIN_LIBRARY,
    InvalidResourceError,
    SkillCatalog,
    SkillValidationError,
    UnknownSkillError,
    discover_skills,
)

TABLETOP_TOOLS = {
    "move_to",
    "pick",
    "place",
    "open_gripper",
    "close_gripper",
    "home",
    "look",
    "find_objects",
    "get_object_relations",
    "get_object_image",
    "update_task_notes",
    "recall",
    "notify_user",
    "query_user",
    "load_skill",
    "load_skill_resource",
}


def write_skill(
    root: Path,
    name: str,
    *,
    description: str = "Does a thing carefully.",
    body: str = "# Steps\n1. Look.\n2. Act.\n",
    extra: str = "",
    resources: dict[str, str] | None = None,
) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    header = f"---\nname: {name}\ndescription: {description}\n{extra}---\n"
    (folder / "SKILL.md").write_text(header + body, encoding="utf-8")
    for relative, text in (resources or {}).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def problems_of(paths: list[Path], *, include_builtin: bool = False) -> list[str]:
    with pytest.raises(SkillValidationError) as info:
        discover_skills(paths, include_builtin=include_builtin)
    return [str(problem) for problem in info.value.problems]


# --------------------------------------------------------------------------- built-in library


def test_builtin_library_is_valid_and_covers_the_tabletop_situations() -> None:
    catalog = SkillCatalog.from_paths()
    assert set(catalog.names()) == {
        "grasp-recovery",
        "object-search",
        "pick-and-place",
        "stacking",
    }
    for skill in catalog:
        assert skill.builtin and skill.folder.is_relative_to(BUILTIN_LIBRARY)
        assert skill.when_to_use, skill.name
        assert set(skill.tools) <= TABLETOP_TOOLS, skill.name
        # every tool the front matter declares is actually used in the instructions
        for tool in skill.tools:
            assert f"`{tool}" in skill.body or f"{tool}(" in skill.body, (skill.name, tool)
        # every resource the body points at exists
        for resource in skill.resources:
            assert resource in skill.body, (skill.name, resource)
            assert catalog.resource(skill.name, resource, max_chars=100_000)
    # the skills refer to each other by real names
    body = catalog.body("pick-and-place")
    assert "`grasp-recovery`" in body and "`object-search`" in body


def test_builtin_library_ships_as_package_data() -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert 'skills = ["library/**/*"]' in pyproject


# --------------------------------------------------------------------------- catalog


def test_catalog_text_lists_name_description_and_when(tmp_path: Path) -> None:
    write_skill(tmp_path, "wipe-table", extra="when_to_use: The table is dirty.\n")
    write_skill(tmp_path, "open-drawer", description="Open a drawer by its handle.")
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    lines = catalog.catalog_text().splitlines()
    assert "load_skill" in lines[0]
    assert lines[1:] == [
        "- open-drawer: Open a drawer by its handle.",
        "- wipe-table: Does a thing carefully. Use when: The table is dirty.",
    ]
    assert SkillCatalog([]).catalog_text() == ""


def test_body_lists_tools_and_resources(tmp_path: Path) -> None:
    write_skill(
        tmp_path,
        "sort",
        extra="tools: [pick, place]\n",
        resources={"table.md": "x", "data/colors.yaml": "red: 1", ".hidden": "no"},
    )
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    body = catalog.body("sort")
    assert body.startswith("# Steps")
    assert "Tools this skill uses: pick, place." in body
    assert "data/colors.yaml, table.md" in body
    assert ".hidden" not in body


def test_a_path_may_be_one_skill_folder(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "single")
    catalog = SkillCatalog.from_paths([folder], include_builtin=False)
    assert catalog.names() == ["single"]


def test_unknown_skill_lists_close_matches() -> None:
    catalog = SkillCatalog.from_paths()
    with pytest.raises(KeyError) as info:
        catalog.body("pick-and-plase")
    assert isinstance(info.value, UnknownSkillError)
    assert "did you mean pick-and-place" in str(info.value)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("# no front matter\n", "missing front matter"),
        ("---\nname: bad\ndescription: d\n", "front matter is not closed"),
        ("---\nname: [bad\n---\nbody\n", "not valid YAML"),
        ("---\n- a list\n---\nbody\n", "must be a YAML mapping, got a list"),
        ("---\n---\nbody\n", "must be a YAML mapping, got empty"),
        ("---\nname: bad\n---\nbody\n", "'description' is required"),
        ("---\nname: bad\ndescription: d\ndescripton: typo\n---\nbody\n", "'descripton'"),
        ("---\nname: bad\ndescription: d\ntools: pick\n---\nbody\n", "'tools'"),
        ("---\nname: other\ndescription: d\n---\nbody\n", "does not match its folder"),
        ("---\nname: bad\ndescription: d\n---\n   \n\n", "empty body"),
        ("---\nname: bad\ndescription: ''\n---\nbody\n", "'description'"),
    ],
)
def test_invalid_skill_names_file_and_problem(tmp_path: Path, content: str, problem: str) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "SKILL.md").write_text(content, encoding="utf-8")
    problems = problems_of([tmp_path])
    assert len(problems) == 1
    assert problems[0].startswith(str(folder / "SKILL.md") + ": ")
    assert problem in problems[0]


def test_bad_name_pattern_and_non_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "Bad.Name"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: Bad.Name\ndescription: d\n---\nx\n")
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "SKILL.md").write_bytes(b"---\nname: binary\n\xff\xfe---\n")
    problems = problems_of([tmp_path])
    assert any("Bad.Name" in p and "lowercase" in p for p in problems)
    assert any(str(binary / "SKILL.md") in p and "not UTF-8" in p for p in problems)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    (tmp_path / "no-file").mkdir()
    write_skill(tmp_path, "empty", body="")
    write_skill(tmp_path, "good")
    problems = problems_of([tmp_path, tmp_path / "missing"])
    assert len(problems) == 3
    joined = "\n".join(problems)
    assert "no-file/SKILL.md: missing" in joined
    assert "empty/SKILL.md: empty body" in joined
    assert f"{tmp_path / 'missing'}: skills path does not exist" in joined


def test_duplicate_names_across_paths(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_skill(first, "grip")
    write_skill(second, "grip")
    problems = problems_of([first, second])
    assert problems == [
        f"{second / 'grip' / 'SKILL.md'}: duplicate skill name 'grip', already defined in "
        f"{(first / 'grip' / 'SKILL.md').resolve()}"
    ]


def test_duplicate_of_a_builtin_suggests_turning_the_library_off(tmp_path: Path) -> None:
    write_skill(tmp_path, "stacking")
    problems = problems_of([tmp_path], include_builtin=True)
    assert "duplicate skill name 'stacking'" in problems[0]
    assert "skills.builtin: false" in problems[0]
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    assert catalog.names() == ["stacking"]


def test_hidden_folders_and_loose_files_are_ignored(tmp_path: Path) -> None:
    write_skill(tmp_path, "ok")
    (tmp_path / ".git").mkdir()
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "README.md").write_text("about these skills")
    assert SkillCatalog.from_paths([tmp_path], include_builtin=False).names() == ["ok"]


# --------------------------------------------------------------------------- resources


def test_resource_is_bounded_with_a_marker(tmp_path: Path) -> None:
    write_skill(tmp_path, "big", resources={"long.md": "abcdefghij" * 100})
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    assert catalog.resource("big", "long.md", max_chars=5000) == "abcdefghij" * 100
    cut = catalog.resource("big", "long.md", max_chars=50)
    assert cut.startswith("abcdefghij" * 5)
    assert "50 of 1000 characters shown" in cut


def test_unknown_resource_lists_what_exists(tmp_path: Path) -> None:
    write_skill(tmp_path, "res", resources={"notes.md": "n", "table.md": "t"})
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    with pytest.raises(KeyError, match=r"did you mean notes\.md"):
        catalog.resource("res", "note.md", max_chars=100)
    with pytest.raises(KeyError, match=r"available: notes\.md, table\.md"):
        catalog.resource("res", "zzz", max_chars=100)
    with pytest.raises(KeyError, match="unknown skill 'nope'"):
        catalog.resource("nope", "notes.md", max_chars=100)


def test_binary_resource_is_refused(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "bin")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xff")
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    with pytest.raises(InvalidResourceError, match="not a UTF-8 text file"):
        catalog.resource("bin", "image.png", max_chars=100)


@pytest.mark.parametrize(
    "attempt",
    [
        "../other/SKILL.md",
        "../../secret.txt",
        "sub/../../other/SKILL.md",
        "/etc/passwd",
        "..",
        "sub\\..\\..\\secret.txt",
        ".",
    ],
)
def test_resource_paths_cannot_escape(tmp_path: Path, attempt: str) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    skills = tmp_path / "skills"
    write_skill(skills, "other")
    write_skill(skills, "mine", resources={"sub/a.md": "a"})
    catalog = SkillCatalog.from_paths([skills], include_builtin=False)
    with pytest.raises((InvalidResourceError, UnknownSkillError)) as info:
        catalog.resource("mine", attempt, max_chars=1000)
    assert "secret" not in str(info.value) or "secret.txt" in attempt


def test_skill_names_cannot_address_paths() -> None:
    catalog = SkillCatalog.from_paths()
    for name in ("../stacking", "stacking/../stacking", "/stacking", "library/stacking"):
        with pytest.raises(UnknownSkillError):
            catalog.body(name)


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlinks_out_of_a_skill_are_refused_at_startup_and_at_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    skills = tmp_path / "skills"
    folder = write_skill(skills, "leaky")
    (folder / "link.txt").symlink_to(outside / "secret.txt")
    problems = problems_of([skills])
    assert problems == [
        f"{folder / 'link.txt'}: symlink points outside its skill folder "
        f"(to {(outside / 'secret.txt').resolve()})"
    ]

    # a link created after startup is refused when read
    (folder / "link.txt").unlink()
    catalog = SkillCatalog.from_paths([skills], include_builtin=False)
    (folder / "later.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(InvalidResourceError, match="resolves outside"):
        catalog.resource("leaky", "later.txt", max_chars=100)
    (folder / "dir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidResourceError, match="resolves outside"):
        catalog.resource("leaky", "dir/secret.txt", max_chars=100)


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlinks_inside_a_skill_are_fine(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "linked", resources={"real.md": "real text"})
    (folder / "alias.md").symlink_to(folder / "real.md")
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    assert catalog.resource("linked", "alias.md", max_chars=100) == "real text"


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_skill_folder_symlinked_from_outside_the_path_is_refused(tmp_path: Path) -> None:
    elsewhere = write_skill(tmp_path / "elsewhere", "foreign")
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "foreign").symlink_to(elsewhere, target_is_directory=True)
    problems = problems_of([skills])
    assert len(problems) == 1 and "skill folder is a symlink outside" in problems[0]
