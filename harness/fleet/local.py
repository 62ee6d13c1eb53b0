"""The default backend: K worker processes on this machine (no extra dependency).

Each worker is a process of its own that runs one episode at a time, each with its own
Harness, and sends the record back through its pipe. Workers are forked from a
``forkserver``: a clean interpreter with no threads that imported the harness once, so a
worker starts in milliseconds instead of the 0.65 s an interpreter takes to import it, and a
worker that died is replaced as fast. The coordinator itself is never forked (PyBullet and
the harness's threads are not safe to fork). Where the platform has no forkserver
(Windows), workers are fresh ``spawn`` interpreters.

A forked worker inherits the forkserver's environment, which is the coordinator's when the
forkserver started; each worker is therefore handed the coordinator's environment of the
moment it starts, as a spawned interpreter would have it (a key set between two evals of
one control script reaches the second eval's workers).

The coordinator hands an idle worker the next episode, notices a worker that died (its
process sentinel fires, its pipe closes) and gives that episode to a new worker
(:class:`~harness.fleet.dispatch.Dispatch`).

Ctrl-C reaches the workers too (a terminal signals the whole process group; the
coordinator forwards it otherwise): a worker cancels its task cooperatively, so a robot
is stopped, and reports the episode as interrupted. A worker whose coordinator died
(``kill -9``) cancels its task and exits on its own: it holds the reading end of a pipe
whose only writer is the coordinator, and the pipe's end of file is the coordinator's death
(its parent is the forkserver, so the parent's pid tells nothing).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.fleet.dispatch import Dispatch
from harness.fleet.episode import EpisodeRecord, EpisodeSpec, run_episode

__all__ = ["LocalBackend"]

logger = logging.getLogger("harness.fleet")

POLL_S = 0.25
STOP_GRACE_S = 30.0
"""How long a cancelled worker gets to stop its robot and report before it is killed."""

WORKER_PRELOAD = ("harness.fleet.worker_preload",)
"""What the forkserver imports once for every worker (see that module)."""


def worker_context() -> Any:
    """The multiprocessing context workers are started from (see the module docstring)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # Only takes effect if this process has not started its forkserver yet.
    context.set_forkserver_preload(list(WORKER_PRELOAD))
    return context


@dataclass
class _Worker:
    process: Any
    conn: Any
    lifeline: Any
    spec: EpisodeSpec | None = None
    name: str = ""
    started: float = field(default_factory=time.monotonic)


class LocalBackend:
    """Worker processes on this machine (see the module docstring)."""

    name = "local"

    def __init__(self, workers: int, runs: Path, *, log_file: Path | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.runs = runs
        self.log_file = log_file
        self._context = worker_context()

    def describe(self) -> str:
        return f"{self.workers} local worker process{'es' if self.workers != 1 else ''}"

    def connect(self, episodes: int) -> None:
        """Nothing to start before the run (the workers start with it)."""

    def run(self, dispatch: Dispatch) -> None:
        """Run every episode ``dispatch`` hands out; returns when it is done. On
        KeyboardInterrupt the workers are cancelled, their reports collected, and the
        interrupt is raised again."""
        pool: list[_Worker] = []
        try:
            for _ in range(min(self.workers, dispatch.total)):
                pool.append(self._start())
            self._loop(dispatch, pool)
        except KeyboardInterrupt:
            dispatch.stop()
            self._interrupt(dispatch, pool)
            raise
        finally:
            self._shutdown(pool)

    # ------------------------------------------------------------------ the loop

    def _loop(self, dispatch: Dispatch, pool: list[_Worker]) -> None:
        while not dispatch.done:
            # Replace idle workers that died while there is work for them.
            for index, worker in enumerate(pool):
                if worker.spec is None and not worker.process.is_alive() and dispatch.pending:
                    worker.conn.close()
                    worker.lifeline.close()
                    pool[index] = self._start()
            for worker in pool:
                if worker.spec is None and worker.process.is_alive():
                    spec = dispatch.take()
                    if spec is None:
                        break
                    worker.spec = spec
                    # If it died just now, its sentinel says so below.
                    with contextlib.suppress(OSError):
                        worker.conn.send(spec.model_dump_json())
            self._collect(dispatch, pool, timeout=POLL_S)

    def _collect(self, dispatch: Dispatch, pool: list[_Worker], *, timeout: float) -> None:
        busy = [w for w in pool if w.spec is not None]
        if not busy:
            time.sleep(min(timeout, 0.05))
            return
        waitables = [w.conn for w in busy] + [w.process.sentinel for w in busy]
        ready = set(multiprocessing.connection.wait(waitables, timeout=timeout))
        for worker in busy:
            if worker.conn not in ready and worker.process.sentinel not in ready:
                continue
            spec = worker.spec
            assert spec is not None
            try:
                if worker.conn.poll():
                    payload = worker.conn.recv()
                    worker.spec = None
                    dispatch.finished(EpisodeRecord.model_validate_json(payload))
                    continue
            except (EOFError, OSError):
                pass
            if not worker.process.is_alive():
                worker.process.join(timeout=1)
                worker.spec = None
                code = worker.process.exitcode
                dispatch.lost(spec, f"process {worker.name} exited with {code}", worker=worker.name)

    # ------------------------------------------------------------------ workers

    def _start(self) -> _Worker:
        ours, theirs = self._context.Pipe()
        watched, lifeline = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=worker_main,
            args=(theirs, watched, str(self.runs), str(self.log_file or ""), dict(os.environ)),
            name="harness-eval-worker",
            daemon=True,
        )
        process.start()
        theirs.close()
        watched.close()
        return _Worker(process=process, conn=ours, lifeline=lifeline, name=f"pid {process.pid}")

    def _interrupt(self, dispatch: Dispatch, pool: list[_Worker]) -> None:
        """Cancel every running episode and collect what the workers report."""
        for worker in pool:
            if worker.spec is not None and worker.process.is_alive():
                with contextlib.suppress(OSError):
                    os.kill(worker.process.pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        while dispatch.running and time.monotonic() < deadline:
            try:
                self._collect(dispatch, pool, timeout=POLL_S)
            except KeyboardInterrupt:
                break  # a second Ctrl-C: stop waiting
        for worker in pool:
            if worker.spec is not None:
                spec, worker.spec = worker.spec, None
                dispatch.lost(spec, "interrupted", worker=worker.name)

    def _shutdown(self, pool: list[_Worker]) -> None:
        for worker in pool:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in pool:
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=5)
            worker.conn.close()
            worker.lifeline.close()


# ====================================================================== the worker process


def worker_main(conn: Any, watched: Any, runs: str, log_file: str, environ: dict[str, str]) -> None:
    """A worker's life: run the episodes it is sent until it is sent None."""
    os.environ.clear()
    os.environ.update(environ)
    cancel = threading.Event()
    if log_file:
        logging.basicConfig(
            filename=log_file,
            level=logging.WARNING,
            format=f"%(asctime)s worker {os.getpid()} %(name)s %(levelname)s %(message)s",
        )
    signal.signal(signal.SIGINT, lambda *_: cancel.set())
    threading.Thread(target=_watch_coordinator, args=(watched, cancel), daemon=True).start()
    while not cancel.is_set():
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        spec = EpisodeSpec.model_validate_json(message)
        record = run_episode(spec, Path(runs) / spec.plan.slug, cancelled=cancel.is_set)
        try:
            conn.send(record.model_dump_json())
        except OSError:
            return


def _watch_coordinator(watched: Any, cancel: threading.Event) -> None:
    """An orphaned worker (its coordinator was killed) cancels its task and leaves.

    Nothing is ever written to the lifeline: ``recv`` returns only at its end of file,
    when the coordinator closed it or died."""
    with contextlib.suppress(EOFError, OSError):
        watched.recv()
    cancel.set()
