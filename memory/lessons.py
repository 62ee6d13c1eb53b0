"""Lessons: short, checked statements durable memory keeps between tasks.

A lesson is one line of advice (``text``) of one ``kind``:

- ``success``: what works with a tool (needs an evaluator-confirmed success of that tool
  in the task that proposes it);
- ``failure``: what to do when a tool fails (needs a failure of that tool followed by a
  recovery in the task);
- ``general``: anything else worth keeping (a convention, a property of the workspace).

Lessons are written into markdown as one bullet line with their confidence and how many
tasks confirmed them, so people can read and edit them, and parsed back from it.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = [
    "DUPLICATE_SIMILARITY",
    "Lesson",
    "LessonKind",
    "add_or_merge",
    "describe_validation_error",
    "format_lesson",
    "is_duplicate",
    "merge_lessons",
    "parse_lesson_line",
    "validate_candidate",
]

LessonKind = Literal["success", "failure", "general"]

MAX_LESSON_CHARS = 300
MIN_LESSON_CHARS = 8
DUPLICATE_SIMILARITY = 0.85
"""Normalized texts at least this similar (difflib ratio) are the same lesson."""

_LINE = re.compile(
    r"^- (?:\[(?P<kind>success|failure|general)\] )?(?P<text>.+?)"
    r"(?: _\(confidence (?P<confidence>[01](?:\.\d+)?), seen (?P<seen>\d+)x\)_)?\s*$"
)
_FORBIDDEN = ("<!--", "-->", "```")


class Lesson(BaseModel):
    """A validated lesson. Model output is parsed into this leniently (unknown keys are
    ignored) but every field it relies on is checked."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    text: str
    kind: LessonKind = "general"
    tool: str | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    seen: int = Field(1, ge=1)

    @field_validator("text")
    @classmethod
    def _one_clean_line(cls, value: str) -> str:
        text = value.strip()
        if text.startswith("- "):
            text = text[2:].strip()
        if "\n" in text or "\r" in text:
            raise ValueError("must be a single line")
        if len(text) < MIN_LESSON_CHARS:
            raise ValueError(f"is shorter than {MIN_LESSON_CHARS} characters")
        if len(text) > MAX_LESSON_CHARS:
            raise ValueError(f"is longer than {MAX_LESSON_CHARS} characters ({len(text)})")
        if text.startswith("#"):
            raise ValueError("must not be a markdown heading")
        for marker in _FORBIDDEN:
            if marker in text:
                raise ValueError(f"must not contain {marker!r}")
        return text

    @field_validator("tool")
    @classmethod
    def _tool_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        return value or None

    @model_validator(mode="after")
    def _tool_lessons_name_their_tool(self) -> Lesson:
        if self.kind in ("success", "failure") and self.tool is None:
            raise ValueError(f"a {self.kind} lesson must name the tool it is about")
        return self

    @property
    def scope(self) -> str:
        return f"{self.tool} ({self.kind})" if self.tool else self.kind


def describe_validation_error(error: ValidationError | ValueError) -> str:
    if isinstance(error, ValidationError):
        parts = []
        for item in error.errors():
            key = ".".join(str(part) for part in item["loc"]) or "entry"
            message = item["msg"].removeprefix("Value error, ")
            parts.append(f"{key}: {message}" if item["type"] != "missing" else f"{key}: missing")
        return "invalid entry: " + "; ".join(parts)
    return f"invalid entry: {error}"


def validate_candidate(raw: Any) -> Lesson:
    """A proposed lesson (a mapping from a model or the rule-based consolidator) as a
    :class:`Lesson`; raises ValueError with a readable reason."""
    if isinstance(raw, Lesson):
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"invalid entry: expected an object, got {type(raw).__name__}")
    if "confidence" not in raw:
        raise ValueError("invalid entry: confidence: missing")
    try:
        return Lesson.model_validate({**raw, "seen": 1})
    except ValidationError as exc:
        raise ValueError(describe_validation_error(exc)) from None


def _normalized(text: str) -> str:
    """Case, digits and punctuation removed: numbers in a lesson vary from task to task."""
    text = re.sub(r"[\d]+(?:\.\d+)?", " ", text.lower())
    text = re.sub(r"[^a-z_ ]+", " ", text)
    return " ".join(text.split())


def is_duplicate(a: Lesson, b: Lesson) -> bool:
    """Same scope (kind and tool) and nearly the same words."""
    if a.tool != b.tool or a.kind != b.kind:
        return False
    left, right = _normalized(a.text), _normalized(b.text)
    if left == right:
        return True
    return difflib.SequenceMatcher(None, left, right).ratio() >= DUPLICATE_SIMILARITY


def merge_lessons(existing: Lesson, new: Lesson) -> Lesson:
    """One more task confirmed an existing lesson: keep its words, count it, and keep the
    higher confidence."""
    return existing.model_copy(
        update={
            "seen": existing.seen + new.seen,
            "confidence": max(existing.confidence, new.confidence),
        }
    )


def add_or_merge(
    lessons: list[Lesson], lesson: Lesson, *, bound: int
) -> tuple[str, Lesson, list[Lesson]]:
    """Add ``lesson`` to ``lessons`` in place, or merge it into its duplicate.

    Returns (``"added"`` or ``"merged"``, the stored lesson, lessons evicted to keep the
    list within ``bound``: the least confirmed ones, never the lesson just added).
    """
    for index, existing in enumerate(lessons):
        if is_duplicate(existing, lesson):
            merged = merge_lessons(existing, lesson)
            lessons[index] = merged
            return "merged", merged, []
    lessons.append(lesson)
    evicted: list[Lesson] = []
    while len(lessons) > bound:
        weakest = min(
            (item for item in lessons if item is not lesson),
            key=lambda item: (item.seen, item.confidence),
        )
        lessons.remove(weakest)
        evicted.append(weakest)
    return "added", lesson, evicted


def format_lesson(lesson: Lesson, *, with_kind: bool) -> str:
    prefix = f"[{lesson.kind}] " if with_kind else ""
    return f"- {prefix}{lesson.text} _(confidence {lesson.confidence:.2f}, seen {lesson.seen}x)_"


def parse_lesson_line(line: str, *, tool: str | None) -> Lesson | None:
    """Parse a bullet written by :func:`format_lesson`, or one a person wrote by hand
    (a plain ``- text`` bullet counts as a confident general lesson, or a tool lesson in
    a ledger). Returns None for lines that are not lessons."""
    match = _LINE.match(line.rstrip())
    if match is None:
        return None
    kind = match["kind"] or "general"
    try:
        return Lesson(
            text=match["text"],
            kind=kind,  # type: ignore[arg-type]
            tool=tool if tool is not None else None,
            confidence=float(match["confidence"]) if match["confidence"] else 1.0,
            seen=int(match["seen"]) if match["seen"] else 1,
        )
    except (ValidationError, ValueError):
        return None
