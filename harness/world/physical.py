"""Physical tools generated from a driver's capabilities (the adapter between the
``embodiment`` package and harness :class:`~harness.tools.Tool` objects).

Each :class:`~embodiment.types.ActionSpec` becomes one tool: its pydantic argument model
is the tool's input model (so the model sees a typed JSON Schema), its safety declaration
becomes ``Tool.safety`` and the driver's ``describe_motion`` (when it has one) becomes
``Tool.motion`` (both read by the envelope before the driver sees the call), and the
driver's :class:`~embodiment.types.ActionResult` becomes the tool's output with
``applied`` recorded. Camera frames a driver returns (``data["images"]``) are encoded once
and shown to the next model call only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from embodiment.types import ActionResult, ActionSpec, Driver
from harness.config import ObservationConfig
from harness.images import encode_frame
from harness.tools import Tool, ToolCancelledError, ToolContext, ToolOutput, to_jsonable

__all__ = ["action_output", "physical_tools"]


def physical_tools(
    driver: Driver,
    *,
    observation: ObservationConfig | None = None,
    specs: Iterable[ActionSpec] | None = None,
) -> list[Tool]:
    """One tool per action the driver offers (or per spec in ``specs``)."""
    settings = observation or ObservationConfig()
    return [
        _tool_for(driver, spec, settings)
        for spec in (specs if specs is not None else driver.capabilities())
    ]


def _tool_for(driver: Driver, spec: ActionSpec, settings: ObservationConfig) -> Tool:
    def handler(ctx: ToolContext, **arguments: Any) -> ToolOutput:
        result = driver.execute(spec.name, to_jsonable(arguments))
        if result.interrupted and ctx.cancelled:
            raise ToolCancelledError(f"{spec.name} was stopped: the task was cancelled")
        return action_output(spec.name, result, settings)

    description = spec.description
    if spec.post_condition and spec.physical:
        description += " Checked afterwards: " + spec.post_condition.replace("{", "").replace(
            "}", ""
        )
    return Tool(
        spec.name,
        description,
        handler,
        input_model=spec.arguments,
        physical=spec.physical,
        timeout_s=spec.timeout_s,
        safety=spec.safety,
        motion=_motion_of(driver, spec),
        source=f"driver:{type(driver).__name__}",
    )


def _motion_of(driver: Driver, spec: ActionSpec) -> Callable[[Mapping[str, Any]], Any] | None:
    """The driver's description of this action's path, for the envelope (when it has one)."""
    describe = getattr(driver, "describe_motion", None)
    if not spec.physical or not callable(describe):
        return None

    def motion(arguments: Mapping[str, Any]) -> Any:
        return describe(spec.name, to_jsonable(dict(arguments)))

    return motion


def action_output(
    action: str, result: ActionResult, settings: ObservationConfig | None = None
) -> ToolOutput:
    """An :class:`ActionResult` as a tool output: text for the model, ``applied`` kept,
    frames encoded (JPEG by default) as transient images."""
    settings = settings or ObservationConfig()
    data = dict(result.data)
    frames = data.pop("images", None) or {}
    images = [
        encode_frame(
            np.asarray(frame),
            label=name,
            fmt=settings.image_format,
            quality=settings.jpeg_quality,
            max_side=settings.max_image_side,
        )
        for name, frame in frames.items()
    ]
    text = result.message or ("done" if result.ok else f"{action} failed")
    if data:
        text += "\n" + json.dumps(data, sort_keys=True, default=str)
    applied = dict(result.applied) or None
    if result.interrupted:
        return ToolOutput.error(
            f"{action} was interrupted: {text}", "interrupted", applied=applied, images=images
        )
    if not result.ok:
        return ToolOutput.error(text, "action_failed", applied=applied, images=images)
    return ToolOutput(text=text, applied=applied, images=images)
