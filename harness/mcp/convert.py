"""MCP tool results to :class:`ToolOutput`, from the protocol's wire format.

Results arrive as wire-format dicts (``content``, ``structuredContent``, ``isError``), so
this module works the same with either major version of the SDK. Text blocks become the
text the model reads; ``structuredContent`` becomes ``data`` (checked against the tool's
``outputSchema``); images become transient :class:`ImagePart` images (shown to the next
model call only); blocks annotated for the user alone go to the operator, not the model;
``isError`` becomes an error result the model can read and act on.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import re
import struct
import sys
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import numpy as np
from PIL import Image, UnidentifiedImageError

from harness.config import ObservationConfig
from harness.images import encode_frame
from harness.messages import ImagePart
from harness.tools import ToolOutput

__all__ = [
    "MODEL_IMAGE_TYPES",
    "image_part",
    "output_problem",
    "to_tool_output",
    "wire",
    "without_ancillary_chunks",
]

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
    A PNG whose optional (ancillary) chunks are damaged, which browsers and libpng accept
    but Pillow refuses, is passed on without those chunks (the pixels are untouched).
    Raises ValueError when the bytes are not an image.
    """
    try:
        return _image_part(data, media_type, label=label, images=images)
    except ValueError:
        first_error = sys.exc_info()[1]
    for only_broken in (True, False):
        repaired = without_ancillary_chunks(data, only_broken=only_broken)
        if repaired is not None:
            with contextlib.suppress(ValueError):
                return _image_part(repaired, media_type, label=label, images=images)
    assert first_error is not None
    raise first_error


def _image_part(
    data: bytes, media_type: str, *, label: str, images: ObservationConfig
) -> ImagePart:
    try:
        with Image.open(io.BytesIO(data)) as probe:
            width, height = probe.size
            get_mime = getattr(probe, "get_format_mimetype", None)
            detected = (get_mime() if get_mime else None) or media_type
            if detected in MODEL_IMAGE_TYPES and max(width, height) <= images.max_image_side:
                probe.load()  # a header that parses is not yet an image that decodes
                return ImagePart(
                    data=data, media_type=detected, width=width, height=height, label=label
                )
            frame = np.asarray(probe.convert("RGB"))
    except UnidentifiedImageError:
        raise ValueError(
            f"not a readable image ({media_type}, {len(data)} bytes): not a known image format"
        ) from None
    except Image.DecompressionBombError:
        raise ValueError(
            f"not a readable image ({media_type}, {len(data)} bytes): too many pixels"
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:  # Pillow reports bad data as these
        raise ValueError(
            f"not a readable image ({media_type}, {len(data)} bytes): {_plain(exc)}"
        ) from None
    return encode_frame(
        frame,
        label=label,
        fmt=images.image_format,
        quality=images.jpeg_quality,
        max_side=images.max_image_side,
    )


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def without_ancillary_chunks(data: bytes, *, only_broken: bool = True) -> bytes | None:
    """The PNG without its optional (ancillary) chunks: those whose CRC is wrong
    (``only_broken``), or all of them (the last resort, for one whose content Pillow
    refuses, such as an empty ICC profile). None when it is not a PNG, nothing would be left
    out, or a critical chunk is damaged (then the picture itself is, and no repair is
    honest)."""
    if not data.startswith(PNG_SIGNATURE):
        return None
    kept = [PNG_SIGNATURE]
    dropped = 0
    position = len(PNG_SIGNATURE)
    while position + 12 <= len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        end = position + 12 + length
        if end > len(data):
            return None
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        intact = zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        ancillary = bool(kind[0] & 0x20)  # lower-case first letter: safe to leave out
        if not ancillary and not intact:
            return None
        if ancillary and (not intact or not only_broken):
            dropped += 1
        else:
            kept.append(data[position:end])
        position = end
        if kind == b"IEND":
            break
    return b"".join(kept) if dropped else None


_OBJECT_REPR = re.compile(r"<[^<>]*\bat 0x[0-9a-fA-F]+>")


def _plain(exc: BaseException) -> str:
    """An exception's message fit for the model: no Python object reprs."""
    text = _OBJECT_REPR.sub("the data", str(exc)).strip()
    return text or type(exc).__name__


def _decode_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"invalid base64 data: {exc}") from None


def to_tool_output(
    result: Any,
    *,
    label: str,
    images: ObservationConfig | None = None,
    output_schema: Mapping[str, Any] | None = None,
    to_operator: Callable[[str], None] | None = None,
    readable_links: bool = False,
) -> ToolOutput:
    """Convert one ``tools/call`` result.

    Args:
        result: The SDK's ``CallToolResult`` or its wire-format dict.
        label: Names the images (``server.tool``) in placeholders and the run store.
        images: Image limits (defaults: the observation defaults).
        output_schema: The tool's declared ``outputSchema``: ``structuredContent`` that
            does not match it (or is missing) makes the result an ``invalid_output`` error
            (the tool ran; its result cannot be trusted as structured data).
        to_operator: Receives the text of content blocks meant for the user only
            (``annotations.audience == ["user"]``), which the model does not see. Without
            it they stay in the text, marked as meant for the operator.
        readable_links: The ``read_resource`` tool can read this server's resource links
            (the text says so).
    """
    payload = wire(result)
    limits = images or ObservationConfig()
    texts: list[str] = []
    parts: list[ImagePart] = []
    for index, block in enumerate(payload.get("content") or []):
        if _for_user_only(block):
            note = _describe_for_operator(block)
            if to_operator is not None:
                to_operator(f"{label}: {note}")
            else:
                texts.append(f"[for the operator] {note}")
            continue
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
            link = f"[resource link {name}: {block.get('uri', '')}]"
            texts.append(f"{link} (read it with read_resource)" if readable_links else link)
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
    problem = output_problem(data, output_schema) if output_schema is not None else None
    if problem is not None:
        note = f"{label} ran, but its structured result {problem}"
        return ToolOutput(
            text=f"{note}\n{text}" if text else note,
            data=data,
            images=parts,
            is_error=True,
            error_kind="invalid_output",
        )
    return ToolOutput(text=text, data=data, images=parts)


def output_problem(data: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``structuredContent`` does not satisfy a tool's ``outputSchema`` (None: it does)."""
    if data is None:
        return "is missing although the tool declares an outputSchema"
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
        error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(data))
    except jsonschema.SchemaError as exc:
        return f"cannot be checked: the declared outputSchema is invalid ({exc.message})"
    except Exception as exc:  # an unresolvable $ref and the like
        return f"cannot be checked against its outputSchema ({_plain(exc)})"
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
    return f"does not match its declared outputSchema at {where}: {error.message}"


def _for_user_only(block: Mapping[str, Any]) -> bool:
    audience = (block.get("annotations") or {}).get("audience")
    return isinstance(audience, list) and bool(audience) and "assistant" not in audience


def _describe_for_operator(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "resource_link":
        return f"resource {block.get('name') or ''} {block.get('uri', '')}".strip()
    if kind == "resource":
        resource = block.get("resource") or {}
        return str(resource.get("text") or f"resource {resource.get('uri', '')}")
    size = len(str(block.get("data", ""))) * 3 // 4
    return f"{kind} {block.get('mimeType', '')} (about {size} bytes)".strip()


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
