"""Provider-neutral items -> Anthropic Messages content: the alternating messages, their
blocks, and where each item ended (the anchors prompt caching marks).

The rules these follow are the Messages API's, listed in :mod:`harness.providers.anthropic`
(which builds the rest of the request and sends it): roles alternate and the first and
last messages are the user's, thinking blocks go back unchanged ahead of their turn's text
and tool use, tool-use ids are rewritten to the characters the API accepts, and images
not sent are captioned instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.messages import AssistantItem, RefreshedBlock
from harness.providers.remote import IMAGE_NOT_SENT
from harness.providers.transcript import AssistantTurn, ToolNames, image_caption

__all__ = [
    "CONTINUE_TEXT",
    "PROVIDER_TAG",
    "THINKING_TYPES",
    "Conversation",
    "assistant_blocks",
    "refreshed_blocks",
    "text_block",
    "thinking_blocks",
    "tool_use_id",
]

PROVIDER_TAG = "anthropic"
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
CONTINUE_TEXT = "Continue."


@dataclass
class Conversation:
    """Messages under construction, plus the block each item ended in (for caching)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    anchors: dict[int, dict[str, Any]] = field(default_factory=dict)

    def add(self, role: str, blocks: list[dict[str, Any]], index: int | None) -> None:
        if not blocks:
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == role == "user":
            last["content"].extend(blocks)
        else:
            if last is not None and last["role"] == role == "assistant":
                self.messages.append({"role": "user", "content": [text_block(CONTINUE_TEXT)]})
            self.messages.append({"role": role, "content": list(blocks)})
        if index is not None:
            for block in blocks:
                if block["type"] not in THINKING_TYPES:
                    self.anchors[index] = block

    def finish(self) -> None:
        """The first and the last message must be the user's."""
        if not self.messages or self.messages[0]["role"] != "user":
            self.messages.insert(0, {"role": "user", "content": [text_block(CONTINUE_TEXT)]})
        if self.messages[-1]["role"] != "user":
            self.messages.append({"role": "user", "content": [text_block(CONTINUE_TEXT)]})

    def anchor_at_or_before(self, position: int) -> dict[str, Any] | None:
        candidates = [index for index in self.anchors if index <= position]
        return self.anchors[max(candidates)] if candidates else None

    def thinking_allowed(self) -> bool:
        """False when the last assistant turn used a tool without a thinking block first:
        the API rejects such a continuation while thinking is on."""
        for message in reversed(self.messages):
            if message["role"] != "assistant":
                continue
            content = message["content"]
            uses_tool = any(block["type"] == "tool_use" for block in content)
            return not uses_tool or content[0]["type"] in THINKING_TYPES
        return True


def assistant_blocks(turn: AssistantTurn, names: ToolNames) -> list[dict[str, Any]]:
    """One assistant turn's blocks: its own thinking, its text, then its tool uses (never
    only thinking: the API rejects an assistant message without text or tool use)."""
    blocks = thinking_blocks(turn.item)
    if turn.item.text:
        blocks.append(text_block(turn.item.text))
    for answer in turn.answers:
        arguments = answer.call.arguments if answer.call.raw_arguments is None else {}
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_use_id(answer.wire_id),
                "name": names.wire(answer.call.name),
                "input": arguments,
            }
        )
    if not any(block["type"] not in THINKING_TYPES for block in blocks):
        blocks.append(text_block("(no text)"))
    return blocks


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_id(wire_id: str) -> str:
    """Anthropic accepts ids of letters, digits, ``_`` and ``-`` only (ids from another
    provider, or a resumed session, may carry others)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", wire_id)


def thinking_blocks(item: AssistantItem) -> list[dict[str, Any]]:
    """Signed thinking and redacted thinking from Anthropic, unchanged; reasoning from any
    other provider cannot be verified by the API and is not sent."""
    blocks: list[dict[str, Any]] = []
    for block in item.reasoning:
        if block.provider != PROVIDER_TAG:
            continue
        if block.redacted:
            blocks.append({"type": "redacted_thinking", "data": block.redacted})
        elif block.signature:
            blocks.append(
                {"type": "thinking", "thinking": block.text, "signature": block.signature}
            )
    return blocks


def refreshed_blocks(refreshed: RefreshedBlock, *, images: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = refreshed.text()
    if text:
        blocks.append(text_block(text))
    for image in refreshed.images:
        if not images:
            blocks.append(text_block(f"{image_caption(image)} {IMAGE_NOT_SENT}"))
            continue
        blocks.append(text_block(image_caption(image)))
        blocks.append(
            {
                "type": "image",
                "source": {"type": "base64", "media_type": image.media_type, "data": image.base64},
            }
        )
    return blocks
