"""The planted-secret byte scan: secrets planted where bounds cut them, in images and in an
eval; then every byte of every file the harness wrote is read back.

Three configured secrets are planted, each caught a different way: an OpenAI-shaped key
(by its shape), the value of the ``model.api_key_env`` variable (by value), and a
deployment secret matched only by ``run.secret_patterns``. They go into text *densely*
(``DENSE``: the three keys again and again), so whatever a bound keeps, its cut falls
inside a key somewhere: the record bound, the Task Notes timeline and notes, the event
text cut, the task-ending notice, a sub-agent's handoff, compaction summaries, instructions
past their bound. Images carry them in the label, EXIF (description, artist), a JPEG
comment and PNG ``tEXt``/``zTXt``/``iTXt`` chunks.

The oracle (:func:`scan`) knows nothing of the redactor: it counts whole keys and every
10-character window of each key in raw bytes (any fragment of 10 or more characters holds
such a window).
"""

from __future__ import annotations

import io
import json
import random
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image
from PIL.PngImagePlugin import PngInfo

from harness.messages import ImagePart, ModelRequest, ModelResponse
from harness.providers import call, reply
from harness.tools import ToolOutput

_rng = random.Random(26)
_ALPHABET = string.ascii_letters + string.digits
SHAPED = "sk-proj-" + "".join(_rng.choice(_ALPHABET) for _ in range(40))
VALUE = "kv_" + "".join(_rng.choice(_ALPHABET) for _ in range(30))
CUSTOM = "local=" + "".join(_rng.choice(_ALPHABET) for _ in range(15))
"""Like the issue's ``local=Zq7Ylocalkey44``: a secret only ``run.secret_patterns`` knows."""
CUSTOM_PATTERN = r"local=[A-Za-z0-9]{15}"
VALUE_ENV = "HARNESS_SCAN_PROVIDER_KEY"
SECRETS = {"shaped": SHAPED, "value": VALUE, "custom": CUSTOM}
FRAGMENT_CHARS = 10
DENSE = " ".join([SHAPED, VALUE, CUSTOM] * 40)
"""About 3,800 characters in which every position is at most 50 characters from a key."""


def dense(offset: int, chars: int | None = None) -> str:
    """``DENSE`` shifted by ``offset`` characters, so cuts land at new places in the keys;
    with ``chars``, only as many whole keys as reach that length (the planted text never
    holds a part of a key itself: any fragment found was cut by the harness)."""
    if chars is None:
        return "." * offset + DENSE
    keys = [SHAPED, VALUE, CUSTOM]
    text = "." * offset
    index = 0
    while len(text) < chars:
        text += keys[index % 3] + " "
        index += 1
    return text


# ====================================================================== the oracle


@dataclass
class Scan:
    files: int = 0
    bytes: int = 0
    whole: int = 0
    fragments: int = 0
    """Occurrences of 10-character windows of a key outside whole keys."""
    where: list[str] = field(default_factory=list)

    def add(self, name: str, data: bytes) -> None:
        self.files += 1
        self.bytes += len(data)
        for label, key in SECRETS.items():
            encoded = key.encode()
            whole = data.count(encoded)
            windows = {key[i : i + FRAGMENT_CHARS].encode() for i in range(len(key) - 9)}
            rest = data.replace(encoded, b"\0")
            fragments = sum(rest.count(window) for window in windows)
            self.whole += whole
            self.fragments += fragments
            if whole or fragments:
                hit = encoded if whole else next(w for w in windows if w in rest)
                at = (data if whole else rest).find(hit)
                self.where.append(
                    f"{name}: {label} key ({whole} whole, {fragments} fragments) "
                    f"{(data if whole else rest)[max(0, at - 40) : at + 50]!r}"
                )

    def add_tree(self, root: Path, prefix: str = "") -> None:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                self.add(f"{prefix}{path.relative_to(root)}", path.read_bytes())

    def line(self) -> str:
        return (
            f"{self.files} files, {self.bytes} bytes: {self.whole} whole secrets, "
            f"{self.fragments} 10-character fragments"
        )


# ====================================================================== images


def jpeg_with_metadata(text: str, *, size: tuple[int, int] = (32, 24)) -> bytes:
    """A small JPEG whose EXIF (description, artist) and comment hold ``text``."""
    image = Image.new("RGB", size, (200, 40, 40))
    exif = Image.Exif()
    exif[0x010E] = text  # ImageDescription
    exif[0x013B] = text  # Artist
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", exif=exif.tobytes(), comment=text.encode())
    return buffer.getvalue()


def png_with_text(text: str, *, size: tuple[int, int] = (24, 16)) -> bytes:
    """A small PNG with ``text`` in a tEXt, a zTXt and an iTXt chunk."""
    image = Image.new("RGB", size, (40, 200, 40))
    info = PngInfo()
    info.add_text("Description", text)
    info.add_text("Comment", text, zip=True)
    info.add_itxt("Author", text)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def planted_images(tag: str) -> list[ImagePart]:
    secrets = " ".join(SECRETS.values())
    return [
        ImagePart(
            data=jpeg_with_metadata(secrets),
            media_type="image/jpeg",
            width=32,
            height=24,
            label=f"{tag} camera {secrets}",
        ),
        ImagePart(
            data=png_with_text(secrets),
            media_type="image/png",
            width=24,
            height=16,
            label=f"{tag} wrist {CUSTOM}",
        ),
    ]


# ====================================================================== tools and models


def dense_text(offset: int) -> str:
    """Read the controller log (it echoes its credentials).

    Args:
        offset: Where to start reading.
    """
    return dense(offset)


def snapshot() -> ToolOutput:
    """Take a picture with both cameras."""
    return ToolOutput(text=f"two frames; {CUSTOM}", images=planted_images("tool"))


PARENT_DECISIONS: list[ModelResponse] = [
    call("dense_text", offset=0),
    call("dense_text", offset=7),
    call("dense_text", offset=13),
    call(
        "update_task_notes",
        phase=dense(3, 400),
        add_notes=[dense(offset, 280 + offset) for offset in range(0, 40, 4)],
    ),
    call("snapshot"),
    call("delegate", goal="read the log and report: " + dense(5, 1500), tools=["dense_text"]),
    reply("Done. " + dense(11)),
    # the second task: one turn (max_turns=1), a text and a call: the harness writes the
    # report and its notice carries the last text, bounded
    ModelResponse(text=dense(17), tool_calls=call("dense_text", offset=2).tool_calls),
]
CHILD_DECISIONS: list[ModelResponse] = [
    call("dense_text", offset=19),
    reply(
        json.dumps(
            {
                "summary": dense(23, 1200),
                "findings": [{"note": dense(o, 600)} for o in (1, 29, 31)],
                "verification": [dense(37, 300)],
            }
        )
    ),
]


class PlantedModel:
    """Decisions from a list; every other request (summaries, lessons) answered with the
    secrets, as a model that saw them in its context would."""

    image_cost = "generic"

    def __init__(self, decisions: Iterable[ModelResponse], *, name: str, window: int) -> None:
        from harness.providers.scripted import ScriptedModel

        self.decisions = list(decisions)
        self.purposes: list[str] = []
        self._inner = ScriptedModel(responder=self._answer, name=name, context_window=window)
        self.name = name
        self.context_window = window

    def _answer(self, request: ModelRequest) -> ModelResponse:
        self.purposes.append(request.purpose)
        if request.purpose == "decide":
            return self.decisions.pop(0)
        if request.purpose == "consolidate":
            lessons = [{"text": f"keys: {dense(o, 500)}", "confidence": 0.9} for o in (2, 9)]
            return reply(json.dumps({"lessons": lessons}))
        return reply("## Summary\n" + dense(41, 2500))

    def stream(self, request: ModelRequest, *, cancelled: Any = None) -> Any:
        return self._inner.stream(request, cancelled=cancelled)
