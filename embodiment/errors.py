"""Errors of the embodiment package (kept apart so every module can raise them)."""

from __future__ import annotations

__all__ = ["ProfileError"]


class ProfileError(ValueError):
    """A profile is missing an item or contradicts itself; each line names the field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"invalid embodiment profile {source}:\n  " + "\n  ".join(problems))
