"""A model that replays scripted responses or computes them from the request.

It ships in the library (not only in tests) so control scripts, examples and tests can run
the real loop offline and deterministically. It records every request it saw and can say
whether its script was consumed exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from harness.errors import ConfigError, HarnessError, ModelError
from harness.messages import ModelRequest, ModelResponse, ToolCall, Usage, new_id
from harness.providers.base import Chunk, Delta, Final
from harness.tokens import ImageCostModel, TokenEstimator

__all__ = ["ScriptExhaustedError", "ScriptedModel", "call", "reply"]

Step = ModelResponse | BaseException | Callable[[ModelRequest], "ModelResponse | BaseException"]


class ScriptExhaustedError(HarnessError):
    """The model was asked for more responses than its script holds."""


def call(name: str, /, **arguments: Any) -> ModelResponse:
    """A response that calls one tool: ``call("pick", ref="red_cube_1")``."""
    return ModelResponse(tool_calls=[ToolCall(id=new_id("call"), name=name, arguments=arguments)])


def reply(text: str) -> ModelResponse:
    """A final text response (no tool call): the task report."""
    return ModelResponse(text=text)


class ScriptedModel:
    """Replays ``responses`` in order, or calls ``responder(request)`` for each request.

    A step may be a :class:`ModelResponse`, an exception to raise (to test error paths),
    or a function of the request. ``stream_text`` splits text into deltas so streaming
    consumers can be tested. Usage is estimated from the request when a step has none, so
    token accounting looks like a real provider's.
    """

    def __init__(
        self,
        responses: Iterable[Step] | None = None,
        *,
        responder: Callable[[ModelRequest], ModelResponse] | None = None,
        name: str = "scripted",
        context_window: int | None = 200_000,
        image_cost: ImageCostModel = "generic",
        stream_text: bool = False,
    ) -> None:
        if (responses is None) == (responder is None):
            raise ValueError("give exactly one of `responses` or `responder`")
        self._script: list[Step] | None = list(responses) if responses is not None else None
        self._responder = responder
        self.name = name
        self.context_window = context_window
        self.image_cost: ImageCostModel = image_cost
        self.stream_text = stream_text
        self.requests: list[ModelRequest] = []
        self._estimator = TokenEstimator(image_cost=image_cost)
        self._item_cost: dict[str, int] = {}

    # ------------------------------------------------------------------ bookkeeping

    @property
    def remaining(self) -> int:
        """Scripted steps not yet consumed (0 for a responder)."""
        return 0 if self._script is None else len(self._script) - len(self.requests)

    def assert_consumed(self) -> None:
        """Raise unless every scripted response was used exactly once."""
        if self.remaining > 0:
            raise AssertionError(
                f"{self.name}: {self.remaining} scripted response(s) were never requested"
            )

    # ------------------------------------------------------------------ the protocol

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]:
        index = len(self.requests)
        self.requests.append(request)
        if self._responder is not None:
            step: Step = self._responder
        else:
            assert self._script is not None
            if index >= len(self._script):
                raise ScriptExhaustedError(
                    f"{self.name}: request {index + 1} but the script has {len(self._script)}"
                )
            step = self._script[index]
        if callable(step) and not isinstance(step, (ModelResponse, BaseException)):
            step = step(request)
        if isinstance(step, BaseException):
            raise step
        if not isinstance(step, ModelResponse):
            raise ModelError(f"{self.name}: step {index + 1} is {type(step).__name__}")
        response = self._with_ids_and_usage(step, request)
        if self.stream_text and response.text:
            for start in range(0, len(response.text), 16):
                yield Delta("text", response.text[start : start + 16])
        if self.stream_text:
            for tool_call in response.tool_calls:
                yield Delta("tool_arguments", json.dumps(tool_call.arguments), tool_call.id)
        yield Final(response)

    def _with_ids_and_usage(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        update: dict[str, Any] = {}
        if not response.model:
            update["model"] = self.name
        if response.usage.requests == 0:
            prompt = self._estimate_prompt(request)
            output = self._estimator.text(response.text) + sum(
                self._estimator.json(c.arguments) for c in response.tool_calls
            )
            update["usage"] = Usage(input_tokens=prompt, output_tokens=output, requests=1)
        if response.tool_calls and not response.stop_reason.startswith("tool"):
            update["stop_reason"] = "tool_use"
        return response.model_copy(update=update) if update else response

    def _estimate_prompt(self, request: ModelRequest) -> int:
        estimator = self._estimator
        total = estimator.text(request.system_text())
        total += sum(
            estimator.json(spec.parameters) + estimator.text(spec.description)
            for spec in request.tools
        )
        for item in request.items:
            cost = self._item_cost.get(item.id)
            if cost is None:  # items are frozen: estimate each once, not every request
                cost = estimator.text(item.model_dump_json(exclude={"id", "created_at"}))
                self._item_cost[item.id] = cost
            total += cost
        if request.refreshed is not None:
            total += estimator.text(request.refreshed.text())
            total += sum(estimator.image(i.width, i.height) for i in request.refreshed.images)
        return total


def from_config(config: Any) -> ScriptedModel:
    """``provider: scripted`` with ``options.responses``: a list of
    ``{text: ..., tool: {name: ..., arguments: {...}}}`` replayed in order."""
    steps = config.options.get("responses")
    if not isinstance(steps, list) or not steps:
        raise ConfigError(
            "model.options.responses: a scripted model needs a non-empty list of responses",
            key="model.options.responses",
            value=steps,
        )
    responses: list[Step] = []
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise ConfigError(
                f"model.options.responses.{index}: expected a mapping, got {step!r}",
                key=f"model.options.responses.{index}",
                value=step,
            )
        tool = step.get("tool")
        calls = []
        if tool:
            calls.append(
                ToolCall(id=new_id("call"), name=tool["name"], arguments=tool.get("arguments", {}))
            )
        responses.append(ModelResponse(text=step.get("text", ""), tool_calls=calls))
    return ScriptedModel(responses, name=config.name, context_window=config.context_window)
