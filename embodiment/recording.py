"""Control steps: what a robot measured and what it was commanded, at its control rate.

One observation per tool call is what a model needs; a training dataset needs far more. A
policy learns from pairs (state, action) taken at a fixed rate: the state measured at
``t_k``, the command sent right after it and held until ``t_k + 1/rate``, and the camera
frames of the same instant. A driver that can provide these implements
:class:`ControlRecording` (an optional extension of the
:class:`~embodiment.types.Driver` protocol, like ``describe_motion``): it declares its
:class:`ControlLayout` (rate, the names of each state and action component, what they mean,
which cameras it can render at every step) and, once given a sink, hands every control step
to it as a :class:`ControlStep` while it moves. It composes a :class:`ControlRecorder`,
which checks each step against the layout, so a step that would pair a state with an action
of the wrong shape is a driver bug raised at once, never a silent row of a dataset.

The contract a driver keeps (what makes the pairs right):

- steps are ``1/rate_hz`` apart on the driver's own clock (simulated time for a simulator),
  one per control period, while a command runs;
- ``state`` is measured at the step's time, before its ``action`` takes effect;
- ``action`` is the command in force from the step's time until the next step's (a
  command never changes between two steps);
- ``frames`` were rendered at the step's time (only the cameras the sink asked for).

Nothing here imports the harness: the harness installs a sink that stores the steps in its
run store; the exporters turn them into LeRobot datasets and ROS 2 bags.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ControlLayout",
    "ControlRecorder",
    "ControlRecording",
    "ControlSink",
    "ControlStep",
]


class ControlLayout(BaseModel):
    """What a driver's control steps hold (the same for every step of a run)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rate_hz: float = Field(gt=0, allow_inf_nan=False)
    """Control steps per second of the driver's clock."""
    state_names: tuple[str, ...] = Field(min_length=1)
    """One name per state component (joint names, ``gripper_width``...)."""
    action_names: tuple[str, ...] = Field(min_length=1)
    """One name per action component."""
    state_description: str = Field(min_length=1)
    """What the state is, with units (``joint positions (rad)...``)."""
    action_description: str = Field(min_length=1)
    """What the action is, with units: a reader must be able to send it again."""
    cameras: tuple[str, ...] = ()
    """Cameras the driver can render at every control step."""

    @model_validator(mode="after")
    def _distinct_names(self) -> ControlLayout:
        for what, names in (
            ("state_names", self.state_names),
            ("action_names", self.action_names),
            ("cameras", self.cameras),
        ):
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                raise ValueError(f"{what}: {', '.join(repeated)} named more than once")
            if any(not n for n in names):
                raise ValueError(f"{what}: a name is empty")
        return self


@dataclass(frozen=True, slots=True)
class ControlStep:
    """One control step (see the module docstring for what pairs with what)."""

    time: float
    """Seconds on the driver's clock."""
    state: tuple[float, ...]
    action: tuple[float, ...]
    frames: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Camera name -> HxWx3 uint8 frame, for the cameras the sink asked for."""


ControlSink = Callable[[ControlStep], None]
"""Receives every control step, on the thread that moves the robot (keep it quick)."""


@runtime_checkable
class ControlRecording(Protocol):
    """A driver that hands out its control steps (optional extension of ``Driver``)."""

    def control_layout(self) -> ControlLayout: ...

    def record_control(self, sink: ControlSink | None, *, cameras: Sequence[str] = ()) -> None:
        """Send every control step to ``sink`` from now on, with frames of ``cameras`` (a
        subset of the layout's); ``None`` stops recording."""
        ...


class ControlRecorder:
    """The part of a driver that checks and forwards control steps (composed, not mixed in).

    A driver calls :meth:`attach` from its ``record_control`` and :meth:`emit` at every
    control step; :attr:`cameras` says which frames to render (none while no sink is
    attached, so a driver that is not recorded renders nothing extra).
    """

    def __init__(self, layout: ControlLayout) -> None:
        self.layout = layout
        self._sink: ControlSink | None = None
        self.cameras: tuple[str, ...] = ()
        self._last_time = -math.inf

    @property
    def active(self) -> bool:
        return self._sink is not None

    def attach(self, sink: ControlSink | None, cameras: Sequence[str] = ()) -> None:
        """Start (or, with None, stop) sending steps to ``sink``; ValueError for a camera
        the layout does not have."""
        unknown = [name for name in cameras if name not in self.layout.cameras]
        if unknown:
            known = ", ".join(self.layout.cameras) or "none"
            raise ValueError(f"cannot record camera {unknown[0]!r} (cameras: {known})")
        self._sink = sink
        self.cameras = tuple(dict.fromkeys(cameras)) if sink is not None else ()

    def emit(
        self,
        time: float,
        state: Sequence[float],
        action: Sequence[float],
        frames: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """Hand one step to the sink (nothing when none is attached). Raises ValueError when
        the step does not fit the layout or the driver's clock went backwards."""
        sink = self._sink
        if sink is None:
            return
        step = ControlStep(
            time=float(time),
            state=tuple(float(v) for v in state),
            action=tuple(float(v) for v in action),
            frames=dict(frames or {}),
        )
        self._check(step)
        self._last_time = step.time
        sink(step)

    def _check(self, step: ControlStep) -> None:
        layout = self.layout
        if len(step.state) != len(layout.state_names):
            raise ValueError(
                f"control step: {len(step.state)} state values for {len(layout.state_names)} names"
            )
        if len(step.action) != len(layout.action_names):
            raise ValueError(
                f"control step: {len(step.action)} action values for "
                f"{len(layout.action_names)} names"
            )
        if not all(math.isfinite(v) for v in (step.time, *step.state, *step.action)):
            raise ValueError("control step: a time, state or action value is not finite")
        if step.time < self._last_time:
            raise ValueError(
                f"control step at t={step.time} comes before the previous one "
                f"(t={self._last_time}): the driver's clock went backwards"
            )
        missing = [name for name in self.cameras if name not in step.frames]
        if missing:
            raise ValueError(f"control step: no frame from camera {missing[0]!r}")
