"""The console's shared state: what viewers are sent, and what the operator asks of a task.

The :class:`ConsoleHub` sits between two worlds. On one side the task's own thread (the
control script's, running ``run_stream()``) reads the operator's wishes through plain
callables: :meth:`ConsoleHub.stop_requested` is the task's ``should_cancel``,
:meth:`ConsoleHub.next_revision` its ``poll_replan``, :meth:`ConsoleHub.ask` the user
channel's question, :meth:`ConsoleHub.next_task` where a console-driven loop waits for the
next instruction. On the other side the web server's event loop sends every viewer the
same ordered list of messages (events and live-state snapshots) and takes the operator's
actions.

Nothing here depends on a browser being connected: the hooks read only this object, so a
page that closes leaves the task with working hooks (the terminal's cancel still works and
the run never waits for a viewer). Publishing never blocks the task: messages go into a
bounded buffer and each viewer reads it at its own pace.

Who may act (the web app has already checked the secret, :mod:`harness.console.access`):
any number of clients watch; the holders of the secret (browser sessions, scripts with the
bearer secret) may act. **Stop is never refused** to a holder, on any page, in any state,
and every stop is recorded with where it came from (:attr:`ConsoleHub.stops`). Start,
answer and revise belong to **one operator seat**: the first holder to connect takes it
when it is free, it stays with that holder through reloads and reconnects (it belongs to
the browser session, not to a connection), and it changes hands only by an explicit action
(another holder's "take over", or the holder's release).

What the hub hands out and takes in (messages, task requests, questions, stop records,
refusals) are the data types of :mod:`harness.console.hub_types`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from harness.console.hub_types import Message, Question, Refused, StopRecord, TaskRequest

__all__ = ["BUFFER", "ConsoleHub"]

logger = logging.getLogger(__name__)

BUFFER = 5000
"""Messages kept for viewers that connect late or fall behind (older ones are dropped;
the live state is always sent whole, so a late viewer still sees the present)."""

POLL_S = 0.05
"""How often a waiting question checks the task's cancel and its deadline."""

STOPS_KEPT = 50
"""Stop records kept (and shown); the log has every one."""

SERVING_S = 2.0
"""A loop that asked for a task less than this long ago still serves the page's Start."""


class ConsoleHub:
    """The console's state, shared by the task's thread and the web server's.

    Tasks started from the page are accepted only while a thread waits in
    :meth:`next_task` (``harness console`` does; a control script that starts its own
    tasks does not, and the page's Start is refused with a message).

    Args:
        redact: Applied to text that reaches viewers without passing the session's event
            redaction (the question as the model asked it, the scene Brief).
    """

    def __init__(self, *, redact: Callable[[str], str] = lambda text: text) -> None:
        self.redact = redact
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self._buffer: deque[Message] = deque(maxlen=BUFFER)
        self._state: dict[str, Any] = {}
        self._published: dict[str, Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._seat: str | None = None
        self._connections: dict[str, int] = {}
        self._holders: dict[str, str] = {}
        """Connection -> the secret holder it belongs to (viewers have none)."""
        self._stop = threading.Event()
        self.stops: list[StopRecord] = []
        self._stop_listeners: list[Callable[[], None]] = []
        self.stop_clicked_at: float | None = None
        self._revisions: deque[str] = deque()
        self._requests: deque[TaskRequest] = deque()
        self._starting = False
        """A task taken from the page is starting (its ``task_started`` is not out yet)."""
        self._stop_before_start = False
        self._waiting_for_tasks = 0
        self._last_poll: float | None = None
        self._task_id: str | None = None
        self._question: Question | None = None
        self._answer: str | None = None
        self._questions = itertools.count(1)

    # ================================================================== the task's side

    def stop_requested(self) -> bool:
        """The running task's ``should_cancel``: true once the operator pressed Stop."""
        return self._stop.is_set()

    def next_revision(self) -> str | None:
        """The running task's ``poll_replan``: the operator's next revision, if any."""
        with self._lock:
            return self._revisions.popleft() if self._revisions else None

    def next_task(self, timeout_s: float | None = None) -> TaskRequest | None:
        """Wait for the operator to start a task from the page (None after ``timeout_s``).

        While a thread waits here, or waited less than :data:`SERVING_S` ago (a loop that
        polls with a timeout), the page's Start is accepted; otherwise it is refused (the
        control script starts its own tasks). Polling sends viewers nothing new."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._lock:
            if self._starting and self._task_id is None:  # the last one never started
                self._starting = self._stop_before_start = False
                self._stop.clear()
            self._waiting_for_tasks += 1
            self._last_poll = time.monotonic()
            self._publish_state_locked()
            try:
                while not self._requests:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        return None
                    self._lock.wait(left)
                request = self._requests.popleft()
                self._starting = True
                self._publish_state_locked()
                return request
            finally:
                self._waiting_for_tasks -= 1
                self._last_poll = time.monotonic()

    def _serving(self) -> bool:
        if self._waiting_for_tasks:
            return True
        return self._last_poll is not None and time.monotonic() - self._last_poll < SERVING_S

    def task_began(self, task_id: str) -> None:
        """A top-level task started: Stop and revisions now apply to it (a Stop pressed
        while it was starting stays pressed)."""
        with self._lock:
            self._task_id = task_id
            if not self._stop_before_start:
                self._stop.clear()
                self.stop_clicked_at = None
            self._starting = self._stop_before_start = False
            self._revisions.clear()
            self._publish_state_locked()

    def task_ended(self, task_id: str) -> None:
        with self._lock:
            if self._task_id != task_id:
                return
            self._task_id = None
            self._stop.clear()
            self._revisions.clear()
            self._publish_state_locked()

    @property
    def task_id(self) -> str | None:
        return self._task_id

    def ask(self, question: str, *, timeout_s: float, cancelled: Callable[[], bool]) -> str | None:
        """Show ``question`` to the operator and wait for an answer (None on timeout or
        cancel). Called from the tool's thread."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            asked = Question(
                id=next(self._questions),
                text=self.redact(question),
                asked_at=time.time(),
                timeout_s=timeout_s,
            )
            self._question, self._answer = asked, None
            self._publish_state_locked()
            try:
                while self._answer is None:
                    left = deadline - time.monotonic()
                    if left <= 0 or cancelled():
                        return None
                    self._lock.wait(min(POLL_S, left))
                return self._answer
            finally:
                if self._question is asked:
                    self._question, self._answer = None, None
                    self._publish_state_locked()

    # ================================================================== the operator's side

    def connect(self, client: str, holder: str | None = None) -> str:
        """A page opened its stream (``holder``: the secret holder it belongs to, None for a
        viewer). A holder takes the operator seat when it is free. Returns the role:
        ``operator`` (holds the seat), ``standby`` (holds the secret; may stop, may take
        the seat over) or ``viewer``."""
        with self._lock:
            self._connections[client] = self._connections.get(client, 0) + 1
            if holder is not None:
                self._holders[client] = holder
                if self._seat is None:
                    self._seat = holder
                    logger.info("console: the operator seat goes to %s", holder)
            self._publish_state_locked()
            return self._role_locked(holder)

    def disconnect(self, client: str) -> None:
        """A page's stream closed. The seat stays with its holder (a reload or a network
        blip must not hand it to anyone) and the task is not touched: its hooks read this
        hub, not the page."""
        with self._lock:
            count = self._connections.get(client, 0) - 1
            if count > 0:
                self._connections[client] = count
                return
            self._connections.pop(client, None)
            self._holders.pop(client, None)
            self._publish_state_locked()

    def role(self, holder: str | None) -> str:
        with self._lock:
            return self._role_locked(holder)

    def _role_locked(self, holder: str | None) -> str:
        if holder is None:
            return "viewer"
        return "operator" if self._seat == holder else "standby"

    def claim(self, holder: str, *, take_over: bool = False) -> str:
        """Take the operator seat: free, or held by another holder and ``take_over`` (the
        explicit hand-over, recorded). Returns the new role."""
        with self._lock:
            if self._seat not in (None, holder):
                if not take_over:
                    raise Refused(
                        f"the operator seat is held by {self._seat}; take it over explicitly "
                        "(the 'take over' button) to move it to this page",
                        status=409,
                    )
                logger.warning(
                    "console: operator seat taken over from %s by %s", self._seat, holder
                )
                self._state["seat_changes"] = [
                    *self._state.get("seat_changes", [])[-9:],
                    {"at": time.time(), "from": self._seat, "to": holder},
                ]
            self._seat = holder
            self._publish_state_locked()
            return "operator"

    def release(self, holder: str) -> str:
        """Leave the seat free (only its holder may)."""
        with self._lock:
            if self._seat != holder:
                raise Refused("this page does not hold the operator seat", status=409)
            self._seat = None
            self._publish_state_locked()
            return "standby"

    def _operator(self, holder: str | None) -> None:
        if holder is None:
            raise Refused(
                "watching only: acting needs the console's secret (open the link it printed)",
                status=403,
            )
        if self._seat != holder:
            held = f"held by {self._seat}" if self._seat else "free"
            raise Refused(
                f"only the operator seat may start, answer or revise (the seat is {held}; "
                "take it over to act from this page); Stop works from any page with the secret",
                status=403,
            )

    def add_stop_listener(self, listener: Callable[[], Any]) -> None:
        """Called (from the web server's thread) at every Stop, right after the task's cancel
        is set, running or not: :func:`harness.console.attach` stops the robot there."""
        self._stop_listeners.append(listener)

    def request_stop(self, by: str, *, address: str = "", client: str = "") -> StopRecord:
        """Stop the running task. Never refused (the caller checked the secret); recorded
        with where it came from, whatever the state."""
        with self._lock:
            if self._task_id is None and self._requests:
                self._requests.clear()  # asked for, not taken yet: it never starts
                effect = "start cancelled"
            elif self._task_id is None and self._starting:
                effect = "stopping"  # taken, not started: it starts cancelled
                self._stop_before_start = True
                self.stop_clicked_at = time.time()
                self._stop.set()
            elif self._task_id is None:
                effect = "nothing running"
            elif self._stop.is_set():
                effect = "already stopping"
            else:
                effect = "stopping"
                self.stop_clicked_at = time.time()
                self._stop.set()
            record = StopRecord(
                at=time.time(),
                by=by,
                address=address,
                client=client,
                task_id=self._task_id,
                effect=effect,
            )
            self.stops = [*self.stops[-(STOPS_KEPT - 1) :], record]
            self._publish_state_locked()
        for listener in list(self._stop_listeners):  # every press: stopping twice is harmless
            try:
                listener()
            except Exception:
                logger.exception("a stop listener failed")
        logger.warning(
            "console: Stop from %s%s: %s%s",
            by,
            f" ({address})" if address else "",
            effect,
            f" task {record.task_id}" if record.task_id else "",
        )
        return record

    def note_stop(self, by: str) -> None:
        """Record a stop that did not come through the console (the terminal's Ctrl-C)."""
        with self._lock:
            record = StopRecord(at=time.time(), by=by, task_id=self._task_id, effect="stopping")
            self.stops = [*self.stops[-(STOPS_KEPT - 1) :], record]
            self._publish_state_locked()
        logger.warning("console: Stop from %s: task %s", by, record.task_id)

    def revise(self, holder: str | None, text: str) -> None:
        text = text.strip()
        with self._lock:
            self._operator(holder)
            if not text:
                raise Refused("the revision is empty", status=400)
            if self._task_id is None:
                raise Refused("no task is running; start one instead")
            self._revisions.append(text)
            self._publish_state_locked()

    def start(self, holder: str | None, request: TaskRequest) -> None:
        with self._lock:
            self._operator(holder)
            if self._task_id is not None or self._requests:
                raise Refused("a task is already running; stop it or wait for its end")
            if not self._serving():
                raise Refused(
                    "this console's control script starts its own tasks; it is not "
                    "waiting for one from the page"
                )
            self._requests.append(request)
            self._lock.notify_all()
            self._publish_state_locked()

    def answer(self, holder: str | None, question_id: int, text: str) -> None:
        with self._lock:
            self._operator(holder)
            if self._question is None or self._question.id != question_id:
                raise Refused("that question is no longer waiting for an answer")
            self._answer = text.strip()
            self._lock.notify_all()

    # ================================================================== what viewers read

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """The web server's event loop (viewers waiting for messages are woken there)."""
        self._loop = loop
        self._wakeup = asyncio.Event()

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._append_locked(kind, data)

    def update_state(self, **changes: Any) -> None:
        """Merge ``changes`` into the live state and send it to every viewer."""
        with self._lock:
            self._state.update(changes)
            self._publish_state_locked()

    def state(self) -> dict[str, Any]:
        with self._lock:
            return self._state_locked()

    def since(self, after: int) -> list[Message]:
        """Messages with an id above ``after``, oldest first (as many as are kept)."""
        with self._lock:
            if not self._buffer or self._buffer[-1].id <= after:
                return []
            first = self._buffer[0].id
            return list(itertools.islice(self._buffer, max(0, after + 1 - first), None))

    def last_id(self) -> int:
        with self._lock:
            return self._buffer[-1].id if self._buffer else 0

    async def wait(self, after: int, timeout_s: float) -> list[Message]:
        """Messages after ``after``; waits up to ``timeout_s`` for some (web server loop)."""
        wakeup = self._wakeup
        batch = self.since(after)
        if batch or wakeup is None:
            return batch
        try:
            await asyncio.wait_for(wakeup.wait(), timeout_s)
        except TimeoutError:
            return []
        return self.since(after)

    def _state_locked(self) -> dict[str, Any]:
        question = self._question
        return {
            **self._state,
            "task_id": self._task_id,
            "stop_requested": self._stop.is_set(),
            "revisions_pending": len(self._revisions),
            "accepts_tasks": self._serving() and not self._requests and self._task_id is None,
            "question": question.model_dump() if question is not None else None,
            "seat": self._seat,
            "operator_connected": self._seat is not None and self._seat in self._holders.values(),
            "viewers": len(self._connections),
            "stops": [stop.model_dump() for stop in self.stops[-10:]],
        }

    def _publish_state_locked(self) -> None:
        """Send the state if it changed (a loop polling :meth:`next_task` every half second
        must not fill the buffer with copies)."""
        state = self._state_locked()
        if state != self._published:
            self._published = state
            self._append_locked("state", state)

    def _append_locked(self, kind: str, data: dict[str, Any]) -> None:
        self._buffer.append(Message(id=next(self._ids), kind=kind, data=data))
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed since the check
                loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        wakeup, self._wakeup = self._wakeup, asyncio.Event()
        if wakeup is not None:
            wakeup.set()
