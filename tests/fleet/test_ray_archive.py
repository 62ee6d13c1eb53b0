"""Run stores come back from Ray actors as archives: unpacked safely on every Python 3.11
(``tarfile``'s ``data`` filter exists only from 3.11.4)."""

from __future__ import annotations

import contextlib
import io
import tarfile
from pathlib import Path

import pytest

from harness.fleet.ray_backend import pack, unpack


@pytest.fixture(params=["data filter", "before 3.11.4"])
def python(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "before 3.11.4":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return str(request.param)


def test_a_run_store_round_trips(tmp_path: Path, python: str) -> None:
    source = tmp_path / "store"
    (source / "images").mkdir(parents=True)
    (source / "runs.db").write_bytes(b"SQLite format 3\x00" + bytes(range(256)))
    (source / "images" / "a.jpg").write_bytes(b"\xff\xd8 frame")
    unpack(pack(source), tmp_path / "back")
    got = {
        p.relative_to(tmp_path / "back"): p.read_bytes()
        for p in (tmp_path / "back").rglob("*")
        if p.is_file()
    }
    want = {p.relative_to(source): p.read_bytes() for p in source.rglob("*") if p.is_file()}
    assert got == want


def _archive(name: str, *, link: bool = False) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        member = tarfile.TarInfo(name)
        if link:
            member.type, member.linkname = tarfile.SYMTYPE, "/etc/passwd"
            archive.addfile(member)
        else:
            member.size = 4
            archive.addfile(member, io.BytesIO(b"evil"))
    return buffer.getvalue()


@pytest.mark.parametrize("case", ["parent", "absolute", "link"])
def test_an_archive_reaching_outside_its_folder_never_writes_there(
    tmp_path: Path, python: str, case: str
) -> None:
    """A parent path and a link are refused; an absolute path is refused or, as the data
    filter does, kept inside the folder."""
    target = tmp_path / "deep" / "back"
    outside = tmp_path / "deep" / "escaped.txt"
    name = {"parent": "../escaped.txt", "absolute": str(outside), "link": "ln"}[case]
    data = _archive(name, link=case == "link")
    if case == "absolute":
        with contextlib.suppress(ValueError, tarfile.TarError):
            unpack(data, target)
    else:
        with pytest.raises((ValueError, tarfile.TarError)):
            unpack(data, target)
    assert not outside.exists()
    assert not (target / "ln").is_symlink()
