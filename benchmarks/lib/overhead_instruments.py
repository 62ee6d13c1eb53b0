"""The instruments of :mod:`benchmarks.turn_overhead`: what it times, what it stands in
for, and where it reads memory.

The benchmark measures the harness alone, so everything around it is either instant or
timed and subtracted: a model wrapper and a null driver that add their own time to a
stopwatch, an in-memory store that keeps image hashes and sizes but not the bytes (it
stands in for the on-disk store), and the process's RSS read from ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

from benchmarks.lib.replay import CAMERA, TraceCursor
from embodiment.types import ActionResult, Observation
from harness.messages import ImagePart, ModelRequest
from harness.protocols import RunStore
from harness.providers.base import Chunk
from harness.providers.scripted import ScriptedModel
from harness.store import MemoryRunStore

__all__ = [
    "FRAME_POOL",
    "STORES",
    "ImageCountingStore",
    "NullDriver",
    "Stopwatch",
    "TimedModel",
    "open_store",
    "peak_rss_bytes",
    "rss_bytes",
]


FRAME_POOL = 16
"""Distinct frames the null driver cycles through (every turn still encodes one)."""


class Stopwatch:
    """Accumulated wall and CPU seconds spent inside something (the model, the driver).

    CPU time (``time.process_time``, all threads of this process) is what the harness
    itself burns; unlike wall time it does not grow when other work on a shared machine
    takes the cores, so the growth ratios are read from it.
    """

    def __init__(self) -> None:
        self.total = 0.0
        self.cpu = 0.0

    def time(self, fn: Callable[[], Any]) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return fn()
        finally:
            self.total += time.perf_counter() - started
            self.cpu += time.process_time() - cpu


class TimedModel:
    """A model wrapper that adds the time spent inside ``stream()`` to a stopwatch.

    It also empties the scripted model's request log after each call: the log holds every
    request (and so every item list) for tests, which over thousands of turns would be
    memory of the test double, not of the harness.
    """

    def __init__(self, inner: ScriptedModel, stopwatch: Stopwatch) -> None:
        self.inner = inner
        self.stopwatch = stopwatch
        self.name = inner.name
        self.context_window = inner.context_window
        self.image_cost = inner.image_cost
        self.max_images = 0
        """The most images any one request carried (a frame per turn must not pile up)."""

    def stream(
        self, request: ModelRequest, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Chunk]:
        if request.refreshed is not None:
            self.max_images = max(self.max_images, len(request.refreshed.images))
        iterator = self.inner.stream(request, cancelled=cancelled)
        try:
            while True:
                try:
                    chunk = self.stopwatch.time(lambda: next(iterator))
                except StopIteration:
                    return
                yield chunk
        finally:
            self.inner.requests.clear()


class NullDriver:
    """A driver that does nothing, instantly; ``observe`` returns a frame every turn.

    It follows the trace cursor (so the replayed tools stay in step) and times itself, so
    the driver's share is subtracted from the harness's overhead.
    """

    def __init__(self, cursor: TraceCursor, stopwatch: Stopwatch) -> None:
        self.cursor = cursor
        self.stopwatch = stopwatch
        trace = cursor.trace
        self.frames = [trace.frame(turn) for turn in range(1, FRAME_POOL + 1)]
        self.stops = 0

    def connect(self) -> None:
        return None

    def observe(self) -> Observation:
        def observe() -> Observation:
            turn = self.cursor.advance()
            return Observation(
                timestamp=turn.timestamp,
                images={CAMERA: self.frames[turn.turn % FRAME_POOL]},
                state=turn.state,
            )

        return self.stopwatch.time(observe)

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        return self.stopwatch.time(lambda: ActionResult(ok=True, applied=dict(arguments)))

    def stop(self) -> None:
        self.stops += 1

    def disconnect(self) -> None:
        return None


class ImageCountingStore(MemoryRunStore):
    """An in-memory run store that records each image's hash and size but not its bytes.

    It stands in for the on-disk store when measuring memory: a store that keeps every
    frame in RAM grows by design, and that is not what this benchmark is asking.
    """

    def __init__(self) -> None:
        super().__init__()
        self.images_put = 0
        self.image_bytes = 0

    def put_image(self, image: ImagePart) -> None:
        self.images_put += 1
        self.image_bytes += len(image.data)


def rss_bytes() -> int:
    """Current resident set size of this process (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    """This process's own peak RSS: ``VmHWM`` (Linux), which starts afresh at exec, unlike
    ``ru_maxrss``, which a child started by a large parent (``python -m benchmarks``)
    inherits from it."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


STORES = ("memory", "sqlite")


@contextlib.contextmanager
def open_store(kind: str, *, synchronous: Literal["FULL", "NORMAL"] = "FULL") -> Iterator[RunStore]:
    """The run store a measurement writes to (see
    :attr:`benchmarks.lib.overhead_modes.OverheadOptions.store`)."""
    if kind == "memory":
        yield ImageCountingStore()
        return
    if kind != "sqlite":
        raise ValueError(f"unknown store {kind!r}; expected one of {list(STORES)}")
    try:
        from harness.store import SQLiteRunStore
    except ImportError as exc:
        raise ValueError(
            "--store sqlite: harness.store.SQLiteRunStore is not on this branch (issue #8)"
        ) from exc
    with tempfile.TemporaryDirectory(prefix="turn-overhead-store-") as folder:
        store = SQLiteRunStore(folder, synchronous=synchronous)
        try:
            yield store
        finally:
            store.close()
