"""Image metadata out of every image the harness keeps or sends, without re-encoding it.

A camera, a phone or an editing tool writes text into the file beside the pixels: EXIF
(owner, serial numbers, GPS), XMP, JPEG comments, PNG text chunks. Whatever a tool or an
operator hands over, that text would otherwise reach the run store, the HTML report and
the provider, and no redactor reads inside image bytes. :func:`strip_metadata` drops it
at the segment level, so the pixels (and a JPEG's quality) are untouched:

- JPEG: every APP1..APP15 segment (EXIF, XMP, ICC, Photoshop IPTC...) and every COM
  segment before the scan; APP0 (JFIF/JFXX: density, a thumbnail) stays;
- PNG: every ancillary chunk but the few that change how pixels look (``tRNS``, ``gAMA``,
  ``cHRM``, ``sRGB``, ``pHYs``, ``sBIT``, ``bKGD``): text (``tEXt``, ``zTXt``, ``iTXt``),
  ``eXIf``, ``tIME`` and ``iCCP`` (it carries a free-text profile name) go;
- WebP: the ``EXIF`` and ``XMP `` chunks (and the flags that announce them).

Anything it cannot parse is returned as it came (a broken file is the model's problem to
read, not ours to guess at). It imports nothing from the harness: :class:`ImagePart` calls
it on every image it is built with.
"""

from __future__ import annotations

import struct

__all__ = ["strip_metadata"]

JPEG_SOI = b"\xff\xd8"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_KEPT_ANCILLARY = frozenset({b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"pHYs", b"sBIT", b"bKGD"})
WEBP_DROPPED = frozenset({b"EXIF", b"XMP "})
WEBP_FLAG_EXIF = 0x08
WEBP_FLAG_XMP = 0x04


def strip_metadata(data: bytes) -> bytes:
    """``data`` without the metadata described in the module docstring."""
    try:
        if data.startswith(JPEG_SOI):
            return _jpeg(data)
        if data.startswith(PNG_SIGNATURE):
            return _png(data)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp(data)
    except (IndexError, struct.error, ValueError):
        return data
    return data


def _jpeg(data: bytes) -> bytes:
    out = [JPEG_SOI]
    pos = 2
    dropped = False
    while pos < len(data):
        if data[pos] != 0xFF:
            raise ValueError("not a marker")
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == 0xDA or marker == 0xD9:  # start of scan / end: the rest is image data
            if not dropped:
                return data
            out.append(data[pos:])
            return b"".join(out)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # markers without a length
            out.append(data[pos : pos + 2])
            pos += 2
            continue
        (length,) = struct.unpack(">H", data[pos + 2 : pos + 4])
        end = pos + 2 + length
        if end > len(data) or length < 2:
            raise ValueError("segment runs past the end")
        if 0xE1 <= marker <= 0xEF or marker == 0xFE:
            dropped = True
        else:
            out.append(data[pos:end])
        pos = end
    return b"".join(out)


def _png(data: bytes) -> bytes:
    out = [PNG_SIGNATURE]
    pos = len(PNG_SIGNATURE)
    dropped = False
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            raise ValueError("chunk runs past the end")
        critical = kind[:1].isupper()
        if critical or kind in PNG_KEPT_ANCILLARY:
            out.append(data[pos:end])
        else:
            dropped = True
        pos = end
        if kind == b"IEND":
            break
    return b"".join(out) if dropped else data


def _webp(data: bytes) -> bytes:
    chunks = []
    pos = 12
    while pos + 8 <= len(data):
        kind = data[pos : pos + 4]
        (length,) = struct.unpack("<I", data[pos + 4 : pos + 8])
        end = pos + 8 + length + (length & 1)
        if end > len(data) + 1:
            raise ValueError("chunk runs past the end")
        chunk = data[pos:end]
        if kind == b"VP8X":
            flags = chunk[8] & ~(WEBP_FLAG_EXIF | WEBP_FLAG_XMP)
            chunk = chunk[:8] + bytes([flags]) + chunk[9:]
        if kind not in WEBP_DROPPED:
            chunks.append(chunk)
        pos = end
    body = b"WEBP" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body
