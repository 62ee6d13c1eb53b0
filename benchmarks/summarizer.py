"""One deterministic summarizer shared by every policy that summarizes.

Comparing context policies with a real LLM summarizer would measure the LLM as much as
the policy, and would not be reproducible. This extractive stand-in behaves like a
handoff-style summary with a fixed size: it keeps the first line of every record (the
headline a model would most likely keep), every archive address it sees (the harness's
summary prompt asks for addresses verbatim; baselines have none to keep), and the bullets
of the previous summary; when the result is over its token budget the oldest bullets go
first. Facts buried inside a long output are therefore lost by summarizing, as they often
are with a real model, and facts in a headline survive.

It can also fail, deterministically, so every policy's handling of a failed or malformed
summary is exercised: call number ``n`` fails when a seeded hash of ``n`` falls under
``failure_rate``. Failures alternate between an error and an empty (malformed) answer.

``as_model()`` wraps the same function as a :class:`ScriptedModel`, which is how the real
Harness's compactor reaches it (as its ``compaction_model``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from harness.errors import TransientModelError
from harness.messages import (
    AssistantItem,
    InstructionItem,
    Item,
    ModelRequest,
    ModelResponse,
    ToolResultItem,
    Usage,
)
from harness.providers.scripted import ScriptedModel
from harness.tokens import TokenEstimator

__all__ = [
    "ADDRESS_PATTERN",
    "SUMMARY_HEADER",
    "DeterministicSummarizer",
    "SummaryFailedError",
    "render_item",
]

SUMMARY_HEADER = "Checkpoint summary"
"""First line of every summary; bullets under it are carried into the next summary."""
ADDRESS_PATTERN = re.compile(r"archive://[A-Za-z0-9_./\-]+[A-Za-z0-9_]")
HEADLINE_CHARS = 160
BULLET_CHARS = 240


class SummaryFailedError(Exception):
    """The summarizer failed on purpose (an injected failure)."""


def render_item(item: Item) -> str:
    """One conversation item as summarizer input text (its first line is its headline)."""
    if isinstance(item, AssistantItem):
        calls = "; ".join(f"{c.name} {c.arguments}" for c in item.tool_calls)
        return f"assistant: {item.text} -> {calls}" if calls else f"assistant: {item.text}"
    if isinstance(item, ToolResultItem):
        return f"{item.name} result: {item.text}"
    if isinstance(item, InstructionItem):
        return f"instruction: {item.text}"
    return item.text


@dataclass
class DeterministicSummarizer:
    """Extractive, bounded, seeded-failing summarizer (see the module docstring)."""

    estimator: TokenEstimator
    max_tokens: int = 1500
    failure_rate: float = 0.0
    seed: int = 0
    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    """Tokens of every input it was given (what a summarizer model would bill)."""
    failure_calls: list[int] = field(default_factory=list)

    # ------------------------------------------------------------------ the function

    def summarize(self, records: Sequence[str]) -> str:
        """Summarize ``records`` (oldest first); raises :class:`SummaryFailedError` when
        this call is one of the injected failures."""
        self.calls += 1
        self.input_tokens += sum(self.estimator.text(record) for record in records)
        if self._fails(self.calls):
            self.failures += 1
            self.failure_calls.append(self.calls)
            raise SummaryFailedError(f"injected summarizer failure on call {self.calls}")
        return self._extract(records)

    def _fails(self, call: int) -> bool:
        if self.failure_rate <= 0:
            return False
        digest = hashlib.sha256(f"{self.seed}:{call}".encode()).digest()
        return int.from_bytes(digest[:4], "big") / 2**32 < self.failure_rate

    def _extract(self, records: Iterable[str]) -> str:
        bullets: list[str] = []
        seen: set[str] = set()

        def keep(line: str, limit: int) -> None:
            line = line.strip()
            if len(line) > limit:
                line = line[: limit - 3] + "..."
            if line and line not in seen:
                seen.add(line)
                bullets.append(line)

        for record in records:
            for paragraph in record.split("\n\n"):
                lines = [line for line in paragraph.split("\n") if line.strip()]
                if not lines:
                    continue
                if SUMMARY_HEADER in (line.strip() for line in lines):
                    start = [line.strip() for line in lines].index(SUMMARY_HEADER)
                    for line in lines[start + 1 :]:
                        if line.startswith("- "):
                            keep(line[2:], BULLET_CHARS)
                    continue
                keep(lines[0], HEADLINE_CHARS)
                head_addresses = set(ADDRESS_PATTERN.findall(lines[0][:HEADLINE_CHARS]))
                for address in ADDRESS_PATTERN.findall(paragraph):
                    if address not in head_addresses:
                        keep(f"exact output: {address}", BULLET_CHARS)
        while bullets and self._tokens(bullets) > self.max_tokens:
            bullets.pop(0)
        return "\n".join([SUMMARY_HEADER, *(f"- {bullet}" for bullet in bullets)])

    def _tokens(self, bullets: list[str]) -> int:
        return self.estimator.text(SUMMARY_HEADER) + sum(
            self.estimator.text(bullet) + 1 for bullet in bullets
        )

    # ------------------------------------------------------------------ items

    def summarize_items(
        self, items: Sequence[Item], *, bound: Callable[[Item], str] | None = None
    ) -> str:
        """Summarize conversation items (``bound`` may shorten each rendered item)."""
        render = bound or render_item
        return self.summarize([render(item) for item in items])

    # ------------------------------------------------------------------ as a model

    def as_model(self, *, count: Callable[[ModelRequest], int]) -> ScriptedModel:
        """This summarizer as the Harness's ``compaction_model``.

        ``count`` measures each summarization request with the benchmark's token meter
        (reported as the call's usage, so the harness's calibration stays exact). An
        injected failure alternates between a transient provider error and an empty
        answer, the two ways a real summarizer call goes wrong.
        """

        def respond(request: ModelRequest) -> ModelResponse:
            records = [render_item(item) for item in request.items]
            try:
                text = self.summarize(records)
            except SummaryFailedError as exc:
                if self.failures % 2:
                    raise TransientModelError(str(exc)) from None
                text = ""
            usage = Usage(
                input_tokens=count(request),
                output_tokens=self.estimator.text(text),
                requests=1,
            )
            return ModelResponse(text=text, usage=usage)

        return ScriptedModel(
            responder=respond,
            name="deterministic-summarizer",
            image_cost=self.estimator.image_cost,
        )
