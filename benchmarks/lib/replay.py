"""Replaying a trace through the real Harness: model, tools, camera and scene from the trace.

Every part here is an ordinary implementation of a harness interface (a
:class:`~harness.providers.scripted.ScriptedModel` responder, :class:`~harness.tools.Tool`
objects, an observation provider, a scene provider, a safety gate), so the Harness runs
its real loop, context, compactor and run store over the trace. A :class:`TraceCursor`
keeps them on the same turn: the camera advances it (it is read first in every refresh),
and the model and tools check they agree with it, so a replay can never silently drift
out of step with the trace.

The same module gives the baselines what they need to see exactly what the Harness sends:
the Resident prefix (:func:`reference_prefix`) and each turn's refreshed block
(:class:`TraceFrames`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchmarks.lib.session_trace import PHYSICAL_TOOLS, Trace, TraceTurn
from embodiment.types import Observation, SafetyDecision
from harness.config import HarnessConfig, ObservationConfig
from harness.context import RESIDENT_ORDER
from harness.images import encode_frame
from harness.messages import (
    ImagePart,
    ModelRequest,
    ModelResponse,
    RefreshedBlock,
    SystemBlock,
    ToolCall,
    ToolSpec,
    Usage,
)
from harness.prompts import DEFAULT_SYSTEM_PROMPT
from harness.protocols import RunStore, SceneRefresh
from harness.providers.base import Model
from harness.providers.scripted import ScriptedModel
from harness.runtime.harness import Harness
from harness.tools import Tool, ToolOutput
from harness.world.observation import render_observation

__all__ = [
    "CAMERA",
    "PassThroughSafety",
    "ReferencePrefix",
    "ReplayDriftError",
    "TraceCamera",
    "TraceCursor",
    "TraceFrames",
    "TraceScene",
    "call_id_for",
    "decision_replay",
    "reference_prefix",
    "replay_harness",
    "trace_tools",
]

CAMERA = "front"


class ReplayDriftError(AssertionError):
    """The harness asked for something the trace does not have at this turn."""


@dataclass
class TraceCursor:
    """The trace turn the harness is on (1-based; 0 before the first refresh)."""

    trace: Trace
    turn: int = 0

    def advance(self) -> TraceTurn:
        if self.turn >= len(self.trace.turns):
            raise ReplayDriftError(
                f"the harness asked for turn {self.turn + 1} of a trace of "
                f"{len(self.trace.turns)} decisions"
            )
        self.turn += 1
        return self.current

    @property
    def current(self) -> TraceTurn:
        if self.turn < 1:
            raise ReplayDriftError("the trace cursor has not started (no observation yet)")
        return self.trace.at(self.turn)


def call_id_for(turn: int) -> str:
    """Deterministic tool-call ids, identical for every policy."""
    return f"call_{turn:04d}"


# --------------------------------------------------------------------------- harness parts


class TraceCamera:
    """Observation provider: the trace's robot state and camera frame for the next turn."""

    def __init__(self, cursor: TraceCursor) -> None:
        self.cursor = cursor

    def observe(self) -> Observation:
        turn = self.cursor.advance()
        return trace_observation(self.cursor.trace, turn)


def trace_observation(trace: Trace, turn: TraceTurn) -> Observation:
    return Observation(
        timestamp=turn.timestamp,
        images={CAMERA: trace.frame(turn.turn)},
        state=turn.state,
    )


class TraceScene:
    """Scene provider: the trace's Brief for the current turn (no query tools)."""

    def __init__(self, cursor: TraceCursor) -> None:
        self.cursor = cursor

    def refresh(self, observation: Observation | None, *, focus: str) -> SceneRefresh:
        return SceneRefresh(brief=self.cursor.current.brief)

    def tools(self) -> list[Tool]:
        return []

    def on_verdict(self, tool: str, arguments: Mapping[str, Any], verdict: Any) -> None:
        return None


class PassThroughSafety:
    """A safety gate that allows every call (the trace's motions are already recorded).

    Only for replay: physical tools still take the gate path (and its events), so the
    overhead measured includes it, but nothing real moves.
    """

    def check(
        self, tool: Tool, arguments: Mapping[str, Any], observation: Observation | None
    ) -> SafetyDecision:
        return SafetyDecision(outcome="allow", arguments=dict(arguments))


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _RefArgs(_Args):
    ref: str = Field(description="Object ref from the Brief.")


class _PlaceArgs(_Args):
    ref: str = Field(description="Object ref to place.")
    target: str = Field(description="Container or surface ref.")


class _MoveArgs(_Args):
    x: float
    y: float
    z: float


class _QueryArgs(_Args):
    query: str = Field(description="What to look for.")


class _NoArgs(_Args):
    pass


class _SecondsArgs(_Args):
    seconds: int = Field(ge=1, le=600)


class _SamplesArgs(_Args):
    samples: int = Field(ge=1, le=10_000)


class _LinesArgs(_Args):
    lines: int = Field(ge=1, le=10_000)


_TOOLS: dict[str, tuple[str, type[_Args]]] = {
    "pick": ("Grasp the object with the given ref.", _RefArgs),
    "place": ("Place the held object in or on a target.", _PlaceArgs),
    "move_to": ("Move the gripper to x, y, z (metres, world frame).", _MoveArgs),
    "look": ("Describe what the front camera sees now.", _NoArgs),
    "find_objects": ("Search the scene graph for objects.", _QueryArgs),
    "check_gripper": ("Report gripper state, width and temperature.", _NoArgs),
    "read_force_log": ("Read the wrist force/torque log for the last seconds.", _SecondsArgs),
    "dump_joint_states": ("Dump recent joint position samples.", _SamplesArgs),
    "read_system_log": ("Read the last lines of the controller log.", _LinesArgs),
}


def trace_tools(cursor: TraceCursor, *, driver: Any = None) -> list[Tool]:
    """Real tools whose results are the trace's outputs for the current turn.

    Each handler checks it was called with the trace's own arguments. Physical tools call
    ``driver.execute`` first when a driver is given (the overhead benchmark's null driver).
    """
    tools = []
    for name, (description, model) in _TOOLS.items():

        def handler(_name: str = name, **arguments: Any) -> ToolOutput:
            turn = cursor.current
            if turn.tool != _name or _normalised(turn.arguments) != _normalised(arguments):
                raise ReplayDriftError(
                    f"turn {turn.turn}: the trace calls {turn.tool}({turn.arguments}), "
                    f"the harness ran {_name}({arguments})"
                )
            if driver is not None and _name in PHYSICAL_TOOLS:
                driver.execute(_name, dict(arguments))
            if turn.is_error:
                return ToolOutput.error(turn.output, "trace_error")
            return ToolOutput(text=turn.output)

        tools.append(
            Tool(name, description, handler, input_model=model, physical=name in PHYSICAL_TOOLS)
        )
    return tools


def _normalised(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments normalised for comparison (floats stay floats, order ignored)."""
    return {key: arguments[key] for key in sorted(arguments)}


@dataclass
class DecisionStats:
    responses: int = 0


def decision_replay(
    cursor: TraceCursor, *, usage: Any = None, stats: DecisionStats | None = None
) -> ScriptedModel:
    """The trace's model: each request is answered with that turn's text and tool call.

    ``usage(request) -> int`` reports prompt tokens as the provider would (the benchmark
    meter), so the harness's calibration sees exact usage; without it, usage carries no
    prompt count and calibration is left alone.
    """
    stats = stats if stats is not None else DecisionStats()

    def respond(request: ModelRequest) -> ModelResponse:
        turn = cursor.current
        stats.responses += 1
        if stats.responses != turn.turn:
            raise ReplayDriftError(
                f"model request {stats.responses} arrived while the trace is at turn {turn.turn}"
            )
        prompt = usage(request) if usage is not None else 0
        calls = []
        if turn.tool is not None:
            calls.append(
                ToolCall(id=call_id_for(turn.turn), name=turn.tool, arguments=turn.arguments)
            )
        return ModelResponse(
            text=turn.text,
            tool_calls=calls,
            usage=Usage(input_tokens=prompt, output_tokens=len(turn.text) // 4 + 8, requests=1),
        )

    return ScriptedModel(responder=respond, name="trace-replay", context_window=None)


# --------------------------------------------------------------------------- what baselines see


@dataclass(frozen=True)
class ReferencePrefix:
    """The Resident system blocks and tool definitions the Harness sends for a trace."""

    system: list[SystemBlock]
    tools: list[ToolSpec]


def replay_harness(
    trace: Trace,
    config: HarnessConfig,
    cursor: TraceCursor,
    *,
    model: Model,
    compaction_model: Model | None = None,
    store: RunStore | None = None,
    driver: Any = None,
) -> Harness:
    """A Harness wired to replay ``trace``: its tools, Brief and safety gate, the camera
    (the trace's own, or ``driver``'s ``observe``) and the embodiment profile."""
    return Harness(
        config,
        model=model,
        compaction_model=compaction_model,
        tools=trace_tools(cursor, driver=driver),
        driver=driver,
        observation_provider=None if driver is not None else TraceCamera(cursor),
        scene=TraceScene(cursor),
        safety=PassThroughSafety(),
        store=store,
        profile_text=trace.profile_text,
    )


def reference_prefix(trace: Trace, config: HarnessConfig) -> ReferencePrefix:
    """Build the replay's Harness (not run) and read its prefix.

    The system blocks follow the Harness's Resident order (system prompt, embodiment
    profile); the tool definitions are the registry's own, built-ins included. A smoke
    test checks this equals the first request the Harness really sends.
    """
    model = ScriptedModel(responder=lambda request: ModelResponse(), context_window=None)
    harness = replay_harness(trace, config, TraceCursor(trace), model=model)
    try:
        blocks = {
            "system": config.context.system_prompt or DEFAULT_SYSTEM_PROMPT,
            "embodiment": trace.profile_text,
        }
        system = [
            SystemBlock(name=name, text=blocks[name]) for name in RESIDENT_ORDER if blocks.get(name)
        ]
        return ReferencePrefix(system=system, tools=harness.tools.specs())
    finally:
        harness.close()


@dataclass
class TraceFrames:
    """Each turn's refreshed block exactly as the Harness renders it (frames encoded once)."""

    trace: Trace
    observation: ObservationConfig = field(default_factory=ObservationConfig)
    _images: dict[int, ImagePart] = field(default_factory=dict)

    def image(self, turn: int) -> ImagePart:
        image = self._images.get(turn)
        if image is None:
            cfg = self.observation
            image = encode_frame(
                self.trace.frame(turn),
                label=CAMERA,
                fmt=cfg.image_format,
                quality=cfg.jpeg_quality,
                max_side=cfg.max_image_side,
            )
            self._images[turn] = image
        return image

    def refreshed(self, turn: TraceTurn) -> RefreshedBlock:
        observation = trace_observation(self.trace, turn)
        return RefreshedBlock(
            brief=turn.brief,
            observation=render_observation(observation),
            images=[self.image(turn.turn)],
        )
