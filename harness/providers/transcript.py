"""A request's items read as the conversation both wire formats need.

Both providers insist on the same shape around tools: every tool call is answered exactly
once, by a result that comes right after the assistant message that made it. The harness
keeps that true in normal operation, but a resumed session, a compaction or a model that
reuses call ids can bend it, and a provider then rejects the whole request. So the adapters
do not translate items one by one; they translate the :func:`read_transcript` of them:

- each :class:`AssistantTurn` carries its :class:`Answer`\\ s, one per call, in call order,
  with the matching result moved next to it (or a short "no result" text when none exists);
- results that answer no call become plain user text instead of dangling;
- call ids are made unique across the conversation (``call_0`` reused every turn by some
  local servers becomes ``call_0``, ``call_0_2``...), consistently for call and result;
- a request that offers no tools (a summarizer call, say) gets its tool exchanges as plain
  text, since both APIs refuse tool-call history without tool definitions;
- tool names are offered in the form both APIs accept (letters, digits, ``_``, ``-``; the
  harness also allows ``.``, e.g. for MCP servers) and mapped back in the response
  (:class:`ToolNames`).

Everything here is provider-neutral text; the adapters only choose the block shapes.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.messages import (
    AssistantItem,
    CheckpointItem,
    ImagePart,
    InstructionItem,
    Item,
    NoticeItem,
    RevisionItem,
    TaskNotesItem,
    ToolCall,
    ToolResultItem,
    new_id,
)

__all__ = [
    "MISSING_RESULT_TEXT",
    "Answer",
    "AssistantTurn",
    "Entry",
    "ToolNames",
    "UserText",
    "arguments_json",
    "complete_before_cut",
    "cut_last_call",
    "image_caption",
    "item_text",
    "parse_arguments",
    "read_transcript",
    "tool_call",
]

MISSING_RESULT_TEXT = "No result was recorded for this call; it was not executed."


@dataclass(frozen=True)
class UserText:
    """Text the harness or the user said (instruction, notes, checkpoint...)."""

    text: str
    index: int
    """Position of the source item in ``ModelRequest.items``."""


@dataclass(frozen=True)
class Answer:
    """One tool call of an assistant turn and what answers it."""

    call: ToolCall
    wire_id: str
    result: ToolResultItem | None
    index: int
    """Position of the result item (of the assistant item when there is no result)."""

    def text(self, *, mark_error: bool) -> str:
        """The result as the model reads it; ``mark_error`` prefixes failures for wire
        formats without an error flag."""
        result = self.result
        if result is None:
            return MISSING_RESULT_TEXT
        text = result.text or ("error" if result.is_error else "ok")
        if result.images:
            text += "\n" + "\n".join(ref.placeholder() for ref in result.images)
        if mark_error and result.is_error:
            text = f"[error: {result.error_kind or 'error'}] {text}"
        return text


@dataclass(frozen=True)
class AssistantTurn:
    item: AssistantItem
    index: int
    answers: list[Answer]


Entry = UserText | AssistantTurn


def item_text(item: Item) -> str:
    """User-side items as text; a short header says what each one is."""
    if isinstance(item, InstructionItem):
        text = f"Instruction: {item.text}"
        if item.images:
            text += "\n" + "\n".join(ref.placeholder() for ref in item.images)
        return text
    if isinstance(item, RevisionItem):
        return f"Instruction revision (from the operator, while the task runs): {item.text}"
    if isinstance(item, TaskNotesItem):
        return f"Task notes (version {item.version}):\n{item.text}"
    if isinstance(item, NoticeItem):
        return f"Harness notice: {item.text}"
    if isinstance(item, CheckpointItem):
        source = item.source
        return (
            f"Checkpoint summary of turns {source.first_turn}-{source.last_turn} "
            f"(earlier context, compacted):\n{item.text}"
        )
    if isinstance(item, ToolResultItem):
        return f"Result of an earlier {item.name} call ({item.call_id}):\n{item.text}"
    raise TypeError(f"{type(item).__name__} is not user-side text")


def image_caption(image: ImagePart) -> str:
    """The line shown before an image; it matches the placeholder the image leaves behind
    in tool results and instructions, so the model can tell which image is which."""
    return image.ref().placeholder()


def read_transcript(items: list[Item], *, tools_offered: bool = True) -> list[Entry]:
    """Items -> entries with every call answered right after its turn (module docstring).

    With ``tools_offered=False`` calls are written into the assistant's text and results
    become user text.
    """
    if not tools_offered:
        items = [_calls_as_text(item) for item in items]
    results_at: dict[str, list[int]] = defaultdict(list)
    for index, item in enumerate(items):
        if isinstance(item, ToolResultItem):
            results_at[item.call_id].append(index)
    placed: set[int] = set()
    used_ids: set[str] = set()
    entries: list[Entry] = []
    for index, item in enumerate(items):
        if isinstance(item, AssistantItem):
            answers = []
            for call in item.tool_calls:
                found = next(
                    (at for at in results_at.get(call.id, []) if at > index and at not in placed),
                    None,
                )
                result = None
                if found is not None:
                    placed.add(found)
                    result = items[found]
                    assert isinstance(result, ToolResultItem)
                answers.append(
                    Answer(
                        call=call,
                        wire_id=_unique(call.id or new_id("call"), used_ids),
                        result=result,
                        index=index if found is None else found,
                    )
                )
            entries.append(AssistantTurn(item=item, index=index, answers=answers))
        elif isinstance(item, ToolResultItem):
            if index not in placed:
                entries.append(UserText(item_text(item), index))
        else:
            text = item_text(item)
            if text.strip():
                entries.append(UserText(text, index))
    return entries


def _calls_as_text(item: Item) -> Item:
    if not isinstance(item, AssistantItem) or not item.tool_calls:
        return item
    lines = [item.text] if item.text else []
    for call in item.tool_calls:
        lines.append(f"[called {call.name} ({call.id}) with {arguments_json(call)}]")
    return item.model_copy(update={"text": "\n".join(lines), "tool_calls": []})


def _unique(call_id: str, used: set[str]) -> str:
    candidate, count = call_id, 1
    while candidate in used:
        count += 1
        candidate = f"{call_id}_{count}"
    used.add(candidate)
    return candidate


# --------------------------------------------------------------------------- tool names

WIRE_NAME_MAX = 64


def _wire_safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:WIRE_NAME_MAX] or "tool"


class ToolNames:
    """Tool names as the wire accepts them, and back.

    Names that are already safe pass through unchanged (the common case costs nothing);
    ``ros.move_to`` goes out as ``ros_move_to`` and a call to ``ros_move_to`` comes back as
    ``ros.move_to``. Clashes after the rewrite get a numeric suffix.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._to_wire: dict[str, str] = {}
        self._from_wire: dict[str, str] = {}
        for name in names:
            wire = base = _wire_safe(name)
            suffix = 2
            while wire in self._from_wire:
                tail = f"_{suffix}"
                wire = base[: WIRE_NAME_MAX - len(tail)] + tail
                suffix += 1
            self._to_wire[name] = wire
            self._from_wire[wire] = name

    def wire(self, name: str) -> str:
        """The name to send (a tool no longer offered is still made safe)."""
        return self._to_wire.get(name) or _wire_safe(name)

    def original(self, wire_name: str) -> str:
        return self._from_wire.get(wire_name, wire_name)


# --------------------------------------------------------------------------- arguments


def parse_arguments(text: str | None) -> tuple[dict[str, Any], str | None]:
    """Tool-call argument text -> (arguments, raw text if it was not a JSON object).

    Empty text means no arguments. A JSON string that itself holds a JSON object (some
    local models encode twice) is unwrapped.
    """
    raw = (text or "").strip()
    if not raw:
        return {}, None
    try:
        value = json.loads(raw)
        if isinstance(value, str):
            value = json.loads(value)
    except ValueError:
        return {}, text
    if isinstance(value, dict):
        return value, None
    return {}, text


def tool_call(call_id: str | None, name: str, arguments: str | dict[str, Any] | None) -> ToolCall:
    """A :class:`ToolCall` from wire fields (argument text or an already-parsed object)."""
    if isinstance(arguments, dict):
        parsed, raw = arguments, None
    else:
        parsed, raw = parse_arguments(arguments)
    return ToolCall(id=call_id or new_id("call"), name=name, arguments=parsed, raw_arguments=raw)


def cut_last_call(calls: list[ToolCall], arguments_text: str) -> list[ToolCall]:
    """``calls`` of an answer the output limit stopped, the last one marked ``cut`` with
    ``arguments_text`` (what arrived of its arguments) kept as its raw arguments.

    The limit stops the answer's end, so the last call may have been stopped anywhere,
    even between a closing brace that made its arguments parse and the end of the call;
    it is never taken as whole. The calls before it arrived whole.
    """
    if not calls:
        return calls
    last = calls[-1].model_copy(
        update={"cut": True, "arguments": {}, "raw_arguments": arguments_text}
    )
    return [*calls[:-1], last]


def complete_before_cut(calls: list[ToolCall]) -> bool:
    """Whether an answer the output limit cut still holds a complete first call.

    The limit cuts the answer's end, so only its last call can be cut; a first call that
    another call follows, with a name and arguments that parse, arrived whole. Under one
    tool per turn it is the only call that would run anyway (the rest are answered "not
    executed"), so nothing is lost by running it.
    """
    return (
        len(calls) >= 2
        and bool(calls[0].name)
        and calls[0].raw_arguments is None
        and not calls[0].cut
    )


def arguments_json(call: ToolCall) -> str:
    """The arguments to send back; a call whose text was not a JSON object is sent as
    ``{}`` (servers that parse history would reject it, and the result quotes it)."""
    if call.raw_arguments is not None:
        return "{}"
    return json.dumps(call.arguments, ensure_ascii=False)
