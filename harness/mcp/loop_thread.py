"""One event loop on one background thread, shared by all the MCP sessions of a manager.

Why this shape: the MCP SDK is asynchronous (anyio) and a session lives only as long as
the event loop and the task that opened it; the harness loop is synchronous and runs in
the caller's thread, and tool handlers run on short-lived worker threads. ``asyncio.run``
per call would start the server again for every call. One long-lived loop per manager
keeps every session open between calls, costs one thread whatever the number of
servers, and isolates servers from each other at the task level (a hung server only
blocks its own awaits). Worker threads submit coroutines through an anyio
``BlockingPortal`` and wait on the returned futures with their own deadlines; cancelling
such a future cancels the task, so an abandoned call never keeps running unseen.

The thread is a daemon so that a forgotten ``close()`` cannot hang interpreter exit (the
processes are still ended by the manager's exit finalizer); ``close()`` stops the portal,
lets every session shut down, and joins the thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """A running event loop on a daemon thread, reachable through :attr:`portal`."""

    def __init__(self, name: str, *, start_timeout_s: float = 10.0) -> None:
        ready: Future[BlockingPortal] = Future()

        async def serve() -> None:
            async with BlockingPortal() as portal:
                ready.set_result(portal)
                await portal.sleep_until_stopped()

        def main() -> None:
            try:
                anyio.run(serve, backend="asyncio")
            except BaseException as exc:  # reported to the constructor if it is still waiting
                if not ready.done():
                    ready.set_exception(exc)

        self._thread = threading.Thread(target=main, name=name, daemon=True)
        self._thread.start()
        self.portal = ready.result(timeout=start_timeout_s)
        self._stopped = False

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stopped

    def submit(self, func: Callable[..., Awaitable[T]], *args: Any) -> Future[T]:
        """Run ``func(*args)`` as a task of the loop; cancel the future to cancel it."""
        return self.portal.start_task_soon(func, *args)

    def call(self, func: Callable[..., Awaitable[T]], *args: Any, timeout_s: float) -> T:
        """Run ``func(*args)`` on the loop and wait at most ``timeout_s`` for it."""
        future = self.submit(func, *args)
        try:
            return future.result(timeout=timeout_s)
        except TimeoutError:
            future.cancel()
            raise

    def close(self, *, timeout_s: float) -> bool:
        """Stop the loop (cancelling what still runs) and join the thread.

        Returns False if the thread did not end within ``timeout_s`` (it is a daemon and
        will not hold up interpreter exit).
        """
        if not self._stopped:
            self._stopped = True
            if self._thread.is_alive():
                # The portal may already be gone; joining below tells the truth.
                with contextlib.suppress(Exception):
                    self.portal.start_task_soon(self.portal.stop, True).result(timeout=timeout_s)
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
