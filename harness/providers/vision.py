"""Does this server's model actually see images? One probe, three tiny requests.

A text-only model behind an OpenAI-compatible server does not refuse an image: depending
on its chat format it reads the data URL as thousands of tokens of text, or drops the
whole message the image is in (and the Brief with it). Neither is an error, so the only
evidence is the prompt size the server reports. The probe sends the same short text three
times, alone, with a flat image and with a noisy image of the same pixel size:

- a model that sees images pays the same for both images (a vision encoder costs by
  pixels, never by how well the PNG compresses);
- a model that reads the image as text pays with the encoded size: the noisy one costs
  thousands of tokens more than the flat one (or overflows a small window);
- a server that drops the image (or its message) reports no more than for the text alone.

:func:`judge` turns the three answers into a :class:`VisionVerdict`; the adapter runs the
requests and remembers the verdict for the session.
"""

from __future__ import annotations

import base64
import io
import random
from dataclasses import dataclass

from PIL import Image

__all__ = [
    "ENCODING_SENSITIVITY_TOKENS",
    "PROBE_SIDE",
    "PROBE_TEXT",
    "ProbeAnswer",
    "VisionVerdict",
    "judge",
    "probe_images",
]

PROBE_SIDE = 16
"""Pixels per side of both probe images (tiny for a vision encoder, and cheap for a server
that reads them as text: the noisy one is then ~750 tokens of prompt, once)."""
PROBE_TEXT = "Reply with one word: what colour is this image?"
ENCODING_SENSITIVITY_TOKENS = 64
"""The noisy image may cost at most this much more than the flat one for a seeing model;
read as text it costs several hundred more (its PNG is ~1,100 base64 characters, the flat
one ~100)."""


@dataclass(frozen=True)
class ProbeAnswer:
    """What one probe request got: the reported prompt tokens, or why there are none."""

    prompt_tokens: int | None = None
    """None when the server reported no usage."""
    rejected: str | None = None
    """The server's error (an HTTP error status) when it refused the request."""
    overflow: bool = False


@dataclass(frozen=True)
class VisionVerdict:
    vision: bool
    reason: str
    decided: bool = True
    """False when the answers could not tell (no usage reported): ``vision`` is then the
    cautious default, and ``model.vision`` should be set."""


def probe_images() -> tuple[str, str]:
    """(flat, noisy) PNG images of :data:`PROBE_SIDE` pixels as ``data:`` URLs; the noise
    is seeded, so every probe sends the same bytes."""
    rng = random.Random(20240605)
    side = PROBE_SIDE
    flat = Image.new("RGB", (side, side), (200, 40, 40))
    noisy = Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3))
    return _data_url(flat), _data_url(noisy)


def _data_url(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def judge(text_only: ProbeAnswer, flat: ProbeAnswer, noisy: ProbeAnswer) -> VisionVerdict:
    """The verdict from the three answers (see the module docstring). ``text_only`` is an
    answer the server gave: when it refuses even that, the probe is not conclusive and
    the caller raises the error instead of judging."""
    for answer in (flat, noisy):
        if answer.overflow:
            return VisionVerdict(
                False, "a 16-pixel image overflowed the window: the server reads images as text"
            )
        if answer.rejected is not None:
            return VisionVerdict(False, f"the server rejects image input: {answer.rejected}")
    counts = (text_only.prompt_tokens, flat.prompt_tokens, noisy.prompt_tokens)
    if any(count is None for count in counts):
        return VisionVerdict(
            False,
            "the server reports no token usage, so the probe cannot tell; images are not "
            "sent (set model.vision: true if the model takes them)",
            decided=False,
        )
    alone, with_flat, with_noisy = (int(count or 0) for count in counts)
    if with_flat <= alone or with_noisy <= alone:
        return VisionVerdict(
            False,
            f"the image was dropped ({alone} prompt tokens without it, {with_flat} and "
            f"{with_noisy} with it)",
        )
    if abs(with_noisy - with_flat) > ENCODING_SENSITIVITY_TOKENS:
        return VisionVerdict(
            False,
            f"the image is read as text: the same 16-pixel image costs {with_flat - alone} "
            f"tokens flat and {with_noisy - alone} noisy",
        )
    return VisionVerdict(True, f"the model sees images ({with_flat - alone} tokens each)")
