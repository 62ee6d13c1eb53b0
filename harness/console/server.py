"""Attaching the console to a Harness: the web server on its own thread, the task in yours.

::

    from harness.console import attach

    with attach(harness) as ui:                 # prints nothing
        print(ui.url)                           # a one-time link for the operator's browser
        for event in harness.run_stream(
            "put the red cube in the tray",
            should_cancel=ui.stop_requested,    # the page's Stop button
            poll_replan=ui.next_revision,       # the page's revisions
        ):
            ...

Stop sets the task's cancel and stops the robot at once (``Session.halt_robot``: the
driver's ``stop()``, which the Driver contract lets any thread call), so it is not
waiting for the loop to reach its next check. While attached, the console is the
session's user channel (``query_user`` questions are
answered in the page; the tool is offered even if the Harness was built without a
channel) and a listener of the session's events (the live view). ``run_stream()`` stays
the one loop and runs in the caller's thread; the server only reads what the session emits
and hands the loop the operator's wishes through the hooks above. A loop that takes its
tasks from the page waits in :meth:`AttachedConsole.next_task` (``harness console`` does).

Detaching (leaving the ``with``) stops the server and gives the session back its previous
user channel.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from harness.console.access import Access, check_binding
from harness.console.app import build_app
from harness.console.history import EvalProgress, RunHistory
from harness.console.hub import ConsoleHub
from harness.console.hub_types import TaskRequest
from harness.console.live import LiveView
from harness.errors import UsageError
from harness.runtime.builtins import query_user_tool

if TYPE_CHECKING:
    from harness.runtime.harness import Harness

__all__ = ["AttachedConsole", "ConsoleChannel", "attach"]

logger = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0


class ConsoleChannel:
    """The user channel of a session the console is attached to."""

    def __init__(self, hub: ConsoleHub) -> None:
        self.hub = hub

    def ask(self, question: str, *, timeout_s: float, cancelled: Callable[[], bool]) -> str | None:
        return self.hub.ask(question, timeout_s=timeout_s, cancelled=cancelled)

    def notify(self, message: str, level: str) -> None:
        pass  # the notification event that follows reaches every viewer


class AttachedConsole:
    """What :func:`attach` hands the control script: the hooks and the page's address."""

    def __init__(
        self, hub: ConsoleHub, live: LiveView, access: Access, history: RunHistory
    ) -> None:
        self.hub = hub
        self.live = live
        self.access = access
        self.history = history

    @property
    def url(self) -> str:
        """A new one-time link to the page for the operator's browser, at each read: opening
        it gives that browser a session (a cookie) and the secret's rights; then it is
        spent. Show it only to the operator (:attr:`address` is the bare page)."""
        return self.access.new_link()

    @property
    def address(self) -> str:
        """The page's bare address (no secret in it)."""
        return self.access.address

    @property
    def secret(self) -> str:
        """The console's secret, for scripts: ``Authorization: Bearer <secret>``."""
        assert self.access.token is not None
        return self.access.token

    def stop_requested(self) -> bool:
        """``should_cancel`` for ``run_stream()``: the operator pressed Stop."""
        return self.hub.stop_requested()

    def next_revision(self) -> str | None:
        """``poll_replan`` for ``run_stream()``: the operator's next revision, if any."""
        return self.hub.next_revision()

    def next_task(self, timeout_s: float | None = None) -> TaskRequest | None:
        """Wait for a task started from the page (None after ``timeout_s``)."""
        return self.hub.next_task(timeout_s)


class _Server:
    """uvicorn serving one app on an already bound socket, on a daemon thread."""

    def __init__(self, app: object, sock: socket.socket) -> None:
        import uvicorn

        config = uvicorn.Config(
            app,  # type: ignore[arg-type]
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=1,
        )
        self.server = uvicorn.Server(config)
        self.sock = sock
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, name="harness-console", daemon=True
        )

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the console's web server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5.0)
        self.sock.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"--host {host} --port {port}: cannot listen there ({exc})") from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


@contextlib.contextmanager
def attach(
    harness: Harness,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    viewers: bool = False,
    eval_folder: str | os.PathLike[str] | None = None,
) -> Iterator[AttachedConsole]:
    """Serve the operator console for ``harness``'s session while the block runs.

    ``port=0`` picks a free port (``ui.address`` says which). Acting always needs the
    console's secret: ``token`` (refused below about 128 bits,
    :func:`harness.console.access.check_token`) or a generated one; ``ui.url`` hands out
    one-time links that carry it to a browser. ``viewers=True`` lets clients without it
    watch (never act). ``eval_folder`` shows a ``harness eval`` output folder's progress.
    """
    session = harness.session
    check_binding(host, token)  # refuse a weak token before binding
    hub = ConsoleHub(redact=session.redactor.text)
    live = LiveView(hub, session)
    sock = _bind(host, port)
    access = Access(host=host, port=sock.getsockname()[1], token=token, viewers=viewers)
    store_folder = getattr(session.store, "folder", None)
    history = RunHistory(Path(store_folder) if store_folder is not None else None)
    app = build_app(
        hub=hub,
        live=live,
        access=access,
        history=history,
        evaluation=(
            EvalProgress(eval_folder, redact=session.redactor.text)
            if eval_folder is not None
            else None
        ),
    )
    server = _Server(app, sock)
    # Stop reaches the robot at once, whatever the loop is doing (an observation, the
    # evaluator's settle): the task's cancel is set first, then the driver is stopped from
    # this thread; the task ends through should_cancel as before.
    hub.add_stop_listener(session.halt_robot)
    previous_channel = session.user_channel
    added_query_tool = "query_user" not in session.tools
    session.add_listener(live)
    session.user_channel = ConsoleChannel(hub)
    if added_query_tool:
        session.tools.add(query_user_tool(session))
    try:
        server.start()
        logger.info("operator console at %s", access.address)
        yield AttachedConsole(hub, live, access, history)
    finally:
        server.stop()
        session.remove_listener(live)
        session.user_channel = previous_channel
        if added_query_tool:
            session.tools.remove("query_user")
