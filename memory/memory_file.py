"""``MEMORY.md``: what people wrote by hand, plus one block of lessons the harness keeps.

People own the file. The harness owns only the text between its two marker comments
(``<!-- harness:lessons:begin -->`` ... ``<!-- harness:lessons:end -->``) and rewrites
nothing else: every byte before and after the block is written back unchanged. A file
without the block gets one appended; a file whose markers do not pair up is left alone
(:class:`MemoryFormatError`) rather than guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory.lessons import Lesson, add_or_merge, format_lesson, parse_lesson_line

__all__ = [
    "BEGIN_MARKER",
    "END_MARKER",
    "MEMORY_TEMPLATE",
    "MemoryDocument",
    "MemoryFormatError",
    "resident_view",
]

BEGIN_MARKER = "<!-- harness:lessons:begin -->"
END_MARKER = "<!-- harness:lessons:end -->"
LESSONS_HEADING = "## Lessons learned"
MAX_GENERAL_LESSONS = 40

MEMORY_TEMPLATE = f"""\
# Robot memory

<!-- Read into every task. Write preferences and conventions by hand under the headings
below; the harness only edits the block between its lessons markers. -->

## Preferences

## Conventions

{BEGIN_MARKER}
{LESSONS_HEADING}
{END_MARKER}
"""


class MemoryFormatError(ValueError):
    """MEMORY.md has unpaired harness markers; the harness will not rewrite it."""


@dataclass
class MemoryDocument:
    """A parsed MEMORY.md: hand-written text around the harness's lessons block."""

    before: str = ""
    lessons: list[Lesson] = field(default_factory=list)
    extra_lines: list[str] = field(default_factory=list)
    """Lines inside the block that are not lessons (kept as they are)."""
    after: str = ""
    has_block: bool = False

    @classmethod
    def parse(cls, text: str) -> MemoryDocument:
        begins = text.count(BEGIN_MARKER)
        ends = text.count(END_MARKER)
        if begins == 0 and ends == 0:
            return cls(before=text)
        start = text.find(BEGIN_MARKER)
        stop = text.find(END_MARKER)
        if begins != 1 or ends != 1 or stop < start:
            raise MemoryFormatError(
                f"MEMORY.md has {begins} {BEGIN_MARKER} and {ends} {END_MARKER} marker(s) "
                "in the wrong order; fix them by hand (one of each, begin first)"
            )
        inner = text[start + len(BEGIN_MARKER) : stop]
        after = text[stop + len(END_MARKER) :]
        doc = cls(before=text[:start], after=after.removeprefix("\n"), has_block=True)
        heading_seen = False
        for line in inner.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            if stripped == LESSONS_HEADING and not heading_seen:
                heading_seen = True
                continue
            lesson = parse_lesson_line(stripped, tool=None) if stripped.startswith("- ") else None
            if lesson is not None:
                doc.lessons.append(lesson)
            else:
                doc.extra_lines.append(line)
        return doc

    def render(self) -> str:
        block = [BEGIN_MARKER, LESSONS_HEADING]
        block.extend(format_lesson(lesson, with_kind=False) for lesson in self.lessons)
        block.extend(self.extra_lines)
        block.append(END_MARKER)
        text = "\n".join(block) + "\n"
        if self.has_block:
            return self.before + text + self.after
        before = self.before
        if before and not before.endswith("\n"):
            before += "\n"
        if before:
            before += "\n"
        return before + text

    def add(self, lesson: Lesson) -> tuple[str, Lesson, list[Lesson]]:
        """Add or merge a lesson; returns (``"added"``/``"merged"``, the stored lesson,
        lessons evicted to stay within the bound)."""
        return add_or_merge(self.lessons, lesson, bound=MAX_GENERAL_LESSONS)


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})\s")


def resident_view(text: str) -> str:
    """MEMORY.md as the model should read it: comments and empty sections removed."""
    lines = _COMMENT.sub("", text).splitlines()
    kept: list[str] = []
    for index, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading is not None:
            level = len(heading.group(1))
            has_content = False
            for following in lines[index + 1 :]:
                nested = _HEADING.match(following)
                if nested is not None and len(nested.group(1)) <= level:
                    break
                if following.strip() and nested is None:
                    has_content = True
                    break
            if not has_content:
                continue
        if not line.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(line.rstrip())
    return "\n".join(kept).strip()
