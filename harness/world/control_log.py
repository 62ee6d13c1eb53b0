"""Recording a driver's control steps into the run store (``recording.control``).

A driver that offers :class:`~embodiment.recording.ControlRecording` hands every control
step to :class:`ControlLog` while a command runs, on the thread that moves the robot. The
log encodes each step's camera frames and stores them at once (by hash, like every other
frame: the run store keeps a frame once however often it appears), and keeps the numbers
until the command ends; then :meth:`ControlLog.take` turns them into one
:class:`~harness.events.ControlStepsEvent`, which the loop emits on the lane that sent the
command (so it is stored, streamed and exported like every other event).

Frames are stored at the camera's own size (``observation.max_image_side`` is for what the
model sees, not for what a dataset keeps).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from embodiment.recording import ControlRecording, ControlStep
from harness.config import RecordingConfig
from harness.events import ControlStepsEvent
from harness.images import encode_frame
from harness.protocols import RunStore

__all__ = ["ControlLog", "start_control_log"]

logger = logging.getLogger(__name__)

_NATIVE_SIZE = 1 << 30
"""``max_side`` that never downscales."""


def start_control_log(driver: Any, store: RunStore, config: RecordingConfig) -> ControlLog | None:
    """A log recording ``driver``'s control steps into ``store`` when ``config.control`` asks
    for it; None when it does not, or when the driver offers no control steps (a warning
    says so: a run meant for a dataset should not find out at export time)."""
    if not config.control or driver is None:
        return None
    if not isinstance(driver, ControlRecording):
        logger.warning(
            "recording.control: the driver %s offers no control steps (no control_layout() "
            "and record_control()); only one observation per turn is recorded",
            type(driver).__name__,
        )
        return None
    return ControlLog(driver, store, config)


class ControlLog:
    """A driver's control steps between two :meth:`take` calls (see the module docstring).

    Raises ValueError when ``config.cameras`` names a camera the driver cannot record.
    """

    def __init__(self, driver: ControlRecording, store: RunStore, config: RecordingConfig) -> None:
        self.driver = driver
        self.store = store
        self.config = config
        self.layout = driver.control_layout()
        cameras = self.layout.cameras if config.cameras is None else tuple(config.cameras)
        self._lock = threading.Lock()
        self._times: list[float] = []
        self._states: list[list[float]] = []
        self._actions: list[list[float]] = []
        self._frames: dict[str, list[str]] = {name: [] for name in cameras}
        self._started = 0.0
        self._dropped = 0
        self.dropped = 0
        """Steps that could not be recorded since the log started."""
        self.steps = 0
        """Control steps recorded since the log started."""
        self.closed = False
        driver.record_control(self._add, cameras=cameras)

    def _add(self, step: ControlStep) -> None:
        """The driver's sink: frames encoded and stored now, numbers kept for :meth:`take`.

        It never raises into the driver (a motion must not fail because the store could
        not keep a frame): a step it cannot keep is counted as dropped, and the command's
        event says so, so an exporter never joins the steps around the hole."""
        try:
            shas = {}
            for name in self._frames:
                image = encode_frame(
                    step.frames[name],
                    label=name,
                    fmt=self.config.image_format,
                    quality=self.config.jpeg_quality,
                    max_side=_NATIVE_SIZE,
                )
                self.store.put_image(image)
                shas[name] = image.sha256
        except Exception:
            with self._lock:
                self._dropped += 1
                first = self.dropped == 0
                self.dropped += 1
            if first:
                logger.warning("a control step could not be recorded", exc_info=True)
            return
        with self._lock:
            if not self._times:
                self._started = time.time()
            self._times.append(step.time)
            self._states.append(list(step.state))
            self._actions.append(list(step.action))
            for name, sha in shas.items():
                self._frames[name].append(sha)
            self.steps += 1

    def take(self, *, call_id: str, tool: str, segment: int = 1) -> ControlStepsEvent | None:
        """The steps recorded since the last call as one event (None when there were
        none: a refused command, an action that moved nothing)."""
        with self._lock:
            if not self._times and not self._dropped:
                return None
            event = ControlStepsEvent(
                call_id=call_id,
                tool=tool,
                segment=segment,
                layout=self.layout.model_dump(mode="json"),
                times=self._times,
                states=self._states,
                actions=self._actions,
                frames=self._frames,
                started=self._started,
                dropped=self._dropped,
            )
            self._times, self._states, self._actions = [], [], []
            self._dropped = 0
            self._frames = {name: [] for name in self._frames}
        return event

    def close(self) -> None:
        """Stop recording (idempotent); steps not taken yet are dropped."""
        if self.closed:
            return
        self.closed = True
        try:
            self.driver.record_control(None)
        except Exception:  # a driver already torn down has nothing left to record
            logger.debug("record_control(None) failed at close", exc_info=True)
