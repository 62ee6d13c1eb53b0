"""An eval folder on disk: ``manifest.json``, ``episodes.jsonl``, ``runs/``, ``summary.json``.

``manifest.json`` says what the eval is (suite, config, model, the selected episode keys),
so ``--resume DIR`` continues the same eval without repeating its arguments.
``episodes.jsonl`` gets one line per finished episode the moment it finishes, flushed and
fsynced, so a killed eval loses at most the episodes that were running. A kill can cut the
last line short; :meth:`EvalFolder.records` ignores such a line and :meth:`EvalFolder.
repair` cuts it off before more lines are appended.

Everything written here goes through the eval's redactor first (the deployment's secret
patterns and key variables): a secret in a suite's instruction or a ``--set`` override
never reaches the folder (or the reports made from it).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import UsageError
from harness.fleet.episode import EpisodeRecord
from harness.redact import Redactor

__all__ = ["EvalFolder", "Manifest"]

logger = logging.getLogger("harness.fleet")

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
SUMMARY = "summary.json"
MANIFEST_VERSION = 1


class Manifest(BaseModel):
    """What an eval folder holds (written once, when the eval starts)."""

    model_config = ConfigDict(extra="forbid")

    version: int = MANIFEST_VERSION
    suite: str
    """The suite's name."""
    suite_path: str
    config_path: str | None = None
    """The deployment config file (None: the built-in defaults or the checkout's)."""
    model: str | None = None
    """``--model`` as given (None: the config's model)."""
    overrides: list[str] = Field(default_factory=list)
    """``--set`` as given."""
    context_window: int | None = None
    """``--context-window`` as given."""
    model_label: str = ""
    """The model that ran, as ``provider:name``."""
    episodes: list[str]
    """The selected episode keys, in the order they are dispatched."""
    created: float = Field(default_factory=time.time)


class EvalFolder:
    """The files of one eval (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike[str], *, redactor: Redactor | None = None) -> None:
        self.folder = Path(folder).expanduser()
        self.redactor = redactor or Redactor()
        self.manifest_path = self.folder / MANIFEST
        self.episodes_path = self.folder / EPISODES
        self.summary_path = self.folder / SUMMARY
        self.runs = self.folder / "runs"

    # ------------------------------------------------------------------ manifest

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    def check_free(self) -> None:
        """An eval already in the folder is a usage error (never overwritten)."""
        if self.exists() or self.episodes_path.exists():
            raise UsageError(
                f"--out {self.folder}: it already holds an eval; continue it with --resume "
                f"{self.folder}, or choose another --out"
            )

    def create(self, manifest: Manifest) -> None:
        """Start a new eval here (see :meth:`check_free`)."""
        self.check_free()
        manifest = self.redactor.model(manifest)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_atomic(self.manifest_path, manifest.model_dump_json(indent=2))
        except OSError as exc:
            raise UsageError(
                f"{self.folder}: cannot create the eval folder: {exc.strerror or exc}"
            ) from None
        self.episodes_path.touch()

    def manifest(self, *, named_by: str = "") -> Manifest:
        """The eval's manifest; a folder without one is a usage error naming the folder as
        the command's user gave it (``named_by``: the option that named it, if any)."""
        if not self.exists():
            given = f"{named_by} {self.folder}" if named_by else str(self.folder)
            raise UsageError(
                f"{given}: no eval there (no {MANIFEST}; harness eval SUITE --out DIR makes one)"
            )
        try:
            return Manifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise UsageError(f"{self.manifest_path}: not an eval manifest ({exc})") from None

    # ------------------------------------------------------------------ episodes

    def records(self) -> list[EpisodeRecord]:
        """Every complete line of ``episodes.jsonl`` (a cut-off last line is skipped; a
        key recorded twice keeps its first record)."""
        if not self.episodes_path.is_file():
            return []
        records: dict[str, EpisodeRecord] = {}
        for number, line in enumerate(self._complete_lines(), 1):
            try:
                record = EpisodeRecord.model_validate_json(line)
            except ValidationError as exc:
                logger.warning("%s line %d is not a record: %s", self.episodes_path, number, exc)
                continue
            records.setdefault(record.key, record)
        return list(records.values())

    def repair(self) -> int:
        """Cut a last line that a kill left unfinished; returns the bytes removed."""
        if not self.episodes_path.is_file():
            return 0
        data = self.episodes_path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end == len(data):
            return 0
        with self.episodes_path.open("r+b") as handle:
            handle.truncate(end)
            handle.flush()
            os.fsync(handle.fileno())
        return len(data) - end

    def append(self, record: EpisodeRecord) -> None:
        """One line, on disk before this returns."""
        line = self.redactor.model(record).model_dump_json() + "\n"
        with self.episodes_path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def _complete_lines(self) -> list[str]:
        data = self.episodes_path.read_bytes()
        end = data.rfind(b"\n") + 1
        return [line for line in data[:end].decode("utf-8").splitlines() if line.strip()]

    # ------------------------------------------------------------------ summary

    def write_summary(self, summary: dict[str, Any]) -> None:
        _write_atomic(self.summary_path, json.dumps(self.redactor.value(summary), indent=2))


def _write_atomic(path: Path, text: str) -> None:
    scratch = path.with_name(f".{path.name}.tmp")
    with scratch.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(scratch, path)
