"""What a summarizer is shown: sanitised, bounded text of whole turns, in ordered rounds.

- Media never reach the summarizer: image references become their short placeholders and
  base64 or ``data:`` payloads inside text become a one-line note of their size.
- Tool results and reasoning longer than ``tool_result_max_chars`` / ``reasoning_max_chars``
  keep their beginning and end; the marker between them says how much was cut and gives
  the archive address of the exact original (reasoning is archived on the spot).
- Secrets are redacted.
- Whole turns are packed into rounds of at most ``max_input_chars`` (previous checkpoint
  included), in order, so nothing in the middle of the history is silently dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.context import bounded_text
from harness.context.compaction.archive import archive_item_text
from harness.context.compaction.turns import TurnGroup
from harness.messages import (
    AssistantItem,
    CheckpointItem,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    TaskNotesItem,
    ToolResultItem,
)
from harness.redact import Redactor

if TYPE_CHECKING:
    from harness.protocols import RunStore

__all__ = ["InputLimits", "Round", "SummaryInput", "pack_rounds", "strip_media"]

_DATA_URL = re.compile(r"data:[\w.+-]+/[\w.+-]+;base64,[A-Za-z0-9+/=\s]{16,}")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{256,}={0,2}")
ARGUMENTS_MAX_CHARS = 600
"""Tool-call arguments are shown up to this length (they are small for robot tools)."""


BASE64_MIN_DISTINCT = 24
"""Encoded binary uses most of the base64 alphabet; a long run of a few letters is text."""


def strip_media(text: str) -> str:
    """Replace inline binary payloads (data URLs, long base64 runs) with a short note."""

    def note(match: re.Match[str]) -> str:
        return f"[binary data, {len(match.group(0))} characters omitted]"

    def maybe(match: re.Match[str]) -> str:
        run = match.group(0)
        return note(match) if len(set(run[:1024])) >= BASE64_MIN_DISTINCT else run

    return _BASE64_RUN.sub(maybe, _DATA_URL.sub(note, text))


@dataclass(frozen=True)
class InputLimits:
    """The spec's per-field bounds for summarizer input."""

    tool_result_max_chars: int
    reasoning_max_chars: int
    max_input_chars: int


@dataclass(frozen=True)
class Round:
    """One summarizer request's worth of history: whole turn groups, rendered."""

    groups: tuple[TurnGroup, ...]
    text: str

    @property
    def first_turn(self) -> int:
        return min(g.key[1] for g in self.groups)

    @property
    def last_turn(self) -> int:
        return max(g.key[1] for g in self.groups)


class SummaryInput:
    """Renders items for a summarizer (model or deterministic), sanitised and bounded."""

    def __init__(self, limits: InputLimits, *, redactor: Redactor, store: RunStore | None) -> None:
        self.limits = limits
        self.redactor = redactor
        self.store = store

    def clean(self, text: str) -> str:
        return self.redactor.text(strip_media(text))

    def bounded(self, item: Item, text: str, max_chars: int, part: str = "") -> str:
        """``text`` cut to head+tail when longer than ``max_chars``, with a recallable address.

        The exact original is archived first (tool outputs already are); without a store
        the marker says where the item lives instead of an address.
        """
        if len(text) <= max_chars:
            return text
        address = archive_item_text(self.store, item, text, part)
        shortened, _ = bounded_text(text, max_chars, address=address)
        return shortened

    def render_item(self, item: Item) -> str:
        """One item as the summarizer sees it: a labelled, bounded, sanitised block."""
        limits = self.limits
        where = f"[{item.task_id or 'session'} t{item.turn}]"
        if isinstance(item, InstructionItem):
            body = item.text + "".join(" " + ref.placeholder() for ref in item.images)
            return f"{where} USER INSTRUCTION: {self.clean(body)}"
        if isinstance(item, RevisionItem):
            return f"{where} INSTRUCTION REVISION: {self.clean(item.text)}"
        if isinstance(item, TaskNotesItem):
            return f"{where} TASK NOTES v{item.version}:\n{self.clean(item.text)}"
        if isinstance(item, NoticeItem):
            return f"{where} HARNESS NOTICE: {self.clean(item.text)}"
        if isinstance(item, CheckpointItem):
            return f"{where} EARLIER CHECKPOINT:\n{self.clean(item.text)}"
        if isinstance(item, AssistantItem):
            return self._render_assistant(item, where)
        if isinstance(item, ToolResultItem):
            text = self.bounded(item, self.clean(item.text), limits.tool_result_max_chars)
            flags = []
            if item.is_error:
                flags.append(f"error={item.error_kind or 'error'}")
            if item.evaluation is not None:
                verdict = item.evaluation
                flags.append(f"evaluation={verdict.status}")
                if verdict.evidence:
                    flags.append(f"evidence={self.clean(verdict.evidence)[:300]!r}")
            if item.archive:
                flags.append(f"archive={item.archive}")
            images = "".join(" " + ref.placeholder() for ref in item.images)
            head = f"{where} RESULT of {item.name} (call {item.call_id}; {', '.join(flags)}):"
            return f"{head}{images}\n{text}"
        raise TypeError(f"unknown item kind {type(item).__name__}")

    def _render_assistant(self, item: AssistantItem, where: str) -> str:
        lines = []
        for index, block in enumerate(item.reasoning):
            if block.text:
                limit = self.limits.reasoning_max_chars
                text = self.bounded(item, self.clean(block.text), limit, f"reasoning{index}")
                lines.append(f"{where} MODEL REASONING:\n{text}")
            elif block.redacted:
                lines.append(f"{where} MODEL REASONING: [encrypted reasoning omitted]")
        if item.text:
            lines.append(f"{where} MODEL: {self.clean(item.text)}")
        for call in item.tool_calls:
            arguments = call.raw_arguments or json.dumps(
                call.arguments, ensure_ascii=False, sort_keys=True, default=str
            )
            arguments = self.clean(arguments)
            if len(arguments) > ARGUMENTS_MAX_CHARS:
                arguments = arguments[:ARGUMENTS_MAX_CHARS] + f"... [{len(arguments)} chars]"
            lines.append(f"{where} CALL {call.name} (call {call.id}) {arguments}")
        return "\n".join(lines) if lines else f"{where} MODEL: (no text)"

    def render_group(self, group: TurnGroup, *, skip: frozenset[str], max_chars: int) -> str:
        """A whole turn; a turn larger than one round is cut to head+tail as a last resort."""
        blocks = [self.render_item(item) for item in group.items if item.id not in skip]
        text = "\n".join(blocks)
        if len(text) > max_chars:
            # Each field is already bounded; only a huge instruction or model text gets here.
            text, _ = bounded_text(text, max_chars, address=None)
        return text


def pack_rounds(
    groups: Sequence[TurnGroup],
    render: SummaryInput,
    *,
    skip: frozenset[str],
    chunk_chars: int,
) -> list[Round]:
    """Pack whole turn groups, in order, into rounds of at most ``chunk_chars`` characters.

    Groups with nothing to summarize (only pinned items) are carried along in the round
    they fall in so the rounds still cover a contiguous run of history.
    """
    rounds: list[Round] = []
    current: list[TurnGroup] = []
    parts: list[str] = []
    size = 0
    for group in groups:
        text = render.render_group(group, skip=skip, max_chars=chunk_chars)
        extra = len(text) + (1 if parts else 0)
        if parts and size + extra > chunk_chars:
            rounds.append(Round(groups=tuple(current), text="\n".join(parts)))
            current, parts, size = [], [], 0
            extra = len(text)
        current.append(group)
        if text:
            parts.append(text)
            size += extra
    if current:
        rounds.append(Round(groups=tuple(current), text="\n".join(parts)))
    return rounds
