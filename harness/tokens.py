"""Token estimates: the one place every budget and threshold reads.

Estimates are fast character-based counts (exact tokenizers are model-specific, download
their vocabularies at run time, and cost far more than a budget decision needs), calibrated
by the provider's own usage reports when those are plausible. Images are costed by each
provider's published formula from their pixel size, never from base64 length.

A usage report several times larger than what was sent is accounting noise (providers
that bill server-side machinery into the prompt count): it is ignored for calibration, so
it can never make compaction fire on a nearly empty context. A plausible report that says
the estimate is far too low (a chat format that spends 2.4 tokens where the estimate
counted one) is believed at once: under-estimating is what overflows the window.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ImageCostModel",
    "TokenEstimator",
    "anthropic_image_tokens",
    "openai_image_tokens",
]

ImageCostModel = Literal["openai", "anthropic", "generic"]

log = logging.getLogger(__name__)


def openai_image_tokens(width: int, height: int, *, detail: str = "high") -> int:
    """OpenAI's published tile formula for GPT-4o-class vision input.

    Low detail costs a flat 85. High detail: fit within 2048x2048, then scale so the
    shortest side is at most 768, then 170 per 512px tile plus 85.
    """
    if detail == "low":
        return 85
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's published estimate: width * height / 750, after the long edge is
    limited to 1568 pixels."""
    w, h = float(width), float(height)
    if max(w, h) > 1568:
        scale = 1568 / max(w, h)
        w, h = w * scale, h * scale
    return max(1, math.ceil(w * h / 750))


@dataclass
class TokenEstimator:
    """Estimates tokens of text, JSON, tool schemas and images for one model family.

    ``chars_per_token`` is about 4 for English and code with current BPE vocabularies.
    ``text()`` and ``json()`` return raw estimates, cheap enough to cache per item;
    ``calibrated()`` applies the correction learned from usage reports to a sum of them, so
    cached per-item numbers never go stale when the calibration moves.
    """

    image_cost: ImageCostModel = "generic"
    chars_per_token: float = 4.0
    calibration: float = 1.0
    noise_factor: float = 3.0
    """Reports more than this many times the estimate are ignored as accounting noise."""
    far_factor: float = 1.5
    """A plausible report more than this many times the (calibrated) estimate resets the
    calibration to it at once, instead of moving the running median."""
    ignored_reports: int = 0
    server_counted: bool = False
    """The model's server counted a prompt for this estimator before its first decision
    (:func:`harness.context.admission.calibrate_from_server`)."""
    recalibrations: int = 0
    """How often a far-off report reset the calibration."""
    _samples: list[float] = field(default_factory=list, repr=False)

    def text(self, text: str) -> int:
        if not text:
            return 0
        # Non-ASCII characters (CJK, symbols) are about one token each; ASCII ~4 chars.
        non_ascii = len(text.encode("utf-8")) - len(text)
        ascii_chars = len(text) - min(non_ascii, len(text))
        return max(1, math.ceil(ascii_chars / self.chars_per_token + non_ascii / 2.0))

    def calibrated(self, raw_text_tokens: int) -> int:
        """Apply the learned calibration to a sum of raw text estimates."""
        return math.ceil(raw_text_tokens * self.calibration)

    def json(self, value: Any) -> int:
        return self.text(json.dumps(value, separators=(",", ":"), ensure_ascii=False))

    def image(self, width: int, height: int) -> int:
        if self.image_cost == "anthropic":
            return anthropic_image_tokens(width, height)
        return openai_image_tokens(width, height)

    def observe_usage(self, *, estimated_prompt: int, reported_prompt: int) -> bool:
        """Calibrate from a provider usage report; return False if it was ignored as noise.

        Only plausible reports (within ``noise_factor`` of the estimate either way) move the
        calibration. Each one moves it a little (a running median of recent ratios), so one
        odd report cannot swing every threshold, except a report more than ``far_factor``
        above the estimate: the estimate is then far too low and would let the prompt
        overflow, so the calibration restarts from that report. The calibration stays
        within ``1 / noise_factor`` .. ``noise_factor``.
        """
        if estimated_prompt <= 0 or reported_prompt <= 0:
            return False
        ratio = reported_prompt / estimated_prompt
        if ratio > self.noise_factor or ratio < 1.0 / self.noise_factor:
            self.ignored_reports += 1
            log.info(
                "usage report ignored as accounting noise: provider reported %d prompt tokens, "
                "about %d were sent (more than %gx apart)",
                reported_prompt,
                estimated_prompt,
                self.noise_factor,
            )
            return False
        # The estimate already includes the current calibration; learn the correction.
        sample = self.calibration * ratio
        if ratio > self.far_factor:
            self._samples = [sample]
            self.recalibrations += 1
            log.info(
                "token estimate recalibrated: provider reported %d prompt tokens where about "
                "%d were estimated",
                reported_prompt,
                estimated_prompt,
            )
        else:
            self._samples.append(sample)
            del self._samples[:-15]
        ordered = sorted(self._samples)
        median = ordered[len(ordered) // 2]
        self.calibration = min(self.noise_factor, max(1.0 / self.noise_factor, median))
        return True
