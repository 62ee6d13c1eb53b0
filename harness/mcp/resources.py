"""The ``read_resource`` tool: reading what an MCP tool pointed at with a ``resource_link``.

A tool may answer with a link (``resource_link``: a URI, a name) instead of the content,
so that a large log or map is fetched only when needed. The model reads it with
``read_resource(uri, offset, limit)``, bounded the way ``recall`` is: a slice of at most
``RESOURCE_MAX_LIMIT`` characters with a header that says where the next slice starts.
Images in the resource reach the next model call only, like any tool image; other binary
content is described, never pasted.

Each server remembers the links it returned (:class:`ResourceLinks`), so that a read
goes to the server that linked the URI most recently.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.config import ObservationConfig
from harness.mcp.convert import image_part
from harness.messages import ImagePart
from harness.tools import Tool, ToolOutput

__all__ = [
    "MAX_REMEMBERED_LINKS",
    "READ_RESOURCE",
    "RESOURCE_MAX_LIMIT",
    "ReadResourceArgs",
    "ResourceLinks",
    "render_contents",
]

READ_RESOURCE = "read_resource"
RESOURCE_MAX_LIMIT = 20_000
"""Largest slice one call returns (the same bound as ``recall``)."""
MAX_REMEMBERED_LINKS = 1000
"""Resource links remembered per server (so read_resource knows whom to ask)."""


class ResourceLinks:
    """The resource links one server returned, most recent last; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._links: OrderedDict[str, int] = OrderedDict()
        self._link_count = 0

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._links)

    def recency(self, uri: str) -> int:
        """How recently a link to ``uri`` was returned (0: never; larger: later)."""
        with self._lock:
            return self._links.get(uri, 0)

    def remember(self, result: Mapping[str, Any]) -> None:
        """Note the ``resource_link`` blocks of a tool result (wire format)."""
        uris = [
            str(block.get("uri"))
            for block in result.get("content") or []
            if block.get("type") == "resource_link" and block.get("uri")
        ]
        with self._lock:
            for uri in uris:
                self._link_count += 1
                self._links[uri] = self._link_count
                self._links.move_to_end(uri)
            while len(self._links) > MAX_REMEMBERED_LINKS:
                self._links.popitem(last=False)


class ReadResourceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    uri: str = Field(min_length=1, description="The URI of a resource link a tool returned.")
    offset: int = Field(0, ge=0, description="First character to return.")
    limit: int = Field(4000, ge=1, le=RESOURCE_MAX_LIMIT, description="Characters to return.")


def read_resource_tool(read: Callable[[str, int, int], ToolOutput]) -> Tool:
    """The tool, over ``read(uri, offset, limit)`` (the manager picks the server)."""
    return Tool(
        READ_RESOURCE,
        "Read a resource that an MCP tool returned as a resource link (its URI), a slice "
        "at a time.",
        lambda **kw: read(kw["uri"], kw["offset"], kw["limit"]),
        input_model=ReadResourceArgs,
        source="mcp",
    )


def render_contents(
    result: Mapping[str, Any],
    *,
    uri: str,
    offset: int,
    limit: int,
    label: str,
    images: ObservationConfig,
) -> ToolOutput:
    """One ``resources/read`` result as a bounded slice of text, plus its images."""
    texts: list[str] = []
    parts: list[ImagePart] = []
    for content in result.get("contents") or []:
        mime = str(content.get("mimeType") or "")
        if "text" in content:
            texts.append(str(content["text"]))
        elif mime.startswith("image/"):
            try:
                data = base64.b64decode(str(content.get("blob", "")), validate=True)
                parts.append(
                    image_part(data, mime, label=f"{label}#{len(parts) + 1}", images=images)
                )
            except (binascii.Error, ValueError) as exc:
                texts.append(f"[image {content.get('uri', uri)} could not be used: {exc}]")
        else:
            size = len(str(content.get("blob", ""))) * 3 // 4
            texts.append(
                f"[binary content {content.get('uri', uri)} ({mime or 'unknown type'}, about "
                f"{size} bytes): not shown]"
            )
    text = "\n".join(texts)
    if not text and parts:
        return ToolOutput(
            text=f"[{uri}: {len(parts)} image(s), shown on the next turn]", images=parts
        )
    if offset >= len(text) and text:
        return ToolOutput.error(
            f"offset {offset} is past the end of {uri} ({len(text)} characters)", "out_of_range"
        )
    end = min(len(text), offset + limit)
    header = f"{uri} characters {offset}-{end} of {len(text)}"
    if end < len(text):
        header += f"; continue with offset={end}"
    return ToolOutput(text=f"[{header}]\n{text[offset:end]}", images=parts)
