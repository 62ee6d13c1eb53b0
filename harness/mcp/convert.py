"""MCP tool results to :class:`ToolOutput`, from the protocol's wire format.

Results arrive as wire-format dicts (``content``, ``structuredContent``, ``isError``), so
this module works the same with either major version of the SDK. Text blocks become the
text the model reads; ``structuredContent`` becomes ``data``; images become transient
:class:`ImagePart` images (shown to the next model call only); ``isError`` becomes an
error result the model can read and act on.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from harness.config import ObservationConfig
from harness.images import encode_frame
from harness.messages import ImagePart
from harness.tools import ToolOutput

__all__ = ["MODEL_IMAGE_TYPES", "image_part", "to_tool_output", "wire"]

MODEL_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image types every provider accepts as-is; anything else is re-encoded."""


def wire(value: Any) -> dict[str, Any]:
    """An SDK model (either major version) or a dict, as the protocol's JSON object."""
    if isinstance(value, Mapping):
        return dict(value)
    return value.model_dump(by_alias=True, mode="json", exclude_none=True)


def image_part(data: bytes, media_type: str, *, label: str, images: ObservationConfig) -> ImagePart:
    """An image block as the model will see it.

    Passed through byte for byte when the provider accepts its type and it is no larger
    than ``observation.max_image_side``; otherwise decoded and encoded again the way
    camera frames are (so a 4K PNG from a perception server costs what a frame costs).
    Raises ValueError when the bytes are not an image.
    """
    try:
        with Image.open(io.BytesIO(data)) as probe:
            width, height = probe.size
            get_mime = getattr(probe, "get_format_mimetype", None)
            detected = (get_mime() if get_mime else None) or media_type
            if detected in MODEL_IMAGE_TYPES and max(width, height) <= images.max_image_side:
                return ImagePart(
                    data=data, media_type=detected, width=width, height=height, label=label
                )
            frame = np.asarray(probe.convert("RGB"))
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise ValueError(f"not a readable image ({media_type}, {len(data)} bytes): {exc}") from None
    return encode_frame(
        frame,
        label=label,
        fmt=images.image_format,
        quality=images.jpeg_quality,
        max_side=images.max_image_side,
    )


def _decode_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"invalid base64 data: {exc}") from None


def to_tool_output(
    result: Any, *, label: str, images: ObservationConfig | None = None
) -> ToolOutput:
    """Convert one ``tools/call`` result.

    Args:
        result: The SDK's ``CallToolResult`` or its wire-format dict.
        label: Names the images (``server.tool``) in placeholders and the run store.
        images: Image limits (defaults: the observation defaults).
    """
    payload = wire(result)
    limits = images or ObservationConfig()
    texts: list[str] = []
    parts: list[ImagePart] = []
    for index, block in enumerate(payload.get("content") or []):
        kind = block.get("type")
        image_label = label if index == 0 else f"{label}#{index}"
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "image":
            _add_image(
                block.get("data", ""), block.get("mimeType", ""), image_label, limits, parts, texts
            )
        elif kind == "resource":
            resource = block.get("resource") or {}
            uri = resource.get("uri", "")
            mime = resource.get("mimeType", "")
            if "text" in resource:
                texts.append(f"[resource {uri}]\n{resource['text']}")
            elif str(mime).startswith("image/"):
                _add_image(resource.get("blob", ""), mime, image_label, limits, parts, texts)
            else:
                size = len(resource.get("blob", "")) * 3 // 4
                texts.append(f"[resource {uri} ({mime or 'binary'}, about {size} bytes) omitted]")
        elif kind == "resource_link":
            name = block.get("name") or block.get("uri", "")
            texts.append(f"[resource link {name}: {block.get('uri', '')}]")
        elif kind == "audio":
            size = len(block.get("data", "")) * 3 // 4
            texts.append(
                f"[audio {block.get('mimeType', '')}, about {size} bytes: not passed to the model]"
            )
        else:
            texts.append(f"[{kind} content omitted]")
    if not texts and parts:
        texts = [f"image {p.label} {p.width}x{p.height}" for p in parts]
    data = payload.get("structuredContent")
    text = "\n".join(texts)
    if payload.get("isError"):
        if not text:
            text = json.dumps(data) if data is not None else "the tool reported an error"
        return ToolOutput(
            text=text, data=data, images=parts, is_error=True, error_kind="tool_error"
        )
    return ToolOutput(text=text, data=data, images=parts)


def _add_image(
    encoded: str,
    media_type: str,
    label: str,
    limits: ObservationConfig,
    parts: list[ImagePart],
    texts: list[str],
) -> None:
    try:
        parts.append(image_part(_decode_base64(encoded), media_type, label=label, images=limits))
    except ValueError as exc:
        texts.append(f"[image {label} could not be used: {exc}]")
