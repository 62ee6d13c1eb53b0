"""Measuring what a model received: tokens, cacheable prefix, readable text.

Every policy's requests, the baselines' and the real Harness's, are
:class:`~harness.messages.ModelRequest` objects, measured here by one meter that uses the
harness's own token accounting (:class:`~harness.tokens.TokenEstimator`, per-item
estimates from :class:`~harness.context.Context`, images by the provider's pixel formula).
So the meter's total for a request equals the ``prompt_snapshot`` the Harness emitted for
it, and no policy is measured with a different ruler.

A request is a sequence of *segments* in the order providers cache them: tool
definitions, system blocks, conversation items, then the refreshed brief/observation and
images. Two segments are the same when their provider-visible content is the same
(internal ids and timestamps are ignored), which is what a prompt cache keys on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from harness.context import ITEM_OVERHEAD_TOKENS, Budget, Context
from harness.messages import (
    AssistantItem,
    Item,
    ModelRequest,
    ToolResultItem,
)
from harness.tokens import TokenEstimator

__all__ = ["RequestMeter", "Segment", "request_text", "unmatched_tool_items"]

_HIDDEN_FIELDS = {"id", "created_at", "task_id", "turn"}
"""Item fields that never reach a provider (so they do not break a prompt cache)."""


@dataclass(frozen=True)
class Segment:
    """One cacheable unit of a request."""

    key: str
    tokens: int
    part: str
    """``tools``, ``system``, ``item`` or ``refreshed``."""


class RequestMeter:
    """Token and prefix accounting for requests, with per-object caches.

    ``in_place_rewrites`` counts items that reappeared under an id already seen with
    different content: a compactor that rewrites an item without a new id would leave the
    harness's own per-id token cache stale, so the benchmark reports it.
    """

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator
        self._context = Context(estimator, Budget(context_window=1, reserve_tokens=0))
        self._objects: dict[int, tuple[object, Segment]] = {}
        self._content_by_id: dict[str, str] = {}
        self.in_place_rewrites = 0

    # ------------------------------------------------------------------ segments

    def segments(self, request: ModelRequest) -> list[Segment]:
        parts = [self._tools_segment(request)] if request.tools else []
        for block in request.system:
            if block.text:
                parts.append(
                    Segment(
                        key=_digest(f"{block.name}\0{block.text}"),
                        tokens=self.estimator.text(block.text) + ITEM_OVERHEAD_TOKENS,
                        part="system",
                    )
                )
        parts.extend(self.item_segment(item) for item in request.items)
        refreshed = request.refreshed
        if refreshed is not None:
            text = refreshed.text()
            context = self._context
            context.set_refreshed(
                brief=refreshed.brief, observation=refreshed.observation, images=[]
            )
            text_tokens, _ = context.refreshed_tokens()
            parts.append(Segment(key=_digest(text), tokens=text_tokens, part="refreshed"))
            for image in refreshed.images:
                parts.append(
                    Segment(
                        key=image.sha256,
                        tokens=self.estimator.image(image.width, image.height),
                        part="refreshed",
                    )
                )
        return parts

    def total(self, request: ModelRequest) -> int:
        return sum(segment.tokens for segment in self.segments(request))

    def item_tokens(self, item: Item) -> int:
        return self.item_segment(item).tokens

    def item_segment(self, item: Item) -> Segment:
        cached = self._objects.get(id(item))
        if cached is not None and cached[0] is item:
            return cached[1]
        key = _digest(item.model_dump_json(exclude=_HIDDEN_FIELDS))
        previous = self._content_by_id.get(item.id)
        if previous is not None and previous != key:
            self.in_place_rewrites += 1
            fresh = Context(self.estimator, Budget(context_window=1, reserve_tokens=0))
            tokens = fresh.item_tokens(item)
        else:
            tokens = self._context.item_tokens(item)
        self._content_by_id[item.id] = key
        segment = Segment(key=key, tokens=tokens, part="item")
        self._objects[id(item)] = (item, segment)
        return segment

    def _tools_segment(self, request: ModelRequest) -> Segment:
        cached = self._objects.get(id(request.tools))
        if cached is not None and cached[0] is request.tools:
            return cached[1]
        self._context.set_tools(request.tools)
        key = _digest(json.dumps([spec.model_dump() for spec in request.tools], sort_keys=True))
        segment = Segment(key=key, tokens=self._context.tools_tokens(), part="tools")
        self._objects[id(request.tools)] = (request.tools, segment)
        return segment


def request_text(request: ModelRequest) -> str:
    """Everything the model can read in a request, as one string (for fact probes).

    Only what provider adapters send: a tool result's ``archive`` field stays in the
    harness, so an address counts only where the text itself shows it (truncation and
    pruning markers, checkpoints).
    """
    parts = [block.text for block in request.system]
    for item in request.items:
        if isinstance(item, AssistantItem):
            parts.append(item.text)
            parts.extend(r.text for r in item.reasoning)
            parts.extend(json.dumps(c.arguments) for c in item.tool_calls)
        elif isinstance(item, ToolResultItem):
            parts.append(item.text)  # ``archive`` is not sent; only addresses in the text are
            if item.evaluation is not None:
                parts.append(item.evaluation.evidence)
        else:
            parts.append(item.text)
    if request.refreshed is not None:
        parts.append(request.refreshed.text())
    return "\n".join(parts)


def unmatched_tool_items(items: list[Item]) -> tuple[list[str], list[str]]:
    """Call ids with no result after them, and result call ids with no call before them.

    Providers reject both (a tool call must be answered; a result must answer a call).
    """
    open_calls: dict[str, int] = {}
    orphan_results: list[str] = []
    for item in items:
        if isinstance(item, AssistantItem):
            for call in item.tool_calls:
                open_calls[call.id] = 1
        elif isinstance(item, ToolResultItem):
            if item.call_id in open_calls:
                del open_calls[item.call_id]
            else:
                orphan_results.append(item.call_id)
    return list(open_calls), orphan_results


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
