"""The note a checkpoint carries when no model writes it: built from the folded items.

It has the five sections a model note has (so either kind of note can update the other),
plus the last Task Notes snapshot of each task it folded:

- **Objective**: kept from the previous note; else the folded instructions, or a pointer to
  the instruction that stays verbatim in context;
- **Progress**: per fold, how many exchanges of which tools succeeded and failed (the
  exchanges themselves are in the harness's index), and the last model message;
- **Failures**: the latest failed exchanges, each with the address of its exact output;
- **Evidence** and **Open work**: kept from the previous note;
- **Task notes**: the last snapshot of each ended task it folded (at most
  :data:`NOTES_TASKS`); the running task's current snapshot stays in context anyway.

Updating means adding to the previous note's sections, never nesting it. Over
``max_chars``, the Task notes sections shrink first, then the oldest bullets of Progress,
Evidence and Failures go (everything they said is reachable through the index); only as a
last resort is the note cut to head+tail, after archiving it under the address of the
checkpoint it belongs to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.context.compaction.index import exchange_line
from harness.context.compaction.summarizer import SUMMARY_SECTIONS
from harness.context.compaction.summary_input import SummaryInput
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    RevisionItem,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
)

__all__ = ["NOTES_TASKS", "deterministic_note", "parse_note"]

INSTRUCTION_MAX_CHARS = 800
NOTES_MAX_CHARS = 1200
NOTES_MIN_CHARS = 300
REPORT_MAX_CHARS = 800
COLLAPSED_LINE_MAX_CHARS = 600
COLLAPSED_FAILURES = 3
NOTES_TASKS = 2
"""Task Notes sections kept: the newest tasks' (older ones are in the run store)."""
SHRINKING = ("Progress", "Evidence", "Failures")
"""Sections whose oldest bullets give way when the note is over its size."""
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(?P<name>[^#\n]+?)\s*:?\s*#*\s*$")
_NOTES_HEADING = re.compile(r"^Task notes \((?P<task>[^,]+), v(?P<version>\d+)\)$")


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 3)] + "..."


def _failed(result: ToolResultItem) -> bool:
    return result.is_error or (
        result.evaluation is not None and result.evaluation.status == "failure"
    )


def parse_note(note: str) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """(five sections -> their bullet lines, [(heading, body) of Task notes sections]).

    Lines under a heading the format does not know (an older checkpoint's) count as
    progress, so nothing a previous note said is dropped by the update.
    """
    sections: dict[str, list[str]] = {name: [] for name in SUMMARY_SECTIONS}
    notes: list[tuple[str, str]] = []
    names = {name.lower(): name for name in SUMMARY_SECTIONS}
    current: list[str] | None = sections["Progress"]
    notes_lines: list[str] | None = None
    for line in note.splitlines():
        match = _HEADING.match(line)
        if match:
            heading = match.group("name").strip()
            if _NOTES_HEADING.match(heading):
                notes_lines = []
                notes.append((heading, ""))
                current = None
                continue
            notes_lines = None
            current = sections[names[heading.lower()]] if heading.lower() in names else None
            if current is None:
                current = sections["Progress"]
            continue
        if notes_lines is not None:
            notes_lines.append(line)
            notes[-1] = (notes[-1][0], "\n".join(notes_lines).strip())
            continue
        text = line.strip()
        if current is not None and text and text.lower() != "none":
            current.append(text if text.startswith("- ") else f"- {text}")
    return sections, notes


def _counts_line(results: Sequence[ToolResultItem]) -> str:
    """How many exchanges of which tools a fold took, with the latest failures' addresses."""
    per_tool: dict[str, list[int]] = {}
    for result in results:
        counts = per_tool.setdefault(result.name, [0, 0])
        counts[int(_failed(result))] += 1
    detail = ", ".join(
        f"{name} x{ok + bad} ({ok} ok, {bad} failed)" for name, (ok, bad) in per_tool.items()
    )
    first, last = results[0], results[-1]
    line = (
        f"- {len(results)} earlier exchanges ({first.task_id or 'session'} t{first.turn} to "
        f"{last.task_id or 'session'} t{last.turn}), exact outputs in the archive: {detail}"
    )
    failures = [result for result in results if _failed(result)][-COLLAPSED_FAILURES:]
    if failures:
        line += "; latest failures: " + ", ".join(
            f"{r.task_id or 'session'} t{r.turn} {r.name} "
            f"({r.error_kind or (r.evaluation.status if r.evaluation else 'error')}) {r.archive}"
            for r in failures
        )
    return _one_line(line, COLLAPSED_LINE_MAX_CHARS)


def deterministic_note(
    folded: Sequence[Item],
    *,
    previous: str,
    owner: CheckpointItem,
    clean: SummaryInput,
    max_chars: int,
    running_task: str | None,
) -> str:
    """The previous note (``""`` for none) updated with ``folded``, within ``max_chars``.

    ``owner`` is the checkpoint the note will belong to: the exact note is archived under
    its address before a last-resort cut. ``running_task``'s Task Notes are not copied
    (its current snapshot is never folded).
    """
    sections, notes_sections = parse_note(previous)
    calls: dict[str, ToolCall] = {}
    results: list[ToolResultItem] = []
    notes: dict[str, TaskNotesItem] = {}
    report = report_task = ""
    report_is_progress = True
    for item in folded:
        if isinstance(item, InstructionItem):
            text = clean.bounded(item, clean.clean(item.text), INSTRUCTION_MAX_CHARS)
            sections["Objective"].append(f"- {item.task_id or 'session'}: {_one_line(text, 400)}")
        elif isinstance(item, RevisionItem):
            text = _one_line(clean.clean(item.text), 300)
            where = f"{item.task_id or 'session'} revised at t{item.turn}"
            sections["Objective"].append(f"- {where}: {text}")
        elif isinstance(item, TaskNotesItem) and item.task_id != running_task:
            notes[item.task_id] = item
        elif isinstance(item, AssistantItem):
            for call in item.tool_calls:
                calls[call.id] = call
            if item.text and (not item.tool_calls or report_is_progress):
                report = _one_line(clean.clean(item.text), REPORT_MAX_CHARS)
                report_task = item.task_id
                report_is_progress = bool(item.tool_calls)
        elif isinstance(item, ToolResultItem):
            results.append(item)
    if not sections["Objective"]:
        sections["Objective"].append(
            "- the operator's instruction, kept verbatim in context before this checkpoint"
        )
    if results:
        sections["Progress"].append(_counts_line(results))
        failures = [r for r in results if _failed(r)][-COLLAPSED_FAILURES:]
        sections["Failures"].extend(
            exchange_line(calls.get(r.call_id), r, clean.clean) for r in failures
        )
    if report:
        what = "final report" if not report_is_progress else "last model message"
        sections["Progress"].append(f"- {what} ({report_task or 'session'}): {report}")
    for task_id, snapshot in notes.items():
        heading = f"Task notes ({task_id or 'session'}, v{snapshot.version})"
        prefix = f"Task notes ({task_id or 'session'},"
        notes_sections = [(h, b) for h, b in notes_sections if not h.startswith(prefix)]
        notes_sections.append((heading, clean.clean(snapshot.text)))
    notes_sections = notes_sections[-NOTES_TASKS:]
    text = _fit(sections, notes_sections, max_chars, owner=owner, clean=clean)
    return clean.bounded(owner, text, max_chars, "note")


def _render(sections: dict[str, list[str]], notes: list[tuple[str, str]]) -> str:
    parts = [
        f"## {name}\n" + ("\n".join(sections[name]) if sections[name] else "none")
        for name in SUMMARY_SECTIONS
    ]
    parts.extend(f"## {heading}\n{body}" for heading, body in notes)
    return "\n".join(parts)


def _fit(
    sections: dict[str, list[str]],
    notes: list[tuple[str, str]],
    max_chars: int,
    *,
    owner: CheckpointItem,
    clean: SummaryInput,
) -> str:
    """Make the note fit: the Task notes sections shrink (archived whole first), then the
    oldest bullets of the shrinking sections go, longest section first."""
    limit = NOTES_MAX_CHARS
    while True:
        bounded = [
            (heading, clean.bounded(owner, body, limit, f"notes{index}"))
            for index, (heading, body) in enumerate(notes)
        ]
        text = _render(sections, bounded)
        if len(text) <= max_chars or limit <= NOTES_MIN_CHARS:
            break
        limit = max(NOTES_MIN_CHARS, limit // 2)

    def drop() -> bool:
        longest = max(SHRINKING, key=lambda name: len(sections[name]))
        if not sections[longest]:
            return False
        sections[longest].pop(0)
        return True

    while len(text) > max_chars and drop():
        text = _render(sections, bounded)
    while len(text) > max_chars and len(bounded) > 1:
        bounded.pop(0)
        text = _render(sections, bounded)
    return text
