"""Helpers of the console tests: a scripted operator scenario, a task loop, HTTP and SSE.

The scenario model reads the running task's instruction (the newest instruction item) and
acts by its marker:

- ``[ask]``: asks ``query_user`` once, then reports the answer;
- ``[slow]``: its model call blocks (until released, at most ``SLOW_S``), so a Stop lands
  while the model call is in flight;
- ``[move]``: calls ``pick`` on the red cube (a motion of seconds in a real-time simulator),
  then reports;
- ``[delegate]``: hands a goal to a sub-agent (which reports at once, or, with ``[slow]``
  too, blocks in its own model call), then reports;
- ``[compact]``: scans (a tool with a long result) three times, then the provider refuses
  the prompt as too long, so the harness compacts; the summarizer's call blocks;
- ``[revise]``: waits (a short tool) until a revision is in its context, then reports it;
- anything else: reports at once.
"""

from __future__ import annotations

import contextlib
import http.client as http_client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from harness.console.server import AttachedConsole
from harness.errors import ContextOverflowError
from harness.messages import (
    InstructionItem,
    ModelRequest,
    ModelResponse,
    RevisionItem,
    ToolCall,
    ToolResultItem,
    new_id,
)
from harness.runtime.harness import Harness

SLOW_S = 20.0


def _call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=new_id("call"), name=name, arguments=arguments)])


class Scenario:
    """The scripted operator scenario (see the module docstring)."""

    def __init__(self) -> None:
        self.in_slow_call = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        self.overflowed = False

    def __call__(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if request.purpose == "summarize":  # summaries (memory, compaction): the same model
            if self.overflowed:  # the compaction after the overflow: block in it
                self.overflowed = False
                self.in_slow_call.set()
                self.release.wait(SLOW_S)
            return ModelResponse(text="summary")
        items = request.items
        start = max(
            (i for i, item in enumerate(items) if isinstance(item, InstructionItem)), default=0
        )
        task = items[start:]
        first = items[start] if items else None
        instruction = first.text if isinstance(first, InstructionItem) else ""
        results = [item for item in task if isinstance(item, ToolResultItem)]
        if "[ask]" in instruction:
            answered = [r for r in results if "The user answered:" in r.text]
            if not answered:
                return _call("query_user", question="Which cube should I move?")
            return ModelResponse(text=f"Reported: {answered[-1].text}")
        if "[delegate]" in instruction:
            if not results:
                slow = "[slow] " if "[slow]" in instruction else ""
                return _call("delegate", goal=f"{slow}count the cubes on the table")
            return ModelResponse(text="delegated")
        if "[slow]" in instruction:
            self.in_slow_call.set()
            self.release.wait(SLOW_S)
            return ModelResponse(text="slow call returned")
        if "[move]" in instruction:
            if not results:
                return _call("pick", ref="red_cube_1")
            return ModelResponse(text="moved")
        if "[compact]" in instruction:
            if len(results) == 3 and not self.overflowed:
                self.overflowed = True
                raise ContextOverflowError("prompt is too long")
            self.overflowed = False
            return _call("scan_area", area=str(len(results)))
        if "[revise]" in instruction:
            revisions = [item.text for item in task if isinstance(item, RevisionItem)]
            if revisions:
                return ModelResponse(text=f"revised: {revisions[-1]}")
            return _call("wait_a_moment")
        return ModelResponse(text=f"done: {instruction}")


def wait_a_moment() -> str:
    """Wait a tenth of a second (the scenario's idle step)."""
    time.sleep(0.1)
    return "waited"


def scan_area(area: str) -> str:
    """Scan an area of the table (a long reading).

    Args:
        area: Which area.
    """
    return f"area {area}: " + "x" * 400


class TaskLoop:
    """What ``harness console`` does in its main thread, on a thread of the test: take
    tasks from the page and run them through ``run_stream()`` with the page's hooks."""

    def __init__(
        self,
        harness: Harness,
        ui: AttachedConsole,
        *,
        terminal_cancel: Callable[[], bool] = lambda: False,
    ) -> None:
        self.harness = harness
        self.ui = ui
        self.terminal_cancel = terminal_cancel
        self.done: list[Any] = []
        self._quit = threading.Event()
        self.thread = threading.Thread(target=self._run, name="console-task-loop", daemon=True)

    def _run(self) -> None:
        while not self._quit.is_set():
            request = self.ui.next_task(0.2)
            if request is None:
                continue
            for event in self.harness.run_stream(
                request.instruction,
                max_turns=request.max_turns,
                should_cancel=lambda: self.terminal_cancel() or self.ui.stop_requested(),
                poll_replan=self.ui.next_revision,
            ):
                if event.type == "done":
                    self.done.append(event)

    def __enter__(self) -> TaskLoop:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._quit.set()
        self.thread.join(30)


def http(
    url: str,
    *,
    method: str = "GET",
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request; HTTP errors are answers, not exceptions."""
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def post_action(base: str, path: str, body: dict[str, Any], **headers: str) -> tuple[int, Any]:
    origin = base.rstrip("/")
    status, _, data = http(
        f"{origin}{path}",
        method="POST",
        body=body,
        headers={"Content-Type": "application/json", "Origin": origin, **headers},
    )
    try:
        return status, json.loads(data or b"{}")
    except ValueError:
        return status, {"error": data.decode(errors="replace")}


def exchange(link: str) -> tuple[int, dict[str, str]]:
    """Open a link without following its redirect: (status, lower-cased headers)."""
    parts = urlsplit(link)
    conn = http_client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", f"{parts.path}?{parts.query}")
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def browser_session(ui: Any) -> dict[str, str]:
    """What a browser that opened one of the console's one-time links sends: its session
    cookie (as a header for :func:`http`, :func:`post_action` and :func:`sse`)."""
    status, headers = exchange(ui.url)
    assert status == 303, (status, headers)
    return {"Cookie": headers["set-cookie"].split(";", 1)[0]}


@contextlib.contextmanager
def sse(
    url: str, *, timeout: float = 10.0, headers: dict[str, str] | None = None
) -> Iterator[Iterator[tuple[str, Any]]]:
    """A viewer's stream as (event name, data) pairs; closing it disconnects."""
    request = urllib.request.Request(url, headers=headers or {})
    response = urllib.request.urlopen(request, timeout=timeout)

    def messages() -> Iterator[tuple[str, Any]]:
        name, data = "message", []
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif not line and data:
                yield name, json.loads("\n".join(data))
                name, data = "message", []

    try:
        yield messages()
    finally:
        response.close()


def wait_for(check: Callable[[], Any], *, timeout: float = 10.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or check}")
