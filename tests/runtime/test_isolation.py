"""Isolation: one session cannot read another's archive, a skill reads only what its
catalog lists (and only as much as asked), and config ``tools:`` are tools by design.

Each guarantee is attacked first: another session's exact address, hidden files,
symlinks swapped in after start-up, a 300 MB resource read in a fresh process whose
memory and read syscalls are measured, and the standard library's most dangerous
callables named as tools.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness import Harness, HarnessConfig, tool
from harness.assembly.imports import import_tool
from harness.cli import EXIT_CONFIG, main
from harness.errors import ConfigError
from harness.providers import ScriptedModel, call, reply
from harness.store import MemoryRunStore, SQLiteRunStore
from harness.tools import Tool
from skills.catalog import InvalidResourceError, SkillCatalog, UnknownSkillError

ROOT = Path(__file__).resolve().parents[2]

# ====================================================================== the archive

BADGE = "badge E-7781 of session A"


@tool
def read_badge() -> str:
    """Read the operator's badge."""
    return BADGE


def _stores(kind: str, tmp_path: Path) -> Any:
    if kind == "memory":
        return MemoryRunStore()
    return SQLiteRunStore(tmp_path / "store")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_another_sessions_address_reads_exactly_like_an_unknown_one(
    config: HarnessConfig, tmp_path: Path, kind: str
) -> None:
    """Two sessions share one store (two robots, one run store). B asks for A's exact
    address, an address that never existed, and its own: A's is not_found with the same
    message an unknown address gets, and search_archive finds nothing of A's."""
    store = _stores(kind, tmp_path)
    a_model = ScriptedModel([call("read_badge"), reply("read")])
    with Harness(config, model=a_model, store=store, tools=[read_badge]) as a:
        a_events = list(a.run_stream("read the badge"))
        a_session = a.session_id
    [a_result] = [e for e in a_events if e.type == "tool_result"]
    a_address = a_result.archive  # type: ignore[attr-defined]
    assert a_address and store.archive_get(a_address) == BADGE  # it is there, unscoped

    unknown = a_address.rsplit("/", 1)[0] + "/call_doesnotexist"
    b_model = ScriptedModel(
        [
            call("read_badge"),
            call("recall", address=a_address),
            call("recall", address=unknown),
            call("search_archive", query="E-7781"),
            lambda request: call("recall", address=_own_address(request)),
            reply("done"),
        ]
    )
    with Harness(config, model=b_model, store=store, tools=[read_badge]) as b:
        b_events = list(b.run_stream("try to read session A's badge"))
        assert b.session_id != a_session
    results = [e for e in b_events if e.type == "tool_result"]
    foreign, missing, search, own = results[1:5]
    assert foreign.error_kind == missing.error_kind == "not_found"  # type: ignore[attr-defined]
    assert foreign.text == f"no archived output at {a_address}"  # type: ignore[attr-defined]
    assert missing.text == f"no archived output at {unknown}"  # type: ignore[attr-defined]
    # B's own badge read is found, A's is not: hits name B's task only.
    b_task = b_events[0].task_id
    assert f"archive://{b_task}/" in search.text  # type: ignore[attr-defined]
    assert a_result.task_id not in search.text  # type: ignore[attr-defined]
    assert own.text.endswith(BADGE) and not own.is_error  # type: ignore[attr-defined]
    assert BADGE not in foreign.text  # type: ignore[attr-defined]
    store.close()


def _own_address(request: Any) -> str:
    return next(
        item.archive
        for item in request.items
        if getattr(item, "name", "") == "read_badge" and item.archive
    )


def test_a_sub_agent_lane_recorded_under_the_session_is_in_scope(config: HarnessConfig) -> None:
    """The extension point for lanes: a child task recorded with the parent's session id
    reads its archive through the session; the same task recorded under another session
    does not."""
    store = MemoryRunStore()
    with Harness(config, model=ScriptedModel([reply("x")]), store=store) as harness:
        session = harness.session
        store.start_task(session.session_id, "task_child", "look around")
        store.archive_put(
            "archive://task_child/c1", "child saw", task_id="task_child", call_id="c1", tool="look"
        )
        store.start_task("sess_other", "task_stranger", "look around")
        store.archive_put(
            "archive://task_stranger/c1",
            "stranger saw",
            task_id="task_stranger",
            call_id="c1",
            tool="look",
        )
        assert session.read_archive("archive://task_child/c1") == "child saw"
        assert session.read_archive("archive://task_stranger/c1") is None
        assert session.read_archive("archive://task_nobody/c1") is None


# ====================================================================== skill resources


def _skill(root: Path, name: str, resources: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: A test skill.\n---\nDo the thing.\n"
    )
    for relative, text in (resources or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def test_hidden_files_are_not_resources(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "arm", {"notes.md": "notes"})
    (folder / ".env").write_text("ROBOT_TOKEN=tok-123456789")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("url = https://x:ghp_token123456789@host/r")
    (folder / "sub").mkdir()
    (folder / "sub" / ".secret").write_text("hidden too")
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    assert catalog.get("arm").resources == ["notes.md"]
    for hidden in (".env", ".git/config", "sub/.secret", "./.env"):
        with pytest.raises(UnknownSkillError) as info:
            catalog.resource("arm", hidden, max_chars=1000)
        assert "tok-" not in str(info.value) and "ghp_" not in str(info.value)
    assert catalog.resource("arm", "./notes.md", max_chars=1000) == "notes"


def test_the_built_in_tool_refuses_hidden_files_like_unknown_ones(
    config: HarnessConfig, tmp_path: Path
) -> None:
    folder = _skill(tmp_path, "arm", {"notes.md": "notes"})
    (folder / ".env").write_text("ROBOT_TOKEN=tok-123456789")
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    model = ScriptedModel(
        [
            call("load_skill_resource", name="arm", resource=".env"),
            call("load_skill_resource", name="arm", resource="nope.md"),
            reply("done"),
        ]
    )
    with Harness(config, model=model, skills=catalog) as harness:
        events = list(harness.run_stream("read the skill's files"))
    hidden, unknown = [e for e in events if e.type == "tool_result"]
    assert hidden.error_kind == unknown.error_kind == "unknown_resource"  # type: ignore[attr-defined]
    assert "tok-123456789" not in json.dumps([e.model_dump(mode="json") for e in events])


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlinks_cannot_reach_hidden_or_outside_files(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside secret")
    skills = tmp_path / "skills"
    folder = _skill(skills, "arm", {"notes.md": "notes", "table.md": "table"})
    (folder / ".env").write_text("ROBOT_TOKEN=tok-123456789")
    (folder / "alias.md").symlink_to(folder / ".env")  # present at start-up, inside
    catalog = SkillCatalog.from_paths([skills], include_builtin=False)
    assert "alias.md" in catalog.get("arm").resources  # listed by its own name...
    with pytest.raises(UnknownSkillError):  # ...but it lands on a hidden file
        catalog.resource("arm", "alias.md", max_chars=100)

    # A listed resource swapped for a link after start-up: outside, or to a hidden file.
    (folder / "notes.md").unlink()
    (folder / "notes.md").symlink_to(outside)
    with pytest.raises(InvalidResourceError, match="resolves outside"):
        catalog.resource("arm", "notes.md", max_chars=100)
    (folder / "table.md").unlink()
    (folder / "table.md").symlink_to(folder / ".env")
    with pytest.raises(UnknownSkillError):
        catalog.resource("arm", "table.md", max_chars=100)


def test_files_added_after_start_up_are_readable_only_after_a_reload(tmp_path: Path) -> None:
    folder = _skill(tmp_path, "arm", {"notes.md": "notes"})
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    (folder / "later.md").write_text("added later")
    with pytest.raises(UnknownSkillError, match="unknown resource"):
        catalog.resource("arm", "later.md", max_chars=100)
    catalog.reload()
    assert catalog.resource("arm", "later.md", max_chars=100) == "added later"
    (folder / "later.md").unlink()
    catalog.reload()
    assert catalog.get("arm").resources == ["notes.md"]
    with pytest.raises(RuntimeError, match="from_paths"):
        SkillCatalog(list(catalog)).reload()


def test_a_cut_resource_says_what_is_missing_without_reading_it(tmp_path: Path) -> None:
    _skill(tmp_path, "arm", {"small.md": "é" * 300, "big.md": "ab" * 100_000})
    catalog = SkillCatalog.from_paths([tmp_path], include_builtin=False)
    small = catalog.resource("arm", "small.md", max_chars=100)
    assert small.startswith("é" * 100) and "100 of 300 characters shown" in small
    big = catalog.resource("arm", "big.md", max_chars=100)
    assert big.startswith("ab" * 50) and "100 characters shown of a 200000-byte file" in big


RSS_PROBE = textwrap.dedent(
    """
    import json, resource, sys
    from skills.catalog import SkillCatalog

    def io():
        with open("/proc/self/io") as f:
            return dict(line.split(": ") for line in f.read().splitlines())

    catalog = SkillCatalog.from_paths([sys.argv[1]], include_builtin=False)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    read = int(io()["rchar"])
    text = catalog.resource("huge", "huge.txt", max_chars=int(sys.argv[2]))
    print(json.dumps({
        "rss_growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss,
        "bytes_read": int(io()["rchar"]) - read,
        "chars": len(text),
        "tail": text[-80:],
    }))
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs /proc/self/io")
def test_a_huge_resource_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """A 300 MB resource (sparse: it costs no disk) read in a fresh process: the peak
    memory grows by well under a megabyte-scale bound and the bytes read from the file
    are the read limit, not the file (before: +600 MB of RSS, the whole file read)."""
    folder = _skill(tmp_path, "huge")
    size = 300 * 1024 * 1024
    with open(folder / "huge.txt", "wb") as handle:
        handle.truncate(size)
    max_chars = 20_000
    probe = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(tmp_path), str(max_chars)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    measured = json.loads(probe.stdout)
    limit = 4 * (max_chars + 1)
    assert measured["bytes_read"] <= limit + 16_384, measured  # the file, plus small reads
    assert measured["rss_growth_kib"] < 8 * 1024, measured
    assert f"of a {size}-byte file" in measured["tail"]


# ====================================================================== config tools


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("os:system", "built-in function"),
        ("subprocess:Popen", "is a class"),
        ("builtins:eval", "built-in function"),
        ("os.path:join", "standard library"),
        ("shutil:rmtree", "standard library"),
        ("tests.fixtures.config_tools:undocumented", "no docstring"),
        ("tests.fixtures.config_tools:untyped", "without type hints (times)"),
        ("tests.fixtures.config_tools:waver", "not a plain function"),
        ("tests.fixtures.config_tools:Waver", "is a class"),
    ],
)
def test_config_tools_must_be_built_as_tools(path: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        import_tool(path)
    assert info.value.key == "tools" and info.value.value == path
    assert path in str(info.value) and why in str(info.value)


def test_project_functions_and_tools_are_accepted() -> None:
    wave = import_tool("tests.fixtures.config_tools:wave")
    assert isinstance(wave, Tool) and wave.name == "wave"
    assert import_tool("tests.fixtures.config_tools:built").name == "built_wave"


def test_a_dangerous_config_tool_stops_the_start_with_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "embodiment: null\ndriver: null\nrun: {store: null}\nmemory: {enabled: false}\n"
        "tools: [os:system]\n"
    )
    with pytest.raises(ConfigError, match="os:system"):
        Harness.from_config(str(config), model=ScriptedModel([reply("x")]))
    assert main(["run", "--config", str(config), "--model", "planner", "tidy"]) == EXIT_CONFIG
    assert "'os:system' is not a Python function" in capsys.readouterr().err
