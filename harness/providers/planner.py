"""``provider: planner``: the offline planner behind the Model protocol.

Clearly an offline stand-in, not a language model: it plans pick-and-place sequences (and,
when the tools offer them, drawers, doors and switches) from the Brief, the tool
declarations and results, the instruction and revisions (grammar in
:mod:`harness.planner.grammar` and :mod:`harness.planner.language`). It cannot write
summaries (``supports_summaries = False``), so compaction and memory use their deterministic
fallbacks with it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harness.messages import ModelRequest
from harness.planner.policy import Planner
from harness.providers.base import Chunk
from harness.providers.scripted import ScriptedModel
from harness.tokens import ImageCostModel

__all__ = ["PlannerModel", "from_config"]

PLANNER_CONTEXT_WINDOW = 64_000


class PlannerModel:
    """Deterministic: the same request always gets the same decision."""

    supports_summaries = False

    def __init__(
        self, *, name: str = "tabletop-planner", context_window: int | None = None
    ) -> None:
        self.name = name
        self.context_window = context_window or PLANNER_CONTEXT_WINDOW
        self.image_cost: ImageCostModel = "generic"
        self.planner = Planner()
        # The scripted model supplies call ids and usage estimates like a real provider's.
        self._engine = ScriptedModel(
            responder=self.planner.decide, name=name, context_window=self.context_window
        )
        self.calls = 0

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]:
        self.calls += 1
        try:
            yield from self._engine.stream(request, cancelled=cancelled)
        finally:
            self._engine.requests.clear()  # keep no transcript (and no images) around


def from_config(config: Any) -> PlannerModel:
    name = config.name if config.name and config.name != "planner" else "tabletop-planner"
    return PlannerModel(name=name, context_window=config.context_window)
